import { join } from "node:path";
import { S3_SINK_NAME, S3Archive } from "@auditpipe/ship";
import type { Logger } from "pino";
import { VERSION } from "../version.ts";
import type { RunConfig } from "./config.ts";
import { manifestSigningKey, registerManifestMetrics } from "./manifests.ts";
import type { ConfiguredSink, SinkEvents } from "./sinks.ts";

/**
 * The S3 archive (`@auditpipe/ship`'s S3Archive: spool, uploads, manifest journal) as the
 * sidecar configures it. A module of its own, imported only when the sink is `s3://`: a
 * local-directory sidecar never loads the AWS SDK.
 */
export async function createS3Sink(
  config: RunConfig,
  s3: { bucket: string; prefix: string },
  logger: Logger,
  events: SinkEvents,
): Promise<ConfiguredSink> {
  const key = await manifestSigningKey(config, logger);
  logger.info({ keyId: key.keyId }, "manifests are signed");
  const archive = await S3Archive.open({
    bucket: s3.bucket,
    prefix: s3.prefix,
    ...(config.s3Region ? { region: config.s3Region } : {}),
    ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {}),
    forcePathStyle: config.s3ForcePathStyle,
    ...(config.host ? { host: config.host } : {}),
    compression: config.compression,
    spoolDir: config.spool ?? join(config.state, "spool"),
    spoolMaxBytes: config.spoolMaxBytes,
    ...(config.objectLockMode
      ? { objectLock: { mode: config.objectLockMode, days: config.objectLockDays } }
      : {}),
    manifestDir: join(config.state, "manifests"),
    signingKey: key,
    selfCheckIntervalMs: config.selfCheckMs,
    version: VERSION,
    // Each failed attempt counts at once (metrics, /v1/volume), not after the 60 s write budget.
    onAttemptFailed: (error) => events.attemptFailed(S3_SINK_NAME, error),
    logger,
  });
  const sink = archive.sink;
  logger.info(
    { bucket: s3.bucket, prefix: s3.prefix, host: sink.options.host, compression: config.compression },
    "shipping to S3",
  );
  return {
    sink,
    unhealthy() {
      const problems = archive.problems();
      return problems.length === 0 ? undefined : problems.join("; ");
    },
    spoolBytes: () => sink.spoolBytes(),
    registerMetrics: (registry) => registerManifestMetrics(registry, () => archive.manifestHealth()),
    coverage: archive,
    countsAttempts: true,
    close: (budgetMs) => archive.close(budgetMs === undefined ? {} : { manifestMs: budgetMs }),
    compaction: {
      prefix: sink.options.prefix,
      host: sink.options.host,
      record: async (file) => {
        const journal = archive.journal();
        if (!journal) throw new Error("the manifest journal is not open yet");
        await journal.recordCompaction(file);
      },
      announce: async (file) => {
        const journal = archive.journal();
        if (!journal) throw new Error("the manifest journal is not open yet");
        await journal.announceCompaction(file);
      },
    },
  };
}
