import { join } from "node:path";
import {
  LocalDirSink,
  ManifestJournal,
  type RedactionMode,
  S3Sink,
  type Sink,
  sinkErrorReason,
} from "@auditpipe/ship";
import { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";
import { manifestProblems, manifestSigningKey, registerManifestMetrics, stopJournal } from "./manifests.ts";

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

  const key = await manifestSigningKey(config, logger);
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
  /** Ends the opener's wait between attempts: close() must not sit out a backoff of up to 30 s. */
  let wakeOpener: (() => void) | undefined;
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
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(30_000, 1_000 * attempt));
          wakeOpener = () => {
            clearTimeout(timer);
            resolve();
          };
        });
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
      // The reason, never the message: /readyz is unauthenticated and the message names the
      // bucket, endpoint or spool path (the logs carry it).
      const problems =
        h.state === "ok" ? [] : [`sink s3 ${h.state}: ${h.code} (${sinkErrorReason(h.code ?? "")})`];
      problems.push(...manifestProblems(opened));
      return problems.length === 0 ? undefined : problems.join("; ");
    },
    spoolBytes: () => sink.spoolBytes(),
    registerMetrics: (registry) => registerManifestMetrics(registry, () => opened),
    async close() {
      closed = true;
      wakeOpener?.();
      const healthy = sink.health().state === "ok";
      await sink.close();
      // The open hour's manifest: bounded, and not tried while the store is failing.
      await stopJournal(opened, logger, healthy);
      await journalOpening;
      client.destroy();
    },
  };
}
