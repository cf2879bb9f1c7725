import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  loadOrCreateSigningKey,
  loadSigningKey,
  type ManifestJournal,
  type ManifestSigningKey,
} from "@auditpipe/ship";
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";
import { warnIfReadableKey } from "./file-modes.ts";

/** How long a stop waits for the open hour's manifest (SIGTERM must end within 10 s). */
const STOP_MANIFEST_MS = 2_500;

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
export function registerManifestMetrics(
  registry: Registry,
  journal: () => ManifestJournal | undefined,
): void {
  new Gauge({
    name: "auditpipe_manifest_conflict",
    help: "1 while the hour's manifest in the bucket is not this sidecar's (forged, or another writer): not continued from.",
    registers: [registry],
    collect() {
      this.set(journal()?.health().conflict ? 1 : 0);
    },
  });
  new Gauge({
    name: "auditpipe_manifest_self_check_findings",
    help: "Objects or manifests under this sidecar's keys in the open hours that it did not write, or that were altered or removed, by kind.",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.reset();
      const found = journal()?.health().selfCheck ?? [];
      for (const kind of ["foreign", "altered", "missing", "manifest"] as const)
        this.set({ kind }, found.filter((f) => f.kind === kind).length);
    },
  });
}

/** /readyz reasons from the manifest journal (no keys or locations: /readyz answers anyone; the log names them). */
export function manifestProblems(journal: ManifestJournal | undefined): string[] {
  const h = journal?.health();
  if (!h) return [];
  const problems: string[] = [];
  if (h.conflict)
    problems.push(
      "manifest conflict: the hour's manifest in the bucket is not this sidecar's; not continued from",
    );
  if (h.selfCheck.length > 0) {
    const byKind = new Map<string, number>();
    for (const f of h.selfCheck) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
    const counts = [...byKind].map(([kind, n]) => `${n} ${kind}`).join(", ");
    problems.push(`self-check: the bucket differs from what this sidecar uploaded (${counts})`);
  }
  return problems;
}

/**
 * At a stop, after the sink: the open hour's manifest (partial), so a stopped sidecar leaves a
 * verifiable archive, then the journal closed. Skipped when the store is failing and bounded
 * otherwise, so SIGTERM still ends in time; the journal keeps the hour and the next start writes it.
 */
export async function stopJournal(
  journal: ManifestJournal | undefined,
  logger: Logger,
  storeHealthy: boolean,
): Promise<void> {
  if (!journal) return;
  if (!storeHealthy) logger.warn("the store is failing: the open hour's manifest is left to the next start");
  const closing = (async () => {
    if (storeHealthy)
      await journal
        .closeOpen()
        .catch((error: unknown) =>
          logger.error(
            { err: { code: (error as { code?: string }).code, name: (error as Error).name } },
            "could not write the open hour's manifest at the stop; the next start writes it",
          ),
        );
    await journal.close();
  })().catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), STOP_MANIFEST_MS);
  });
  if ((await Promise.race([closing, late])) === "late")
    logger.error(
      { waitedMs: STOP_MANIFEST_MS },
      "the store is slow: stopping without the open hour's manifest",
    );
  clearTimeout(timer);
}
