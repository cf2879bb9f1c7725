/**
 * The logging collector's costs, fitted apart from the backends' (the model and its derivation:
 * @auditpipe/estimate's collector-cost.ts): from each run's collector CPU per transaction (its
 * process's ticks), its wake-ups per transaction (voluntary context switches: it sleeps on its
 * pipe between reads) and the line rate it received. Pure.
 *
 * w (per wake-up) and c (per line) come from non-negative least squares on the collector's CPU
 * against the wake-ups and lines each run measured; then τ (how long a wake-up keeps it awake)
 * is the one whose u(λ) = 1 / (1 + λτ) predicts the runs' CPU best from their line rates alone,
 * as an estimate will (lines arrive in bursts — a statement's foreign-key checks back to back —
 * so the wake-ups per line at a rate differ by workload: τ fitted to the CPU weighs them by what
 * they cost). Runs without wake-up counts fit τ and the costs together (the τ whose refit has
 * the smallest residual). The residual is the prediction's, from the line rate alone.
 */
import { type CollectorCost, t95, wakeupsPerLine } from "@auditpipe/estimate";
import { pointWeights, weighted } from "./stats.ts";

export interface CollectorRun {
  /** Added log lines per transaction. */
  lines: number;
  /** Lines per second the collector received. */
  linesPerSec: number;
  /** The collector's added CPU µs per transaction (at the calibration's reference state). */
  collectorUs: number;
  /** The collector's added wake-ups per transaction; absent where not measured. */
  wakeups?: number;
  /** The point the run belongs to (resampling keeps every point's count of runs). */
  point: number;
}

export interface CollectorFitTools {
  /** Non-negative least squares over the named columns (calibration.ts's, one copy). */
  nonNegative: (
    rows: ReadonlyArray<{ x: number[]; y: number; point: number }>,
    columns: readonly string[],
  ) => number[] | null;
  /** The constrained fit's covariance by resampling runs within points. */
  covariance: (
    rows: ReadonlyArray<{ x: number[]; y: number; point: number }>,
    columns: readonly string[],
    points: number,
  ) => number[][];
  invert: (a: number[][]) => number[][] | null;
}

/** τ candidates, µs: 0 and a log grid from 1 µs to 1 s (then refined around the best). */
function tauGrid(): number[] {
  const out = [0];
  for (let e = 0; e <= 60; e++) out.push(10 ** (e / 10));
  return out;
}

/** The τ ≥ 0 minimising `loss` (grid, then golden-section refinement between its neighbours). */
function minimiseTau(loss: (tau: number) => number): number {
  const grid = tauGrid();
  let best = 0;
  for (let i = 1; i < grid.length; i++) if (loss(grid[i]!) < loss(grid[best]!)) best = i;
  let lo = grid[Math.max(0, best - 1)]!;
  let hi = grid[Math.min(grid.length - 1, best + 1)]!;
  const g = (Math.sqrt(5) - 1) / 2;
  for (let k = 0; k < 60; k++) {
    const a = hi - g * (hi - lo);
    const b = lo + g * (hi - lo);
    if (loss(a) < loss(b)) hi = b;
    else lo = a;
  }
  const mid = (lo + hi) / 2;
  return loss(mid) <= loss(grid[best]!) ? mid : grid[best]!;
}

const COLUMNS = ["wakeups", "lines"] as const;

/**
 * The collector's costs from the runs that logged; null with fewer runs than three or no line.
 * Every cost ≥ 0 by construction (non-negative least squares), τ ≥ 0.
 */
