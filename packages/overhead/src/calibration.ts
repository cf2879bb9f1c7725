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
  type CollectorCost,
  type CostColumn,
  type CostFeatures,
  calibratedOverhead,
  collectorUsPerTransaction,
  costFeature,
  kindFeatures,
  t95,
  wakeupsPerLine,
} from "@auditpipe/estimate";
import { type CollectorRun, fitCollector } from "./collector-fit.ts";
import { seededRng } from "./rng.ts";
import { DEFAULT_SEED, median } from "./stats.ts";
import type { CalibrationCoefficient, CalibrationFit, CalibrationPoint, CpuCalibration } from "./types.ts";

type Column = CostColumn;

const featureOf = (p: CalibrationPoint, column: Column): number => costFeature(column, p);

/** A point's lines by kind (RunLog.auditKinds), as the features the columns price. */
const withKinds = (p: CalibrationPoint): CalibrationPoint & CostFeatures =>
  p.linesByKind
    ? { ...p, miscLinesPerTransaction: p.linesByKind.misc, nestedLinesPerTransaction: p.linesByKind.nested }
    : p;

/**
 * A point's features with the collector's wake-ups per transaction as the fitted collector
 * prices them at the point's line rate (lines · u(λ)), as an estimate will at its own rate.
 */
function withWakeups(p: CalibrationPoint, collector: CollectorCost | null): CalibrationPoint & CostFeatures {
  if (!collector) return withKinds(p);
  const rate = median(p.linesPerSecSamples ?? [0]);
  return {
    ...withKinds(p),
    wakeupsPerTransaction: p.linesPerTransaction * wakeupsPerLine(rate, collector.awakeUs),
  };
}

/**
 * The least spread of wake-ups per line u(λ) across the fitted points that sets the backends' cost
 * per wake-up apart from their cost per line. With the collector awake ~15 µs per wake-up, as
 * measured here, u runs from ~0.65 (8 clients) to ~1 over bench's rates, and the two columns are
 * nearly one: the fit traded them against each other (from the same runs, a line at 2.2 µs and
 * a wake-up at 9.9, or a line at 8.3 and no wake-up cost), each prediction about the same.
 */
const WAKEUP_SPREAD = 0.4;

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

/**
 * The baseline's server µs per statement: its median, and the lowest and highest interval ends
 * (as fast as pgbench goes: a fixed-rate point's baseline is dearer because of the rate).
 */
