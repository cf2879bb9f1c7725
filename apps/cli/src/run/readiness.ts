import type { PipelineTap } from "./pipeline-tap.ts";
import type { ConfiguredSink } from "./sinks.ts";
import type { SyslogIntake } from "./syslog-intake.ts";

/** What /readyz looks at. Reasons name no path, key or bucket: anyone may read /readyz. */
export interface ReadinessInputs {
  stopping: () => boolean;
  tap: PipelineTap;
  sink: ConfiguredSink;
  syslog: () => SyslogIntake | undefined;
  /** The sidecar's compaction failing past its bound, or undefined. */
  compaction?: () => string | undefined;
}

/** /readyz: ready only when the sidecar can do its job, else every reason it cannot. */
export function sidecarReadiness(inputs: ReadinessInputs): () => { ready: boolean; reasons: string[] } {
  const { tap, sink } = inputs;
  return () => {
    const reasons: string[] = [];
    if (inputs.stopping()) reasons.push("shutting down");
    reasons.push(...tap.sourceHealth.reasons());
    const malformed = tap.malformedInput.reason();
    if (malformed) reasons.push(malformed);
    const journalProblem = inputs.syslog()?.problem();
    if (journalProblem) reasons.push(journalProblem);
    const sinkProblem = sink.unhealthy();
    if (sinkProblem) reasons.push(`${sinkProblem}; data is kept and retried`);
    else if (tap.sinkWrites.failing)
      reasons.push(
        `sink ${sink.sink.name} is failing (${tap.sinkWrites.lastError}); data is kept and retried`,
      );
    const compaction = inputs.compaction?.();
    if (compaction) reasons.push(compaction);
    return { ready: reasons.length === 0, reasons };
  };
}
