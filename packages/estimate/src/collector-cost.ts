/**
 * What the logging collector spends on the lines it receives, at the rate it receives them.
 *
 * The collector sleeps on its pipe. A line that finds it asleep wakes it; it then stays awake a
 * while — τ, reading what the pipe holds, writing it, and on a busy machine waiting for a core —
 * and every line that arrives meanwhile is read in the same wake-up. With lines arriving as a
 * Poisson stream at λ per second, each cycle is τ awake plus an exponential wait (mean 1/λ) for
 * the next line, so
 *
 *     wake-ups per second = 1 / (τ + 1/λ) = λ / (1 + λτ),   wake-ups per line u(λ) = 1 / (1 + λτ);
 *
 * the share of lines that find it awake, λτ / (1 + λτ), is the share of time it is awake (Poisson
 * arrivals see time averages): "a line finds it busy with probability ≈ its utilisation", where
 * being busy includes waiting for a core. The collector's CPU per transaction is then
 *
 *     collector µs = w · (wake-ups per transaction) + c · (lines per transaction)
 *                  = lines · (c + w · u(λ)),
 *
 * w the CPU of one wake-up (the sleep, the wake, the poll), c of one line (the read, the write to
 * the file), both ≥ 0. It is exact at the ends: at low rates (λτ → 0) every line wakes it, w + c a
 * line; when lines arrive faster than it sleeps (λτ → ∞) none does, c a line. τ is fitted as one
 * mean (it grows a little with the lines a wake-up reads; that is left in the residual).
 */
import type { CalibratedCost } from "./overhead.ts";

/** The collector's costs, fitted by `auditpipe bench` from its process's ticks and wake-ups. */
export interface CollectorCost {
  /** CPU µs of one wake-up, with its 95 % interval. */
  wakeupUs: CalibratedCost;
  /** CPU µs of one line (reading it from the pipe and writing it), with its 95 % interval. */
  lineUs: CalibratedCost;
  /** τ: how long, µs, it stays awake per wake-up (on a busy machine, waiting for a core too). */
  awakeUs: number;
  /** Covariance of (wakeupUs, lineUs), µs². */
  covariance: [[number, number], [number, number]];
  /** Residual standard error of the collector's CPU per transaction, µs. */
  residualStdErrUs: number;
  degreesOfFreedom: number;
  /** The line rates, lines per second, the fit saw (lowest, highest). */
  linesPerSec: { low: number; high: number };
}

/** u(λ): the collector's wake-ups per line at λ lines per second (1 at low rates, → 0 at high). */
export function wakeupsPerLine(linesPerSec: number, awakeUs: number): number {
  return 1 / (1 + Math.max(0, linesPerSec) * Math.max(0, awakeUs) * 1e-6);
}

/**
 * The collector's CPU per transaction at λ lines per second: its estimate and variance (the
 * coefficients' covariance; τ is taken as fitted), before any residual noise.
 */
export function collectorUsPerTransaction(
  cost: Pick<CollectorCost, "wakeupUs" | "lineUs" | "awakeUs" | "covariance">,
  linesPerTransaction: number,
  linesPerSec: number,
): { estimate: number; variance: number } {
  const u = wakeupsPerLine(linesPerSec, cost.awakeUs);
  const g: [number, number] = [linesPerTransaction * u, linesPerTransaction];
  const estimate = g[0] * cost.wakeupUs.estimate + g[1] * cost.lineUs.estimate;
  const c = cost.covariance;
  const variance = g[0] * g[0] * c[0][0] + 2 * g[0] * g[1] * c[0][1] + g[1] * g[1] * c[1][1];
  return { estimate, variance: Math.max(0, variance) };
}
