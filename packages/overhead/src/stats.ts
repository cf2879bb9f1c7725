/**
 * Statistics that admit noise: medians, bootstrap intervals over runs, and whether a difference
 * is resolved at this sample size. Pure; randomness comes from a seeded generator.
 */
import { type Rng, seededRng } from "./rng.ts";

/** Bootstrap resamples: enough that the 2.5th/97.5th percentiles of the resampled medians are stable. */
export const BOOTSTRAP_RESAMPLES = 4000;
/** The seed used when none is given, so the same runs always give the same intervals. */
export const DEFAULT_SEED = 20_261_124;
/**
 * The smallest overhead worth resolving: below 1 % of throughput, more runs buy little a team can
 * act on, so `runsToResolve` aims at this when the point estimate is near zero.
 */
export const SMALLEST_USEFUL_DIFFERENCE = 0.01;

/** Fewest runs per configuration from which a spread, and so an interval, means anything. */
export const MIN_RUNS_FOR_SPREAD = 3;

export interface Interval {
  /** The point estimate (a median). */
  median: number;
  /** Lower end of the 95 % interval. */
  low: number;
  /** Upper end of the 95 % interval. */
  high: number;
}

/** Linear-interpolated quantile (type 7, as R and NumPy default to) of sorted values; q in [0,1]. */
export function quantileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (pos - lo);
}

