import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  loadOrCreateSigningKey,
  loadSigningKey,
  type ManifestHealth,
  type ManifestSigningKey,
} from "@auditpipe/ship";
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";
import { warnIfReadableKey } from "./file-modes.ts";

/** The key that signs the manifests: the configured file, or one kept (and created) in the state dir. */
export async function manifestSigningKey(config: RunConfig, logger: Logger): Promise<ManifestSigningKey> {
  if (config.manifestKey) {
    const key = await loadSigningKey(config.manifestKey).catch((error: unknown) => {
      throw new UsageError(`run: --manifest-key (AUDITPIPE_MANIFEST_KEY) ${(error as Error).message}`);
    });
    warnIfReadableKey(config.manifestKey, "--manifest-key", logger);
    return key;
  }
  const path = join(config.state, "manifests", "manifest-key.pem");
  await mkdir(dirname(path), { recursive: true });
  const { key, created } = await loadOrCreateSigningKey(path);
  if (created)
    logger.info(
      { keyId: key.keyId, publicKey: `${path}.pub` },
      "created a manifest signing key: give its public key to whoever verifies the archive (verify --public-key)",
    );
  return key;
}

/** The chain's gauges: a conflict, and what the self-check found by kind. */
export function registerManifestMetrics(registry: Registry, health: () => ManifestHealth | undefined): void {
  new Gauge({
    name: "auditpipe_manifest_conflict",
    help: "1 while the hour's manifest in the bucket is not this sidecar's (forged, or another writer): not continued from.",
    registers: [registry],
    collect() {
      this.set(health()?.conflict ? 1 : 0);
    },
  });
  new Gauge({
    name: "auditpipe_manifest_self_check_findings",
    help: "Objects or manifests under this sidecar's keys in the open hours that it did not write, or that were altered or removed, by kind.",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.reset();
      const found = health()?.selfCheck ?? [];
      for (const kind of ["foreign", "altered", "missing", "manifest"] as const)
        this.set({ kind }, found.filter((f) => f.kind === kind).length);
    },
  });
}
