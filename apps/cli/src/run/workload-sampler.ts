import {
  estimate,
  type OverheadCalibration,
  overheadBasis,
  percent,
  sampleWorkload,
  type WorkloadSample,
} from "@auditpipe/estimate";
import type { Logger } from "pino";

export interface WorkloadSampler {
  /** The last completed sample, or undefined before the first. */
  lastSample(): WorkloadSample | undefined;
  /** The error code of the last sample if it failed, undefined once one succeeded (the log has the message). */
  lastErrorCode(): string | undefined;
  /** Stops at once: a sample under way is abandoned and its connection closed. */
  stop(): Promise<void>;
}

/** How long stop() waits for the sample under way to let go of its connection. */
const STOP_WAIT_MS = 2_000;

/**
 * Samples the server's own database over and over (each sample spans `intervalMs`), so
 * `GET /v1/workload` and the estimate routes answer from a recent one. The connection comes from
 * the server's configuration (`--db` or libpq's PG* variables), never from a request; it is never
 * logged. A failed sample is logged by its code and retried after a pause. Each sample's log line
 * carries the overhead range of the server's current audit configuration and what it rests on
 * (the calibration, or the public measurements when uncalibrated).
 */
export function startWorkloadSampler(options: {
  connection?: string;
  intervalMs: number;
  logger: Logger;
  calibration?: OverheadCalibration | undefined;
}): WorkloadSampler {
  let last: WorkloadSample | undefined;
  let lastError: string | undefined;
  const abort = new AbortController();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        abort.signal.removeEventListener("abort", done);
        resolve();
      }
      abort.signal.addEventListener("abort", done, { once: true });
    });
  const loop = (async () => {
    while (!abort.signal.aborted) {
      try {
        const sample = await sampleWorkload({
          ...(options.connection ? { connection: options.connection } : {}),
          intervalMs: options.intervalMs,
          signal: abort.signal,
        });
        if (abort.signal.aborted) break;
        last = sample;
        lastError = undefined;
        options.logger.info(
          {
            database: sample.database,
            statementStats: sample.statementStats,
            overhead: currentOverhead(sample, options.calibration),
          },
          "workload sampled",
        );
      } catch (error) {
        if (abort.signal.aborted) break;
        const e = error as { code?: string; message?: string };
        lastError = e.code ?? "an unknown error";
        options.logger.warn({ code: e.code }, `workload sample failed: ${e.message ?? "unknown error"}`);
        await pause(Math.min(60_000, options.intervalMs));
      }
    }
  })();
  return {
    lastSample: () => last,
    lastErrorCode: () => lastError,
    async stop() {
      abort.abort();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise((r) => (timer = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(timer);
    },
  };
}

/** What the current audit configuration costs this server at the sampled load, with what it rests on. */
function currentOverhead(
  sample: WorkloadSample,
  calibration: OverheadCalibration | undefined,
): { configuration: string; throughput: string; regime: string; basis: string } {
  const e = estimate(sample.workload, sample.currentConfig, calibration ? { calibration } : {});
  const t = e.overhead.throughput;
  return {
    configuration: e.config,
    throughput:
      t.low === t.high
        ? percent(t.estimate)
        : `${percent(t.estimate)} [${percent(t.low)}–${percent(t.high)}]`,
    regime: e.overhead.regime.kind,
    basis: calibration ? overheadBasis(calibration) : "uncalibrated (see the start-up log)",
  };
}
