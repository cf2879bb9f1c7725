/**
 * The calibration fit: least squares of the time auditing adds to a transaction against what it
 * does — log lines written (on the data disk or elsewhere) and statements pgaudit's hooks
 * process — so the estimate's coefficients come from this machine instead of from articles:
 * added µs = cost per line × lines + cost per statement × statements.
 *
 * With CPU times (the CPU basis), the added time is the server's CPU time per transaction, one
 * point per run (against the baseline around it), so the residual is the run-to-run noise and
 * the fit's covariance gives a prediction interval for a new measurement; and a cost per
 * transaction that logs anything joins the model: on a busy machine the logging collector's
 * wake-ups cost the backends more than the lines themselves (session write's 4 lines cost
 * about what all's 7 did at a load of 12 on 2 cores). Without CPU times (TPS basis): with C
 * clients kept busy, TPS = C / t, so an overhead f (1 − TPS'/TPS) means each transaction took
 * f·C/TPS' longer; one point per cell.
 */
import {
  type CalibratedInput,
  type CalibratedOverhead,
  type CostColumn,
  calibratedOverhead,
  costFeature,
  t95,
} from "@auditpipe/estimate";
import { median } from "./stats.ts";
import type { CalibrationCoefficient, CalibrationFit, CalibrationPoint, CpuCalibration } from "./types.ts";

type Column = CostColumn;

const featureOf = (p: CalibrationPoint, column: Column): number => costFeature(column, p);

