import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  LocalDirSink,
  loadOrCreateSigningKey,
  loadSigningKey,
  ManifestJournal,
  type ManifestSigningKey,
  type RedactionMode,
  S3Sink,
  type Sink,
} from "@auditpipe/ship";
import { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";

/** The sink the sidecar writes to, with what the sidecar needs around it. */
export interface ConfiguredSink {
  sink: Sink;
  /** Why the sink is not healthy, or undefined when it is. */
  unhealthy(): string | undefined;
  /** For metrics: bytes waiting in the spool (0 for sinks without one). */
  spoolBytes(): number;
  /** Adds the sink's own metrics (the manifest chain's) to the registry. */
  registerMetrics(registry: Registry): void;
  close(): Promise<void>;
}

/** How long a stop waits for the open hour's manifest (SIGTERM must end within 10 s). */
const STOP_MANIFEST_MS = 2_500;

/** The key that signs the manifests: the configured file, or one kept (and created) in the state dir. */
async function signingKey(config: RunConfig, logger: Logger): Promise<ManifestSigningKey> {
  if (config.manifestKey)
    return loadSigningKey(config.manifestKey).catch((error: unknown) => {
      throw new UsageError(`run: --manifest-key (AUDITPIPE_MANIFEST_KEY) ${(error as Error).message}`);
    });
  const path = join(config.state, "manifests", "manifest-key.pem");
  await mkdir(dirname(path), { recursive: true });
  const { key, created } = await loadOrCreateSigningKey(path);
  if (created)
    logger.warn(
      { keyId: key.keyId, publicKey: `${path}.pub` },
      "created a manifest signing key: give its public key to whoever verifies the archive (verify --public-key)",
    );
  return key;
}

/** `s3://bucket/prefix` → bucket and prefix; undefined for anything else (a local directory). */
export function parseS3Url(sink: string): { bucket: string; prefix: string } | undefined {
  if (!sink.startsWith("s3://")) return undefined;
  const rest = sink.slice("s3://".length);
  const slash = rest.indexOf("/");
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? "" : rest.slice(slash + 1).replace(/^\/+|\/+$/g, "");
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new UsageError(
      `run: --sink ${sink}: "${bucket}" is not a valid bucket name (expected s3://bucket/prefix)`,
    );
  }
  return { bucket, prefix };
}

/**
 * What `--redact` asks for. Redaction happens where records are built, before they are encoded:
 * the sources and the meter see (and count) the original records; what is stored has literals
 * and/or parameter values replaced, and says so. Undefined when nothing is redacted.
 */
export function redactionMode(config: RunConfig): RedactionMode | undefined {
  const mode: RedactionMode = {
    literals: config.redact.includes("literals"),
    parameters: config.redact.includes("parameters"),
  };
  return mode.literals || mode.parameters ? mode : undefined;
}

