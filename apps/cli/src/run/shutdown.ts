import type { FileSource } from "@auditpipe/tail";
import type { PipelineTap } from "./pipeline-tap.ts";
import type { ConfiguredSink } from "./sinks.ts";
import type { StateLock } from "./state-lock.ts";
import type { SyslogIntake } from "./syslog-intake.ts";
import type { WorkloadSampler } from "./workload-sampler.ts";

/** How long shutdown waits for the sink; SIGTERM must end within 10 s. */
const SHUTDOWN_SINK_MS = 7_000;
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
}

/**
 * Stops reading, waits (bounded) for the sink to acknowledge what was read, closes the sink (the
 * S3 archive writes the open hour's manifest), the sampler and the API, and releases the state
 * directory. What is not acknowledged by then is read again at the next start (syslog from its journal).
 */
export async function shutdownSidecar(s: RunningSidecar): Promise<void> {
  for (const timer of s.timers) clearInterval(timer);
  const failing = s.tap.sinkWrites.failing || s.sink.unhealthy() !== undefined;
  const waitMs = failing ? SHUTDOWN_FAILING_SINK_MS : SHUTDOWN_SINK_MS;
  await Promise.all([s.files?.stop(waitMs), s.syslog?.stop(waitMs)]);
  await s.sink.close();
  await s.sampler?.stop();
  await s.api.close();
  await s.lock.release();
}
