import type { FileSource } from "@auditpipe/tail";
import type { SidecarCompaction } from "./compaction.ts";
import type { PipelineTap } from "./pipeline-tap.ts";
import type { ConfiguredSink } from "./sinks.ts";
import type { StateLock } from "./state-lock.ts";
import type { SyslogIntake } from "./syslog-intake.ts";
import type { WorkloadSampler } from "./workload-sampler.ts";

/** How long shutdown waits for the sink; SIGTERM must end within 10 s. */
const SHUTDOWN_SINK_MS = 7_000;
/**
 * The whole stop, the chain's close record included, within this (run.ts exits 1 at 9.5 s): the
 * close record gets what the sources left of it, so a slow disk or store still writes one.
 */
const SHUTDOWN_BUDGET_MS = 9_000;
/** Kept for what follows the sink: the sampler, the API, the state lock. */
const AFTER_SINK_MS = 400;
/**
 * How long shutdown waits for a sink that is failing: no acknowledgement is coming, and the S3
 * sink spools a batch before its first upload attempt, so waiting keeps nothing safer.
 */
const SHUTDOWN_FAILING_SINK_MS = 1_000;

/** What a running sidecar holds, in the order it is let go. */
export interface RunningSidecar {
  timers: NodeJS.Timeout[];
  files: FileSource | undefined;
  syslog: SyslogIntake | undefined;
  tap: PipelineTap;
  sink: ConfiguredSink;
  sampler: WorkloadSampler | undefined;
  /** The API server (Fastify). */
  api: { close(): Promise<unknown> };
  lock: StateLock;
  /** The sidecar's compaction (S3 sinks): stopped first, while the manifest journal is open. */
  compaction: SidecarCompaction | undefined;
}

/**
 * Stops reading, waits (bounded) for the sink to acknowledge what was read, closes the sink (the
 * S3 archive writes the open hour's manifest), the sampler and the API, and releases the state
 * directory. What is not acknowledged by then is read again at the next start (syslog from its journal).
 */
export async function shutdownSidecar(s: RunningSidecar): Promise<void> {
  const deadline = Date.now() + SHUTDOWN_BUDGET_MS;
  for (const timer of s.timers) clearInterval(timer);
  await s.compaction?.stop();
  const failing = s.tap.sinkWrites.failing || s.sink.unhealthy() !== undefined;
  const waitMs = failing ? SHUTDOWN_FAILING_SINK_MS : SHUTDOWN_SINK_MS;
  await Promise.all([s.files?.stop(waitMs), s.syslog?.stop(waitMs)]);
  const left = deadline - Date.now() - AFTER_SINK_MS;
  await s.sink.close(Math.max(0, left));
  await s.sampler?.stop();
  await s.api.close();
  await s.lock.release();
}