/** Builds the configured sink: a local directory, or S3 with its spool and manifest journal. */
export async function createSink(config: RunConfig, logger: Logger): Promise<ConfiguredSink> {
  const s3 = parseS3Url(config.sink);
  if (!s3) {
    const sink = new LocalDirSink({ dir: config.sink });
    return {
      sink,
      unhealthy: () => undefined,
      spoolBytes: () => 0,
      registerMetrics: () => {},
      close: () => sink.close(),
    };
  }

  const key = await signingKey(config, logger);
  logger.info({ keyId: key.keyId }, "manifests are signed");
  const region = config.s3Region ?? process.env.AWS_REGION ?? (config.s3Endpoint ? "us-east-1" : undefined);
  const host = config.host;
  // The journal opens in the background: when the store is down at start-up, the sidecar still
  // starts (and spools); uploads acknowledged meanwhile wait for the journal before they resolve.
  let resolveJournal: (j: ManifestJournal) => void = () => {};
  const journalReady = new Promise<ManifestJournal>((resolve) => {
    resolveJournal = resolve;
  });
  const sink = new S3Sink({
    bucket: s3.bucket,
    prefix: s3.prefix,
    ...(region ? { region } : {}),
    ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {}),
    forcePathStyle: config.s3ForcePathStyle,
    ...(host ? { host } : {}),
    compression: config.compression,
    spoolDir: config.spool ?? join(config.state, "spool"),
    spoolMaxBytes: config.spoolMaxBytes,
    ...(config.objectLockMode
      ? { objectLock: { mode: config.objectLockMode, days: config.objectLockDays } }
      : {}),
    // Journaled (fsynced) before the write resolves: a crash never loses an object's manifest line.
    onUploaded: async (object) => (await journalReady).record(object),
    logger: logger.child({ component: "s3" }),
  });
  // The journal's client: same store, same settings; manifests go under <prefix>/_manifests/<host>/.
  const client = new S3Client({
    ...(region ? { region } : {}),
    ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {}),
    forcePathStyle: config.s3ForcePathStyle,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000, throwOnRequestTimeout: true },
  });
  let closed = false;
  let opened: ManifestJournal | undefined;
  const openJournal = async (): Promise<void> => {
    for (let attempt = 1; !closed; attempt++) {
      try {
        opened = await ManifestJournal.open({
          client,
          bucket: s3.bucket,
          prefix: s3.prefix,
          host: sink.options.host,
          stateDir: join(config.state, "manifests"),
          signingKey: key,
          selfCheckIntervalMs: config.selfCheckMs,
          logger: logger.child({ component: "manifest" }),
        });
        opened.startTimer();
        resolveJournal(opened);
        return;
      } catch (error) {
        logger.warn(
          { attempt, err: { code: (error as { code?: string }).code, name: (error as Error).name } },
          "cannot open the manifest journal yet; retrying",
        );
        await new Promise((r) => setTimeout(r, Math.min(30_000, 1_000 * attempt)));
      }
    }
  };
  const journalOpening = openJournal();
  await sink.start(); // uploads what an earlier run left in the spool, in the background
  logger.info(
    { bucket: s3.bucket, prefix: s3.prefix, host: sink.options.host, compression: config.compression },
    "shipping to S3",
  );
  return {
    sink,
    unhealthy() {
      const h = sink.health();
      const problems =
        h.state === "ok" ? [] : [`sink s3 ${h.state}: ${h.code ?? ""} ${h.message ?? ""}`.trim()];
      problems.push(...manifestProblems(opened));
      return problems.length === 0 ? undefined : problems.join("; ");
    },
    spoolBytes: () => sink.spoolBytes(),
    registerMetrics(registry) {
      new Gauge({
        name: "auditpipe_manifest_conflict",
        help: "1 while the hour's manifest in the bucket is not this sidecar's (forged, or another writer): not continued from.",
        registers: [registry],
        collect() {
          this.set(opened?.health().conflict ? 1 : 0);
        },
      });
      new Gauge({
        name: "auditpipe_manifest_self_check_findings",
        help: "Objects or manifests under this sidecar's keys in the open hours that it did not write, or that were altered or removed, by kind.",
        labelNames: ["kind"],
        registers: [registry],
        collect() {
          this.reset();
          for (const kind of ["foreign", "altered", "missing", "manifest"] as const)
            this.set({ kind }, opened?.health().selfCheck.filter((f) => f.kind === kind).length ?? 0);
        },
      });
    },
    async close() {
      closed = true;
      await sink.close();
      // A stopped sidecar leaves a verifiable archive: the open hour's manifest, marked partial.
      // Bounded, so SIGTERM still ends in time with the store down (the next start writes it).
      const journal = opened;
      const closing = (async () => {
        await journal
          ?.closeOpen()
          .catch((error: unknown) =>
            logger.error(
              { err: { code: (error as { code?: string }).code, name: (error as Error).name } },
              "could not write the open hour's manifest at the stop; the next start writes it",
            ),
          );
        await journal?.close();
      })();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), STOP_MANIFEST_MS);
      });
      if ((await Promise.race([closing.catch(() => undefined), late])) === "late")
        logger.error(
          { waitedMs: STOP_MANIFEST_MS },
          "the store is slow: stopping without the open hour's manifest",
        );
      clearTimeout(timer);
      await journalOpening;
      client.destroy();
    },
  };
}

/** /readyz reasons from the manifest journal: a conflict, or what the self-check found. */
function manifestProblems(journal: ManifestJournal | undefined): string[] {
  const h = journal?.health();
  if (!h) return [];
  const problems: string[] = [];
  if (h.conflict)
    problems.push(`manifest conflict: ${h.conflict.key} is not this sidecar's; not continued from`);
  if (h.selfCheck.length > 0) {
    const byKind = new Map<string, number>();
    for (const f of h.selfCheck) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
    const counts = [...byKind].map(([kind, n]) => `${n} ${kind}`).join(", ");
    problems.push(`self-check: the bucket holds what this sidecar did not upload (${counts})`);
  }
  return problems;
}