export function quantile(values: readonly number[], q: number): number {
  return quantileSorted(
    [...values].sort((a, b) => a - b),
    q,
  );
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

function resampleMedian(values: readonly number[], rng: Rng, scratch: number[]): number {
  const n = values.length;
  for (let i = 0; i < n; i++) scratch[i] = values[Math.floor(rng() * n)]!;
  scratch.sort((a, b) => a - b);
  return quantileSorted(scratch, 0.5);
}

export interface BootstrapOptions {
  seed?: number;
  resamples?: number;
  /** Coverage of the interval; default 0.95. */
  level?: number;
}

/**
 * The median and its percentile-bootstrap interval over runs. With one run the interval is that
 * run (nothing is known about the spread); with few runs it is wide, as it should be.
 */
export function bootstrapMedian(values: readonly number[], options: BootstrapOptions = {}): Interval {
  if (values.length === 0) return { median: Number.NaN, low: Number.NaN, high: Number.NaN };
  const rng = seededRng(options.seed ?? DEFAULT_SEED);
  const resamples = options.resamples ?? BOOTSTRAP_RESAMPLES;
  const alpha = (1 - (options.level ?? 0.95)) / 2;
  const medians: number[] = [];
  const scratch: number[] = new Array(values.length);
  for (let i = 0; i < resamples; i++) medians.push(resampleMedian(values, rng, scratch));
  medians.sort((a, b) => a - b);
  return {
    median: median(values),
    low: quantileSorted(medians, alpha),
    high: quantileSorted(medians, 1 - alpha),
  };
}

export interface OverheadInterval extends Interval {
  /** Whether the 95 % interval excludes zero: the difference is resolved at this sample size. */
  significant: boolean;
  /**
   * Runs per configuration that would likely resolve the difference (interval half-width below
   * the point estimate, or below 1 % when the estimate is near zero); null when already resolved.
   */
  runsToResolve: number | null;
}

/**
 * Throughput overhead of `treatment` against `baseline` (1 − median T / median B, so 0.12 means
 * 12 % fewer transactions per second), with a 95 % interval from resampling both sets of runs
 * independently.
 */
export function overheadInterval(
  baseline: readonly number[],
  treatment: readonly number[],
  options: BootstrapOptions = {},
): OverheadInterval {
  const nan = { median: Number.NaN, low: Number.NaN, high: Number.NaN, significant: false };
  if (baseline.length === 0 || treatment.length === 0) return { ...nan, runsToResolve: null };
  const rng = seededRng(options.seed ?? DEFAULT_SEED);
  const resamples = options.resamples ?? BOOTSTRAP_RESAMPLES;
  const alpha = (1 - (options.level ?? 0.95)) / 2;
  const b: number[] = new Array(baseline.length);
  const t: number[] = new Array(treatment.length);
  const diffs: number[] = [];
  for (let i = 0; i < resamples; i++) {
    const mb = resampleMedian(baseline, rng, b);
    const mt = resampleMedian(treatment, rng, t);
    diffs.push(1 - mt / mb);
  }
  diffs.sort((x, y) => x - y);
  const point = 1 - median(treatment) / median(baseline);
  const low = quantileSorted(diffs, alpha);
  const high = quantileSorted(diffs, 1 - alpha);
  // One run on either side says nothing about the spread: never call that resolved.
  const spreadKnown = baseline.length >= 2 && treatment.length >= 2;
  const significant = spreadKnown && (low > 0 || high < 0);
  return {
    median: point,
    low,
    high,
    significant,
    runsToResolve: significant
      ? null
      : spreadKnown
        ? runsToResolve(Math.min(baseline.length, treatment.length), (high - low) / 2, point)
        : MIN_RUNS_FOR_SPREAD,
  };
}

/**
 * Runs that would shrink an interval of half-width `halfWidth` (seen with `runs` runs) below the
 * effect, assuming the half-width falls as 1/√runs: a planning figure, not a promise.
 */
export function runsToResolve(runs: number, halfWidth: number, effect: number): number {
  const target = Math.max(Math.abs(effect), SMALLEST_USEFUL_DIFFERENCE);
  if (!(halfWidth > 0)) return runs + 1;
  return Math.max(runs + 1, Math.ceil(runs * (halfWidth / target) ** 2));
}

/**
 * Overhead from paired runs: one value per round (a configuration's run against that round's
 * baseline run, so drift that moves both cancels), summarised by the median over rounds and its
 * bootstrap interval. Never resolved from one round.
 */
export function pairedOverheadInterval(
  perRound: readonly number[],
  options: BootstrapOptions = {},
): OverheadInterval {
  if (perRound.length === 0)
    return { median: Number.NaN, low: Number.NaN, high: Number.NaN, significant: false, runsToResolve: null };
  const ci = bootstrapMedian(perRound, options);
  const spreadKnown = perRound.length >= 2;
  const significant = spreadKnown && (ci.low > 0 || ci.high < 0);
  return {
    ...ci,
    significant,
    runsToResolve: significant
      ? null
      : spreadKnown
        ? runsToResolve(perRound.length, (ci.high - ci.low) / 2, ci.median)
        : MIN_RUNS_FOR_SPREAD,
  };
}

/** How strongly the points' median variance counts against a point's own, in runs (3 runs say little alone). */
const WEIGHT_PRIOR_RUNS = 2;

/**
 * Each point's weight in the refit: the points' median run-to-run variance over the point's own
 * (its runs about their own mean, so a point the model misses keeps its weight and its miss stays
 * in the residual), the own shrunk toward the median as if by WEIGHT_PRIOR_RUNS runs more. A
 * point whose runs scatter several times more than the rest — bench --quick's fixed-rate point, a
 * few hundred transactions a second whose CPU per transaction swings ±50 µs on a VM where the
 * others swing ±10 — then counts for what it knows instead of setting the noise of every
 * prediction (feasible weighted least squares). All 1 when no point's runs scatter.
 */
export function pointWeights(
  residuals: ReadonlyArray<{ point: number; residual: number }>,
  points: number,
): number[] {
  const own = Array.from({ length: points }, (_, pi) => {
    const r = residuals.filter((x) => x.point === pi).map((x) => x.residual);
    const mean = r.reduce((s, x) => s + x, 0) / Math.max(1, r.length);
    const df = Math.max(0, r.length - 1);
    return { df, variance: df > 0 ? r.reduce((s, x) => s + (x - mean) ** 2, 0) / df : 0 };
  });
  const typical = median(own.filter((o) => o.df > 0).map((o) => o.variance));
  if (!(typical > 0)) return own.map(() => 1);
  return own.map((o) =>
    Math.min(1, typical / ((o.df * o.variance + WEIGHT_PRIOR_RUNS * typical) / (o.df + WEIGHT_PRIOR_RUNS))),
  );
}

/** Rows scaled by the square root of their point's weight: least squares on them is the weighted fit. */
export function weighted<R extends { x: number[]; y: number; point: number }>(
  rows: readonly R[],
  weights: readonly number[],
): R[] {
  return rows.map((row) => {
    const k = Math.sqrt(weights[row.point] ?? 1);
    return { ...row, x: row.x.map((v) => v * k), y: row.y * k };
  });
}