export function fitCollector(
  runs: readonly CollectorRun[],
  points: number,
  tools: CollectorFitTools,
): CollectorCost | null {
  const logged = runs.filter((r) => r.lines > 0 && r.linesPerSec > 0);
  if (logged.length < 3) return null;
  const measured = logged.every((r) => r.wakeups !== undefined);
  const first = fitWeighted(logged, measured, points, tools, null);
  if (!first) return null;
  // Refit with each point weighed by its scatter (stats.ts pointWeights): the fixed-rate point's
  // collector CPU swings most, and its runs then count for what they know.
  const weights = pointWeights(
    logged.map((r, i) => ({ point: r.point, residual: first.residuals[i]! })),
    points,
  );
  const fit = fitWeighted(logged, measured, points, tools, weights) ?? first;
  const { beta, tau, variance, df, cov } = fit;
  const t = t95(df);
  const coefficient = (i: number) => {
    const half = t * Math.sqrt(Math.max(0, cov[i]![i]!));
    return { estimate: beta[i]!, low: Math.max(0, beta[i]! - half), high: beta[i]! + half };
  };
  const rates = logged.map((r) => r.linesPerSec);
  return {
    wakeupUs: coefficient(0),
    lineUs: coefficient(1),
    awakeUs: tau,
    covariance: [
      [cov[0]![0]!, cov[0]![1]!],
      [cov[1]![0]!, cov[1]![1]!],
    ],
    residualStdErrUs: Math.sqrt(variance),
    degreesOfFreedom: df,
    linesPerSec: { low: Math.min(...rates), high: Math.max(...rates) },
  };
}

interface WeightedCollectorFit {
  beta: number[];
  tau: number;
  variance: number;
  df: number;
  cov: number[][];
  /** Each run's residual, unweighted, from its line rate alone (as an estimate predicts). */
  residuals: number[];
}

/** The collector's fit with each run weighed by its point's weight (all 1 when null). */
function fitWeighted(
  logged: readonly CollectorRun[],
  measured: boolean,
  points: number,
  tools: CollectorFitTools,
  weights: readonly number[] | null,
): WeightedCollectorFit | null {
  const w = weights ?? Array.from({ length: points }, () => 1);
  const rowsAt = (tau: number) =>
    weighted(
      logged.map((r) => ({
        x: [measured ? r.wakeups! : r.lines * wakeupsPerLine(r.linesPerSec, tau), r.lines],
        y: r.collectorUs,
        point: r.point,
      })),
      w,
    );
  const modelled = (t: number) =>
    weighted(
      logged.map((r) => ({
        x: [r.lines * wakeupsPerLine(r.linesPerSec, t), r.lines],
        y: r.collectorUs,
        point: r.point,
      })),
      w,
    );
  const ssrOf = (rows: ReturnType<typeof rowsAt>, beta: number[]): number =>
    rows.reduce((s, r) => s + (r.y - r.x[0]! * beta[0]! - r.x[1]! * beta[1]!) ** 2, 0);
  let tau: number;
  let rows: ReturnType<typeof rowsAt>;
  let beta: number[] | null;
  if (measured) {
    rows = rowsAt(0);
    beta = tools.nonNegative(rows, COLUMNS);
    if (!beta) return null;
    const b = beta;
    tau = minimiseTau((t) => ssrOf(modelled(t), b));
  } else {
    tau = minimiseTau((t) => {
      const r = rowsAt(t);
      const b = tools.nonNegative(r, COLUMNS);
      return b ? ssrOf(r, b) : Number.POSITIVE_INFINITY;
    });
    rows = rowsAt(tau);
    beta = tools.nonNegative(rows, COLUMNS);
    if (!beta) return null;
  }
  const free = beta.filter((b) => b > 0).length + 1;
  const df = Math.max(1, rows.length - free);
  const variance = ssrOf(modelled(tau), beta) / df;
  const gram = COLUMNS.map((_, i) => COLUMNS.map((_, j) => rows.reduce((s, r) => s + r.x[i]! * r.x[j]!, 0)));
  const inverse = tools.invert(gram);
  const cov =
    inverse && beta.every((b) => b > 0)
      ? inverse.map((row) => row.map((v) => v * variance))
      : tools.covariance(rows, COLUMNS, points);
  const b = beta;
  const residuals = logged.map(
    (r) => r.collectorUs - r.lines * wakeupsPerLine(r.linesPerSec, tau) * b[0]! - r.lines * b[1]!,
  );
  return { beta, tau, variance, df, cov, residuals };
}