/** Solves A x = b by Gaussian elimination with partial pivoting; null when A is singular. */
export function solveLinear(a: number[][], b: number[]): number[] | null {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    const scale = Math.max(...m.map((row) => Math.abs(row[col]!)), 1e-300);
    if (Math.abs(m[pivot]![col]!) / scale < 1e-10) return null;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const factor = m[r]![col]! / m[col]![col]!;
      for (let c = col; c <= n; c++) m[r]![c]! -= factor * m[col]![c]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** Ordinary least squares without intercept; null when the columns are collinear. */
export function leastSquares(x: number[][], y: number[]): number[] | null {
  const p = x[0]?.length ?? 0;
  const xtx = Array.from({ length: p }, (_, i) =>
    Array.from({ length: p }, (_, j) => x.reduce((s, row) => s + row[i]! * row[j]!, 0)),
  );
  const xty = Array.from({ length: p }, (_, i) => x.reduce((s, row, k) => s + row[i]! * y[k]!, 0));
  return solveLinear(xtx, xty);
}

/** The inverse of a small square matrix (column by column); null when it is singular. */
export function invert(a: number[][]): number[][] | null {
  const n = a.length;
  const columns: number[][] = [];
  for (let j = 0; j < n; j++) {
    const x = solveLinear(
      a,
      Array.from({ length: n }, (_, i) => (i === j ? 1 : 0)),
    );
    if (!x) return null;
    columns.push(x);
  }
  return Array.from({ length: n }, (_, i) => columns.map((col) => col[i]!));
}

function r2Of(y: readonly number[], predicted: readonly number[]): number {
  const ssr = y.reduce((s, v, i) => s + (v - predicted[i]!) ** 2, 0);
  const mean = y.reduce((s, v) => s + v, 0) / y.length;
  const sst = y.reduce((s, v) => s + (v - mean) ** 2, 0);
  return sst > 0 ? 1 - ssr / sst : ssr === 0 ? 1 : 0;
}

/** Between the collector's share of every point's added time; 0 when nothing was added. */
function loggerShare(points: readonly CalibrationPoint[]): number {
  let logger = 0;
  let added = 0;
  for (const p of points)
    if (p.addedUs.median > 0) {
      logger += p.addedLoggerUs ?? 0;
      added += p.addedUs.median;
    }
  return added > 0 ? Math.min(1, Math.max(0, logger / added)) : 0;
}

/** The baseline's server µs per statement: its median, and the lowest and highest interval ends. */
function baselinePerStatement(points: readonly CalibrationPoint[]): CalibrationCoefficient {
  const per = points
    .filter((p) => p.baselineServerUs && (p.statementsPerTransaction ?? 0) > 0)
    .map((p) => {
      const n = p.statementsPerTransaction!;
      const b = p.baselineServerUs!;
      return { estimate: b.median / n, low: b.low / n, high: b.high / n };
    });
  if (per.length === 0) return { estimate: 0, low: 0, high: 0 };
  return {
    estimate: median(per.map((x) => x.estimate)),
    low: Math.min(...per.map((x) => x.low)),
    high: Math.max(...per.map((x) => x.high)),
  };
}

/** Ordinary least squares over every run of every point, with the coefficients' covariance. */
function fitRounds(points: readonly CalibrationPoint[], initial: Column[]): CalibrationFit | null {
  let columns = initial;
  const rows = (cols: Column[]): { x: number[]; y: number }[] =>
    points.flatMap((p) => p.samples!.map((y) => ({ x: cols.map((c) => featureOf(p, c)), y })));
  const gram = (cols: Column[]): number[][] | null => {
    const r = rows(cols);
    return invert(cols.map((_, i) => cols.map((_, j) => r.reduce((s, row) => s + row.x[i]! * row.x[j]!, 0))));
  };
  // What the points cannot tell apart goes: the per-transaction cost first, then the statements'.
  let inverse = gram(columns);
  for (const drop of ["transactions", "statements"] as const)
    if (!inverse && columns.includes(drop)) {
      columns = columns.filter((c) => c !== drop);
      inverse = gram(columns);
    }
  const data = rows(columns);
  const p = columns.length;
  if (!inverse || data.length <= p) return null;
  const xty = columns.map((_, i) => data.reduce((s, row) => s + row.x[i]! * row.y, 0));
  const beta = inverse.map((row) => row.reduce((s, v, j) => s + v * xty[j]!, 0));
  const ssr = data.reduce((s, row) => s + (row.y - row.x.reduce((t, v, i) => t + v * beta[i]!, 0)) ** 2, 0);
  const df = data.length - p;
  const variance = ssr / df;
  const covariance = inverse.map((row) => row.map((v) => v * variance));
  const t = t95(df);
  const coefficient = (c: Column): CalibrationCoefficient | null => {
    const i = columns.indexOf(c);
    if (i < 0) return null;
    const half = t * Math.sqrt(Math.max(0, covariance[i]![i]!));
    return { estimate: beta[i]!, low: beta[i]! - half, high: beta[i]! + half };
  };
  const medians = points.map((pt) => pt.addedUs.median);
  const predicted = points.map((pt) => columns.reduce((s, c, i) => s + featureOf(pt, c) * beta[i]!, 0));
  const cpu: CpuCalibration = {
    columns,
    coefficients: beta,
    covariance,
    runs: Math.min(...points.map((pt) => pt.samples!.length)),
    loggerShare: loggerShare(points),
    baselineServerUsPerStatement: baselinePerStatement(points),
  };
  return {
    lineCostUs: coefficient("lines") ?? coefficient("linesElsewhere")!,
    lineCostElsewhereUs: columns.includes("lines") ? coefficient("linesElsewhere") : null,
    statementCostUs: coefficient("statements"),
    transactionCostUs: coefficient("transactions"),
    r2: r2Of(medians, predicted),
    residualStdErrUs: Math.sqrt(variance),
    points: points.length,
    degreesOfFreedom: df,
    basis: "cpu",
    cpu,
  };
}

/**
 * Fits the costs to the points; columns no point exercises are left out (their coefficient is
 * null), and the statement cost is dropped when it cannot be told apart from the line cost
 * (every point logs exactly what pgaudit processes). Points with CPU times are fitted run by run
 * (the CPU basis); otherwise cell by cell. Null with no usable point.
 */
export function fitCalibration(points: readonly CalibrationPoint[]): CalibrationFit | null {
  if (points.length === 0) return null;
  let columns: Column[] = (["lines", "linesElsewhere", "statements"] as Column[]).filter((c) =>
    points.some((p) => featureOf(p, c) > 0),
  );
  if (!columns.includes("lines") && !columns.includes("linesElsewhere")) return null;
  const cpuBasis = points.every((p) => (p.samples?.length ?? 0) > 0);
  if (cpuBasis) {
    const fit = fitRounds(points, [...columns, "transactions"]);
    if (fit) return fit;
  }
  const design = (cols: Column[]): number[][] => points.map((p) => cols.map((c) => featureOf(p, c)));
  let beta = leastSquares(
    design(columns),
    points.map((p) => p.addedUs.median),
  );
  if (!beta && columns.includes("statements")) {
    columns = columns.filter((c) => c !== "statements");
    beta = leastSquares(
      design(columns),
      points.map((p) => p.addedUs.median),
    );
  }
  if (!beta) return null;
  const x = design(columns);
  const lows =
    leastSquares(
      x,
      points.map((p) => p.addedUs.low),
    ) ?? beta;
  const highs =
    leastSquares(
      x,
      points.map((p) => p.addedUs.high),
    ) ?? beta;
  const coefficient = (c: Column): CalibrationCoefficient | null => {
    const i = columns.indexOf(c);
    if (i < 0) return null;
    const values = [beta![i]!, lows[i]!, highs[i]!];
    return { estimate: beta![i]!, low: Math.min(...values), high: Math.max(...values) };
  };
  const y = points.map((p) => p.addedUs.median);
  const predicted = x.map((row) => row.reduce((s, v, i) => s + v * beta![i]!, 0));
  const ssr = y.reduce((s, v, i) => s + (v - predicted[i]!) ** 2, 0);
  const df = points.length - columns.length;
  const lineCost = coefficient("lines") ?? coefficient("linesElsewhere")!;
  return {
    lineCostUs: lineCost,
    lineCostElsewhereUs: columns.includes("lines") ? coefficient("linesElsewhere") : null,
    statementCostUs: coefficient("statements"),
    r2: r2Of(y, predicted),
    residualStdErrUs: df > 0 ? Math.sqrt(ssr / df) : null,
    points: points.length,
    degreesOfFreedom: df,
    basis: cpuBasis ? "cpu" : "tps",
    cpu: null,
  };
}

export type PredictionInput = CalibratedInput;
export type OverheadPrediction = CalibratedOverhead;

/**
 * What a fit predicts for a workload: the estimator's calibrated range (one copy of the
 * arithmetic). With the CPU basis, `cpuBound` is what bench itself measures as the overhead when
 * `baselineCpuUsPerTransaction` is the baseline's server + pgbench CPU time per transaction.
 */
export function predictOverhead(fit: CalibrationFit, input: PredictionInput): OverheadPrediction {
  return calibratedOverhead({ host: "", createdAt: "", ...fit }, input);
}