function baselinePerStatement(points: readonly CalibrationPoint[]): CalibrationCoefficient {
  const per = points
    .filter((p) => p.baselineServerUs && (p.statementsPerTransaction ?? 0) > 0 && p.rate === undefined)
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

/** Bootstrap resamples of the constrained fit: enough for a stable covariance of 2–4 coefficients. */
const FIT_RESAMPLES = 400;

interface Row {
  x: number[];
  y: number;
  /** The point the run belongs to (resampling keeps every point's count of runs). */
  point: number;
}

/** Least squares without intercept on `rows` over the columns `keep` (indices); null when singular. */
function ols(rows: readonly Row[], keep: readonly number[]): { beta: number[]; ssr: number } | null {
  const beta = leastSquares(
    rows.map((r) => keep.map((i) => r.x[i]!)),
    rows.map((r) => r.y),
  );
  if (!beta) return null;
  const ssr = rows.reduce((s, r) => s + (r.y - keep.reduce((t, i, k) => t + r.x[i]! * beta[k]!, 0)) ** 2, 0);
  return { beta, ssr };
}

/** The backends' fit keeps a cost per line in every subset it tries: what a line costs is what it is for. */
const LINE_COLUMNS = ["lines", "linesElsewhere"];

/**
 * Non-negative least squares: of the least-squares fits over every subset of the columns that
 * keeps one of `oneOf` (a line column, by default), the one with the smallest residual whose coefficients are all ≥ 0 (exact
 * for this few columns); the others are held at 0. A cost is never negative: a fit that wants
 * one is noise, and a negative cost per transaction or per statement would make a configuration
 * that logs more look cheaper.
 */
function nonNegativeFit(
  rows: readonly Row[],
  columns: readonly string[],
  oneOf: readonly string[] = LINE_COLUMNS,
): number[] | null {
  const p = columns.length;
  let best: { beta: number[]; ssr: number } | null = null;
  for (let mask = 1; mask < 1 << p; mask++) {
    const keep = columns.map((_, i) => i).filter((i) => mask & (1 << i));
    if (!keep.some((i) => oneOf.includes(columns[i]!))) continue;
    const fit = ols(rows, keep);
    if (!fit || fit.beta.some((b) => b < 0)) continue;
    if (!best || fit.ssr < best.ssr - 1e-9) {
      const beta = new Array<number>(p).fill(0);
      keep.forEach((i, k) => {
        beta[i] = fit.beta[k]!;
      });
      best = { beta, ssr: fit.ssr };
    }
  }
  return best?.beta ?? null;
}

/** The covariance of the non-negative fit's coefficients over resamples of the runs within each point. */
function constrainedCovariance(
  data: readonly Row[],
  columns: readonly string[],
  points: number,
  seed: number,
  oneOf: readonly string[] = LINE_COLUMNS,
): number[][] {
  const rng = seededRng(seed);
  const byPoint = Array.from({ length: points }, (_, pi) => data.filter((r) => r.point === pi));
  const draws: number[][] = [];
  for (let b = 0; b < FIT_RESAMPLES; b++) {
    const sample = byPoint.flatMap((rows) => rows.map(() => rows[Math.floor(rng() * rows.length)]!));
    const d = nonNegativeFit(sample, columns, oneOf);
    if (d) draws.push(d);
  }
  const mean = columns.map((_, i) => draws.reduce((s, d) => s + d[i]!, 0) / Math.max(1, draws.length));
  return columns.map((_, i) =>
    columns.map(
      (_, j) =>
        draws.reduce((s, d) => s + (d[i]! - mean[i]!) * (d[j]! - mean[j]!), 0) /
        Math.max(1, draws.length - 1),
    ),
  );
}

/**
 * Reference server µs per statement of each run's baseline (the machine's state at that moment).
 * A fixed-rate point's runs stay as measured: interleaved with the rest, they saw the same
 * machine, and their baseline is dearer because of the rate (scaling it away would hide the
 * very cost the point is there to measure).
 */
function runScales(points: readonly CalibrationPoint[]): {
  reference: number;
  scale: (p: CalibrationPoint, i: number) => number;
} {
  const perStatement = (p: CalibrationPoint, us: number): number =>
    us / Math.max(1, p.statementsPerTransaction ?? 1);
  const all = points
    .filter((p) => p.rate === undefined)
    .flatMap((p) => (p.baselineSamples ?? []).map((b) => perStatement(p, b)));
  const reference = all.length > 0 ? median(all) : 0;
  return {
    reference,
    scale: (p, i) => {
      const b = p.baselineSamples?.[i];
      if (p.rate !== undefined) return 1;
      return reference > 0 && b !== undefined && b > 0 ? reference / perStatement(p, b) : 1;
    },
  };
}

/**
 * The collector's costs (collector-fit.ts) when every point has its runs' collector CPU and line
 * rates (bench from version 3 on); null otherwise (the columns then price both, as before).
 */
function collectorFitOf(
  points: readonly CalibrationPoint[],
  scale: (p: CalibrationPoint, i: number) => number,
  seed: number,
): CollectorCost | null {
  if (!points.every((p) => p.loggerSamples && p.linesPerSecSamples)) return null;
  const runs: CollectorRun[] = points.flatMap((p, pi) =>
    p.loggerSamples!.map((y, i) => ({
      lines: p.linesPerTransaction,
      linesPerSec: p.linesPerSecSamples![i]!,
      collectorUs: y * scale(p, i),
      ...(p.wakeupSamples ? { wakeups: p.wakeupSamples[i]! } : {}),
      point: pi,
    })),
  );
  return fitCollectorCost(runs, points.length, seed);
}

/** The collector's costs from its runs (collector-fit.ts), with this file's constrained fit. */
export function fitCollectorCost(
  runs: readonly CollectorRun[],
  points: number,
  seed: number = DEFAULT_SEED,
): CollectorCost | null {
  return fitCollector(runs, points, {
    // The collector may cost per wake-up alone: a subset without the per-line cost is a model too
    // (it was skipped, and a fit whose per-line cost came out just below 0 fell back to lines only).
    nonNegative: (rows, columns) => nonNegativeFit(rows, columns, columns),
    covariance: (rows, columns, n) => constrainedCovariance(rows, columns, n, seed, columns),
    invert,
  });
}

const dot = (x: readonly number[], beta: readonly number[]): number =>
  x.reduce((s, v, i) => s + v * beta[i]!, 0);

/** (XᵀX)⁻¹ of the rows; null when the columns are collinear. */
const inverseGram = (rows: readonly Row[]): number[][] | null => {
  const p = rows[0]?.x.length ?? 0;
  return invert(
    Array.from({ length: p }, (_, i) =>
      Array.from({ length: p }, (_, j) => rows.reduce((s, row) => s + row.x[i]! * row.x[j]!, 0)),
    ),
  );
};

/**
 * The constrained fit over every run of every point. Each run's added time is first put at the
 * calibration's reference state of the machine: multiplied by (reference baseline µs per
 * statement) / (the baseline's µs per statement around that run), so a busy minute that makes
 * every statement cost twice as much does not make logging look twice as dear. No cost is
 * negative (nonNegativeFit), and no interval goes below zero.
 */
function fitRounds(
  points: readonly CalibrationPoint[],
  initial: Column[],
  seed: number,
): CalibrationFit | null {
  const { reference, scale } = runScales(points);
  const collector = collectorFitOf(points, scale, seed);
  // With the collector fitted apart, the columns price the backends' part alone.
  const backendsOf = (p: CalibrationPoint, i: number, y: number): number =>
    collector ? y - p.loggerSamples![i]! : y;
  const features = points.map((p) => withWakeups(p, collector));
  // A fixed-rate point is the collector's (its τ and cost per wake-up): the backends' fit leaves it
  // out. At 300 TPS the machine idles, and its runs' CPU per transaction scattered 5–20x more
  // than the other points' (sd 88–104 µs against 5–19): unweighted, that one point made the
  // residual every prediction carries, and the intervals ±6–10 points wide (docs/estimator.md).
  const fitted = points.map((p) => p.rate === undefined);
  /** A point's features in the columns' order (its lines by kind as `cols` price them). */
  const priced = (cols: Column[], pi: number): number[] => {
    const f = kindFeatures(cols, features[pi]!);
    return cols.map((c) => costFeature(c, f));
  };
  const rowsFor = (cols: Column[]): Row[] =>
    points.flatMap((p, pi) => {
      if (!fitted[pi]) return [];
      const x = priced(cols, pi);
      return p.samples!.map((y, i) => ({ x, y: backendsOf(p, i, y) * scale(p, i), point: pi }));
    });
  // The backends' cost per wake-up only where the fitted points' rates spread u(λ) (WAKEUP_SPREAD).
  const spread = (() => {
    const u = features
      .filter((f, pi) => fitted[pi] && f.linesPerTransaction > 0)
      .map((f) => (f.wakeupsPerTransaction ?? 0) / f.linesPerTransaction);
    return u.length > 0 ? Math.max(...u) - Math.min(...u) : 0;
  })();
  let columns = collector && spread >= WAKEUP_SPREAD ? initial : initial.filter((c) => c !== "wakeups");
  let inverse = inverseGram(rowsFor(columns));
  // What the points cannot tell apart goes: nested lines' own cost first, the per-wake-up cost,
  // the per-transaction cost, the statements', and the MISC lines' last of all (every line then
  // costs alike, as in files before version 5).
  for (const drop of ["nestedLines", "wakeups", "transactions", "statements", "miscLines"] as const)
    if (!inverse && columns.includes(drop)) {
      columns = columns.filter((c) => c !== drop);
      inverse = inverseGram(rowsFor(columns));
    }
  const data = rowsFor(columns);
  if (!inverse || data.length <= columns.length) return null;
  // Unweighted: weighing the points by their scatter narrowed the intervals to what the run-to-run
  // noise allows, and the proof's shop workload then fell outside them under `write` on both
  // servers (2026-12-07: 76 µs predicted against 101 measured, 70 against 119). The residual
  // over two workloads' points (TPC-B's and read-heavy's) is what covers how far another
  // workload's costs lie from theirs (docs/bench.md, "Calibration").
  const beta = nonNegativeFit(data, columns);
  if (!beta) return null;
  const free = beta.filter((b) => b > 0).length;
  const ssr = data.reduce((s, row) => s + (row.y - dot(row.x, beta)) ** 2, 0);
  const df = Math.max(1, data.length - free);
  const variance = ssr / df;
  // Where no constraint binds, the least-squares covariance; where one does, resampling the runs
  // within each point and refitting (the constraint included) gives what it leaves uncertain.
  const covariance = beta.every((b) => b > 0)
    ? inverse.map((row) => row.map((v) => v * variance))
    : constrainedCovariance(data, columns, points.length, seed);
  const t = t95(df);
  const coefficient = (c: Column): CalibrationCoefficient | null => {
    const i = columns.indexOf(c);
    if (i < 0) return null;
    const half = t * Math.sqrt(Math.max(0, covariance[i]![i]!));
    return { estimate: beta[i]!, low: Math.max(0, beta[i]! - half), high: beta[i]! + half };
  };
  const fittedIndices = points.flatMap((_, pi) => (fitted[pi] ? [pi] : []));
  const fittedPoints = fittedIndices.map((pi) => points[pi]!);
  const medians = fittedPoints.map((pt) => median(pt.samples!.map((y, i) => y * scale(pt, i))));
  const predicted = fittedIndices.map((pi) => {
    const pt = points[pi]!;
    const logger = collector
      ? collectorUsPerTransaction(collector, pt.linesPerTransaction, median(pt.linesPerSecSamples ?? [0]))
          .estimate
      : 0;
    return dot(priced(columns, pi), beta) + logger;
  });
  const cpu: CpuCalibration = {
    columns,
    coefficients: beta,
    covariance,
    // The runs a typical point had (bench --quick's rate cells run fewer rounds, and weigh less).
    runs: Math.floor(median(fittedPoints.map((pt) => pt.samples!.length))),
    loggerShare: loggerShare(points),
    ...(collector ? { collector } : {}),
    baselineServerUsPerStatement: baselinePerStatement(points),
    ...(reference > 0
      ? {
          referenceUsPerStatement: reference,
          relative: {
            coefficients: beta.map((b) => b / reference),
            covariance: covariance.map((row) => row.map((v) => v / reference ** 2)),
          },
        }
      : {}),
  };
  return {
    lineCostUs: coefficient("lines") ?? coefficient("linesElsewhere")!,
    lineCostElsewhereUs: columns.includes("lines") ? coefficient("linesElsewhere") : null,
    statementCostUs: coefficient("statements"),
    transactionCostUs: coefficient("transactions"),
    r2: r2Of(medians, predicted),
    residualStdErrUs: Math.sqrt(variance),
    // The configurations the residual is over (a fixed-rate point informs the collector's fit only).
    points: fittedPoints.length,
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
export function fitCalibration(
  points: readonly CalibrationPoint[],
  options: { seed?: number } = {},
): CalibrationFit | null {
  if (points.length === 0) return null;
  let columns: Column[] = (["lines", "linesElsewhere", "statements"] as Column[]).filter((c) =>
    points.some((p) => featureOf(p, c) > 0),
  );
  if (!columns.includes("lines") && !columns.includes("linesElsewhere")) return null;
  const cpuBasis = points.every((p) => (p.samples?.length ?? 0) > 0);
  if (cpuBasis) {
    // Lines by kind where every point counted them (bench from version 5 on) and some logged that
    // kind in earnest: a stray nested line in a few thousand transactions (bench's own queries
    // under `all`) prices nothing, and is priced as MISC (kindFeatures).
    const kinds = points.every((p) => p.linesByKind);
    const has = (k: "misc" | "nested"): boolean => kinds && points.some((p) => p.linesByKind![k] >= 0.5);
    const initial: Column[] = [
      ...columns,
      ...(has("misc") ? (["miscLines"] as const) : []),
      ...(has("nested") ? (["nestedLines"] as const) : []),
      "transactions",
      "wakeups",
    ];
    const fit = fitRounds(points, initial, options.seed ?? DEFAULT_SEED);
    if (fit) return fit;
  }
  // TPS basis: one point per cell; each interval end fitted the same way gives the coefficients' range.
  const rowsOf = (cols: Column[], y: (p: CalibrationPoint) => number): Row[] =>
    points.map((p, i) => ({ x: cols.map((c) => featureOf(p, c)), y: y(p), point: i }));
  let beta = nonNegativeFit(
    rowsOf(columns, (p) => p.addedUs.median),
    columns,
  );
  if (
    beta &&
    columns.includes("statements") &&
    !ols(
      rowsOf(columns, (p) => p.addedUs.median),
      columns.map((_, i) => i),
    )
  ) {
    columns = columns.filter((c) => c !== "statements");
    beta = nonNegativeFit(
      rowsOf(columns, (p) => p.addedUs.median),
      columns,
    );
  }
  if (!beta) return null;
  const lows =
    nonNegativeFit(
      rowsOf(columns, (p) => p.addedUs.low),
      columns,
    ) ?? beta;
  const highs =
    nonNegativeFit(
      rowsOf(columns, (p) => p.addedUs.high),
      columns,
    ) ?? beta;
  const coefficient = (c: Column): CalibrationCoefficient | null => {
    const i = columns.indexOf(c);
    if (i < 0) return null;
    const values = [beta![i]!, lows[i]!, highs[i]!];
    return { estimate: beta![i]!, low: Math.min(...values), high: Math.max(...values) };
  };
  const y = points.map((p) => p.addedUs.median);
  const predicted = points.map((p) => columns.reduce((s, c, i) => s + featureOf(p, c) * beta![i]!, 0));
  const ssr = y.reduce((s, v, i) => s + (v - predicted[i]!) ** 2, 0);
  const df = points.length - beta.filter((b) => b > 0).length;
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
