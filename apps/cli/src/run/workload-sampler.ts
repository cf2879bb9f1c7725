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
  stop(): Promise<void>;
}

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
  let stopped = false;
  let wake: () => void = () => {};
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const loop = (async () => {
    while (!stopped) {
      try {
        const sample = await sampleWorkload({
          ...(options.connection ? { connection: options.connection } : {}),
          intervalMs: options.intervalMs,
        });
        if (stopped) break;
        last = sample;
        options.logger.info(
          {
            database: sample.database,
            statementStats: sample.statementStats,
            overhead: currentOverhead(sample, options.calibration),
          },
          "workload sampled",
        );
      } catch (error) {
        const e = error as { code?: string; message?: string };
        options.logger.warn({ code: e.code }, `workload sample failed: ${e.message ?? "unknown error"}`);
        await pause(Math.min(60_000, options.intervalMs));
      }
    }
  })();
  return {
    lastSample: () => last,
    async stop() {
      stopped = true;
      wake();
      await Promise.race([loop, new Promise((r) => setTimeout(r, 2_000))]);
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
