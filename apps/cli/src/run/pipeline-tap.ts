import { AdviceTally, sampledStatement } from "@auditpipe/estimate";
import type { LiveMeter } from "@auditpipe/meter";
import type { SourceObserver } from "@auditpipe/tail";
import type { Logger } from "pino";
import { MalformedWatch } from "./malformed-watch.ts";
import { SourceHealth } from "./source-health.ts";

/**
 * The live advisor sees one statement in this many (every entry of it), each standing for this
 * many: fed every entry it halved the sidecar's throughput, and one in 32 still cost ~4 % of the
 * sidecar's CPU (docs/benchmarks.md). At 3,000 statements a second one in 128 is still ~23 a second.
 */
export const ADVICE_SAMPLE_EVERY = 128;

/** Whether the sink's writes are failing, as the deliver stage last reported. */
export interface SinkWriteHealth {
  failing: boolean;
  /** The last failure's code. */
  lastError: string;
}

/**
 * The meter's tap on the pipeline (docs/architecture.md) and what watches it: every source gets
 * `observer`, and readiness and the API read the rest.
 */
export interface PipelineTap {
  observer: SourceObserver;
  sinkWrites: SinkWriteHealth;
  /**
   * A sink's upload attempt failed (the S3 sink reports each one at once): counted in
   * auditpipe_sink_errors_total and /v1/volume's pipeline.sinks now, not when write() gives up.
   */
  attemptFailed(sink: string, error: unknown): void;
  /** Set when the sink reports its attempts: a write it gives up on is then not counted twice. */
  countsAttempts: boolean;
  /** GET /v1/advice, from a sample of the statements. */
  advisor: AdviceTally;
  malformedInput: MalformedWatch;
  sourceHealth: SourceHealth;
}

function errorCode(error: unknown): string {
  const code =
    (error as { code?: unknown; name?: unknown } | null)?.code ?? (error as { name?: unknown } | null)?.name;
  return typeof code === "string" ? code : "unknown";
}

/** The observer every source reports to: the meter, the live advisor, the malformed-input watch. */
export function createPipelineTap(meter: LiveMeter, logger: Logger): PipelineTap {
  const sinkWrites: SinkWriteHealth = { failing: false, lastError: "" };
  const advisor = new AdviceTally({ weight: ADVICE_SAMPLE_EVERY });
  const malformedInput = new MalformedWatch(meter.registry, logger);
  const sourceHealth = new SourceHealth(meter.registry);
  const observer: SourceObserver = {
    recordsRead: (source, count) => {
      meter.recordsRead(source, count);
      malformedInput.read(count);
    },
    entry: (entry, record) => {
      meter.entry(entry, record);
      if (sampledStatement(entry.statementId, record.pid, ADVICE_SAMPLE_EVERY)) advisor.add(entry, record);
    },
    outcome: (outcome, sqlstate, reason) => meter.outcome(outcome, sqlstate, reason),
    attempt: (record) => meter.attempt(record.sqlState),
    shippedPending: (count) => meter.shippedPending(count),
    malformed: (source, error) => {
      meter.malformed(source, 1);
      malformedInput.malformed(source, error.code, error.offset);
      // One summary per window at warn or error (MalformedWatch); each record only at debug.
      logger.debug(
        { file: source, offset: error.offset, size: error.size, code: error.code },
        "malformed record skipped",
      );
    },
    bytesBehind: (file, bytes) => meter.setBytesBehind(file, bytes),
    fileGone: (file) => meter.forgetFile(file),
    truncation: (file) => {
      meter.truncation(file);
      logger.warn({ file }, "file truncated or replaced; started it again from the beginning");
    },
    sinkAck: (name, entries, bytes, latencyMs) => {
      sinkWrites.failing = false;
      meter.sinkAck(name, entries, bytes, latencyMs);
    },
    sinkError: (name, error) => {
      sinkWrites.failing = true;
      sinkWrites.lastError = errorCode(error);
      if (!tap.countsAttempts) meter.sinkError(name, errorCode(error));
    },
    checkpointSaved: () => meter.checkpointSaved(),
    checkpointSaveFailed: (stateDir, code) => sourceHealth.checkpointSaveFailed(stateDir, code),
    dataLost: (_file, from, to, reason) => sourceHealth.dataLost(from, to, reason),
  };
  const tap: PipelineTap = {
    observer,
    sinkWrites,
    attemptFailed(sink, error) {
      sinkWrites.failing = true;
      sinkWrites.lastError = errorCode(error);
      meter.sinkError(sink, errorCode(error));
    },
    countsAttempts: false,
    advisor,
    malformedInput,
    sourceHealth,
  };
  return tap;
}
