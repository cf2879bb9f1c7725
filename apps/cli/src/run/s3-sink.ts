import { join } from "node:path";
import { ManifestJournal, S3Sink, sinkErrorReason } from "@auditpipe/ship";
import { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { RunConfig } from "./config.ts";
import { manifestProblems, manifestSigningKey, registerManifestMetrics, stopJournal } from "./manifests.ts";
import type { ConfiguredSink } from "./sinks.ts";

/**
 * The S3 sink with its spool and manifest journal. A module of its own, imported only when the
 * sink is `s3://`: a local-directory sidecar never loads the AWS SDK.
 */
export async function createS3Sink(
  config: RunConfig,
  s3: { bucket: string; prefix: string },
  logger: Logger,
): Promise<ConfiguredSink> {
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
