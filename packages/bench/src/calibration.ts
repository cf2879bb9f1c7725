/**
 * The calibration fit: least squares of the backend time auditing adds to a transaction against
 * what it does — log lines written (on the data disk or elsewhere) and statements pgaudit's hooks
 * process — so the estimate's coefficients come from this machine instead of from articles.
 *
 * With C clients kept busy, TPS = C / t, so an overhead f (1 − TPS'/TPS) means each transaction
 * took f·C/TPS' longer: added µs = cost per line × lines + cost per statement × statements.
 */
import { type CalibratedInput, type CalibratedOverhead, calibratedOverhead } from "@auditpipe/estimate";
import type { CalibrationCoefficient, CalibrationFit, CalibrationPoint } from "./types.ts";

type Column = "lines" | "linesElsewhere" | "statements";

function featureOf(p: CalibrationPoint, column: Column): number {
  if (column === "lines") return p.logElsewhere ? 0 : p.linesPerTransaction;
  if (column === "linesElsewhere") return p.logElsewhere ? p.linesPerTransaction : 0;
  return p.auditedStatementsPerTransaction;
}

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

/**
 * Fits the costs to the points; columns no point exercises are left out (their coefficient is
 * null), and the statement cost is dropped when it cannot be told apart from the line cost
 * (every point logs exactly what pgaudit processes). Null with no usable point.
 */
export function fitCalibration(points: readonly CalibrationPoint[]): CalibrationFit | null {
  if (points.length === 0) return null;
  let columns: Column[] = (["lines", "linesElsewhere", "statements"] as const).filter((c) =>
    points.some((p) => featureOf(p, c) > 0),
  );
  if (!columns.includes("lines") && !columns.includes("linesElsewhere")) return null;
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
  const mean = y.reduce((s, v) => s + v, 0) / y.length;
  const sst = y.reduce((s, v) => s + (v - mean) ** 2, 0);
  const df = points.length - columns.length;
  const lineCost = coefficient("lines") ?? coefficient("linesElsewhere")!;
  return {
    lineCostUs: lineCost,
    lineCostElsewhereUs: columns.includes("lines") ? coefficient("linesElsewhere") : null,
    statementCostUs: coefficient("statements"),
    r2: sst > 0 ? 1 - ssr / sst : ssr === 0 ? 1 : 0,
    residualStdErrUs: df > 0 ? Math.sqrt(ssr / df) : null,
    points: points.length,
    degreesOfFreedom: df,
  };
}

export type PredictionInput = CalibratedInput;
export type OverheadPrediction = CalibratedOverhead;

/** What a fit predicts for a workload: the estimator's calibrated range (one copy of the arithmetic). */
export function predictOverhead(fit: CalibrationFit, input: PredictionInput): OverheadPrediction {
  return calibratedOverhead({ host: "", createdAt: "", ...fit }, input);
}
