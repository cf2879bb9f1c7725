/**
 * The overhead model's costs: what a log line and pgaudit's hooks cost a transaction, from a
 * bench calibration (server CPU µs with a prediction interval, at the calibration's state of the
 * machine) or, without one, from public measurements (a per-line cost that grows with
 * concurrency, a collector-bound regime above a line rate where the logging collector's single
 * pipe serialises the backends, the cost of logs sharing the data disk). What those costs mean
 * for a server at its load is overhead-range.ts and regime.ts. Sources: docs/estimator.md.
 */

/**
 * Wall time a backend spends per log line, in µs: low = formatting plus one write(2) to the
 * collector pipe uncontended (an assumption: a small-write syscall costs 1–2 µs); high grows
 * from 5 µs at one client to 23 µs at 56 clients, the added latency per statement of
 * `log_statement = all` at 56 clients in digoal's measurements ("PostgreSQL 开启审计日志、时间记录带来的性能影响有多少?",
 * 2018: 0.291 ms vs 0.268 ms, one line per statement).
 */
export const LINE_COST_US: { low: number; highOneClient: number; highAt56: number } = {
  low: 2,
  highOneClient: 5,
  highAt56: 23,
};
/**
 * pgaudit's hooks per statement, in µs, whatever is logged: Gold Lapel ("pgAudit Performance Impact:
 * Benchmarks and Mitigation Strategies") calls it negligible at
 * 10–15k TPS and measurable at 1M+ inserts/s (the TimescaleDB report it cites). An assumption.
 */
export const HOOK_COST_US: { low: number; high: number } = { low: 0.2, high: 2 };
/**
 * Pipe writes per second at which the logging collector becomes the bottleneck: digoal (2018) saw
 * −8% at ~190k lines/s (log_statement) but −49% at ~107k lines/s (log_duration) and −70% with
 * both, at 56 clients, with perf showing the pipe's mutex (osq_lock). Onset is somewhere in
 * this range; above it, the losses digoal measured bound the result.
 */
export const COLLECTOR_BOUND_WRITES: { onset: number; saturated: number } = {
  onset: 100_000,
  saturated: 200_000,
};
/** digoal's (2018) throughput losses in the collector-bound regime (one line, two lines per statement). */
export const COLLECTOR_LOSS: { low: number; high: number } = { low: 0.08, high: 0.7 };
/**
 * Gold Lapel's benchmarks: moving the log directory to its own volume cut session-ALL overhead from 15.5% to
 * 8.3% (x1.87). Applied to the high bound when logs share the data disk.
 */
export const SAME_DISK_FACTOR = 1.87;

import { type CollectorCost, collectorUsPerTransaction, wakeupsPerLine } from "./collector-cost.ts";

/** A cost fitted by `auditpipe bench`: at the cells' medians, and at their interval ends. */
export interface CalibratedCost {
  estimate: number;
  low: number;
  high: number;
}

/**
 * What the calibrated model's coefficients multiply: log lines per transaction (on the data disk,
 * or elsewhere), statements pgaudit's hooks process per transaction, transactions that log
 * anything (the logging collector's wake-ups, which on a busy machine cost the backends more
 * than the lines do), and (version 4) the collector's wake-ups per transaction, lines · u(λ): a
 * backend whose pipe write finds the collector asleep pays for waking it, which a calibration
 * with a low fixed-rate cell (every line wakes it) tells apart from the line's own cost.
 */
export type CostColumn =
  | "lines"
  | "linesElsewhere"
  | "statements"
  | "transactions"
  | "wakeups"
  | "miscLines"
  | "nestedLines";

export interface CostFeatures {
  linesPerTransaction: number;
  /**
   * Of those lines, pgAudit's MISC entries (BEGIN, COMMIT, SET…: no object to name, a short
   * line) and its nested ones (substatement > 1: foreign-key checks, statements in functions);
   * absent: 0. A model prices them apart only when it has their columns (kindFeatures).
   */
  miscLinesPerTransaction?: number;
  nestedLinesPerTransaction?: number;
  auditedStatementsPerTransaction: number;
  logElsewhere: boolean;
  /** The collector's wake-ups per transaction, lines · u(λ) (collector-cost.ts); absent: 0. */
  wakeupsPerTransaction?: number;
}

/**
 * A workload's features as a model with `columns` prices them. Lines by kind only where the model
 * has a MISC column (an older calibration prices every line alike); nested lines as MISC ones
 * where it has no column of its own for them (its points logged too few to price): both name no
 * object of their own to look up.
 */
export function kindFeatures<W extends CostFeatures>(columns: readonly string[], w: W): W {
  const misc = w.miscLinesPerTransaction ?? 0;
  const nested = w.nestedLinesPerTransaction ?? 0;
  if (!columns.includes("miscLines"))
    return { ...w, miscLinesPerTransaction: 0, nestedLinesPerTransaction: 0 };
  if (columns.includes("nestedLines")) return w;
  return { ...w, miscLinesPerTransaction: misc + nested, nestedLinesPerTransaction: 0 };
}

/**
 * One feature of a workload. A transaction logs anything at most once, so "transactions" is
 * min(1, lines per transaction): exact when every transaction logs alike, an upper bound when a
 * few transactions log several lines each. "lines" are those of no other line column (on the
 * data disk): with kindFeatures, the statements' own.
 */
export function costFeature(column: CostColumn, w: CostFeatures): number {
  const misc = Math.max(0, w.miscLinesPerTransaction ?? 0);
  const nested = Math.max(0, w.nestedLinesPerTransaction ?? 0);
  if (column === "lines") return w.logElsewhere ? 0 : Math.max(0, w.linesPerTransaction - misc - nested);
  if (column === "miscLines") return w.logElsewhere ? 0 : misc;
  if (column === "nestedLines") return w.logElsewhere ? 0 : nested;
  if (column === "linesElsewhere") return w.logElsewhere ? w.linesPerTransaction : 0;
  if (column === "statements") return w.auditedStatementsPerTransaction;
  if (column === "wakeups") return Math.max(0, w.wakeupsPerTransaction ?? 0);
  return Math.min(1, Math.max(0, w.linesPerTransaction));
}

/**
 * What a calibration measured in CPU time adds: the fit's covariance, to give any workload a
 * prediction interval, and what places the overhead between its two regimes.
 */
export interface CpuCostModel {
  /** The fit's columns (CostColumn names). */
  columns: string[];
  /** Coefficients in the columns' order, server CPU µs. */
  coefficients: number[];
  /** Their covariance, µs². */
  covariance: number[][];
  /** Runs per configuration behind each point: the size of measurement the interval is for. */
  runs: number;
  /**
   * The logging collector's share of the added server time (off the backends' path), over the
   * calibration's runs. With `collector`, the share is computed per prediction instead.
   */
  loggerShare: number;
  /**
   * Version 3: the logging collector's CPU apart, per wake-up and per line (collector-cost.ts);
   * the columns' coefficients are then the backends' alone. Absent (older files): one cost per
   * line for both, the collector's share `loggerShare`.
   */
  collector?: CollectorCost;
  /** Server CPU µs per statement of the calibration's baseline workload. */
  baselineServerUsPerStatement: CalibratedCost;
  /** The machine's state the coefficients are at (baseline µs per statement); absent in older files. */
  referenceUsPerStatement?: number;
}

/** The coefficients `auditpipe bench --calibration-out` fitted, and where they come from. */
export interface OverheadCalibration {
  /** Host the bench ran on, and when. */
  host: string;
  createdAt: string;
  /** Backend µs per log line (log directory on the data disk, or wherever it was measured). */
  lineCostUs: CalibratedCost;
  /** Backend µs per log line with the log directory on another disk; null when not measured. */
  lineCostElsewhereUs: CalibratedCost | null;
  /** µs in pgaudit's hooks per statement; null when not told apart from the line cost. */
  statementCostUs: CalibratedCost | null;
  /** CPU basis: µs per transaction that logs anything; null or absent when not measured. */
  transactionCostUs?: CalibratedCost | null;
  /** Residual standard error of the fit, µs per transaction (null: no degrees of freedom). */
  residualStdErrUs: number | null;
  degreesOfFreedom: number;
  /** Present when the costs are server CPU time from paired runs (bench with CPU times). */
  cpu?: CpuCostModel | null;
  /** The fit's quality, shown wherever the calibration is used: R², and the configurations fitted. */
  r2?: number;
  points?: number;
}

/** Two-sided 99.9 % quantiles of Student's t by degrees of freedom (then 3.291). */
const T999: readonly number[] = [
  Number.NaN,
  636.62,
  31.599,
  12.924,
  8.61,
  6.869,
  5.959,
  5.408,
  5.041,
  4.781,
  4.587,
  4.437,
  4.318,
  4.221,
  4.14,
  4.073,
  4.015,
  3.965,
  3.922,
  3.883,
  3.85,
  3.819,
  3.792,
  3.768,
  3.745,
  3.725,
  3.707,
  3.69,
  3.674,
  3.659,
  3.646,
];
/** Two-sided 95 % quantiles of Student's t by degrees of freedom (then 1.96). */
const T95: readonly number[] = [
  Number.NaN,
  12.706,
  4.303,
  3.182,
  2.776,
  2.571,
  2.447,
  2.365,
  2.306,
  2.262,
  2.228,
  2.201,
  2.179,
  2.16,
  2.145,
  2.131,
  2.12,
  2.11,
  2.101,
  2.093,
  2.086,
  2.08,
  2.074,
  2.069,
  2.064,
  2.06,
  2.056,
  2.052,
  2.048,
  2.045,
  2.042,
];
export function t95(df: number): number {
  return df < T95.length ? T95[df]! : 1.96;
}

/** The coverage levels intervals are given at: 95 % (what is printed), 99.9 % (what a test can rely on). */
export type IntervalLevel = 0.95 | 0.999;

export function tQuantile(level: IntervalLevel, df: number): number {
  if (level === 0.95) return t95(df);
  return df < T999.length ? T999[df]! : 3.291;
}

export interface CalibratedInput {
  linesPerTransaction: number;
  /** Of those, pgAudit's MISC and nested lines (CostFeatures); absent: 0. */
  miscLinesPerTransaction?: number;
  nestedLinesPerTransaction?: number;
  /** Statements per transaction pgaudit's hooks process (0 when pgaudit audits nothing). */
  auditedStatementsPerTransaction: number;
  logElsewhere: boolean;
  /** Backend time per transaction without the auditing, µs (clients / TPS). */
  baselineUsPerTransaction: number;
  /** Statements per transaction, audited or not (a CPU calibration's CPU-bound denominator). */
  statementsPerTransaction?: number;
  /** CPU µs per transaction without auditing, where measured (bench): the CPU-bound denominator. */
  baselineCpuUsPerTransaction?: number;
  /**
   * The target's baseline server µs per statement, measured in the same state as the overhead
   * it is compared with (bench, same workload): the costs are scaled from the calibration's
   * state (`referenceUsPerStatement`) to it. Absent: the costs as calibrated.
   */
  targetUsPerStatement?: number;
  /** The intervals' coverage; default 0.95. */
  level?: IntervalLevel;
  /**
   * Log lines per second the collector receives at the load predicted for (the sampled
   * workload's): what a line costs it (collector-cost.ts). Absent: the calibration's own rates'
   * middle (its geometric mean).
   */
  linesPerSec?: number;
}

interface Range {
  low: number;
  estimate: number;
  high: number;
}

/** Throughput overhead: low, point and high (0.1 = 10 % fewer TPS). */
export interface CalibratedOverhead extends Range {
  /** The added time per transaction, µs (server CPU with a CPU calibration). */
  addedUs: Range;
  /** CPU basis: the overhead if the machine is CPU-bound (every added CPU µs costs throughput). */
  cpuBound?: Range;
  /** CPU basis: the overhead if the server has idle cores (only the backends' added time counts). */
  idleCores?: Range;
}

/** (π/2)·σ²/m: the variance of a median of m runs with per-run spread σ (normal noise). */
const MEDIAN_EFFICIENCY = Math.PI / 2;

/**
 * Added server CPU µs per transaction with its prediction interval: the coefficients'
 * uncertainty (covariance) plus the noise of a new median of as many runs as the calibration
 * had. `perTransaction: false` leaves out the cost per logging transaction (what the collector's
 * wake-ups cost a busy machine).
 */
export function predictAddedUs(
  c: OverheadCalibration & { cpu: CpuCostModel },
  input: CalibratedInput,
  options: { perTransaction?: boolean; collector?: boolean } = {},
): Range {
  return predictAddedSplit(c, input, options).added;
}

/** The collector's line rate a prediction prices at: the input's, else the calibration's middle. */
export function collectorRate(collector: CollectorCost, input: { linesPerSec?: number }): number {
  return input.linesPerSec ?? Math.sqrt(collector.linesPerSec.low * collector.linesPerSec.high);
}

/**
 * predictAddedUs, and the logging collector's share of the estimate (off the backends' path):
 * computed at the input's line rate with a version-3 calibration, the calibration's
 * `loggerShare` otherwise.
 */
export function predictAddedSplit(
  c: OverheadCalibration & { cpu: CpuCostModel },
  input: CalibratedInput,
  options: { perTransaction?: boolean; collector?: boolean } = {},
): { added: Range; collectorShare: number } {
  const { columns, coefficients, covariance, runs, collector } = c.cpu;
  // A calibration that measured one placement only uses its cost for both.
  const logElsewhere = columns.includes("lines")
    ? input.logElsewhere && columns.includes("linesElsewhere")
    : true;
  const features: CostFeatures = kindFeatures(columns, {
    ...input,
    logElsewhere,
    wakeupsPerTransaction: collector
      ? input.linesPerTransaction * wakeupsPerLine(collectorRate(collector, input), collector.awakeUs)
      : 0,
  });
  const x = columns.map((name) =>
    name === "transactions" && options.perTransaction === false
      ? 0
      : costFeature(name as CostColumn, features),
  );
  const k = stateScale(c, input);
  const backends = x.reduce((sum, v, i) => sum + v * coefficients[i]!, 0);
  let variance = 0;
  for (let i = 0; i < x.length; i++)
    for (let j = 0; j < x.length; j++) variance += x[i]! * x[j]! * covariance[i]![j]!;
  const sigma = c.residualStdErrUs ?? 0;
  variance += (MEDIAN_EFFICIENCY * sigma * sigma) / Math.max(1, runs);
  let logger = 0;
  if (collector && options.collector !== false) {
    const p = collectorUsPerTransaction(
      collector,
      input.linesPerTransaction,
      collectorRate(collector, input),
    );
    logger = p.estimate;
    variance +=
      p.variance +
      (MEDIAN_EFFICIENCY * collector.residualStdErrUs ** 2 * (input.linesPerTransaction > 0 ? 1 : 0)) /
        Math.max(1, runs);
  }
  const estimate = k * (backends + logger);
  const half = k * tQuantile(input.level ?? 0.95, c.degreesOfFreedom) * Math.sqrt(Math.max(0, variance));
  const collectorShare = collector
    ? options.collector === false
      ? 0
      : backends + logger > 0
        ? logger / (backends + logger)
        : 0
    : Math.min(1, Math.max(0, c.cpu.loggerShare));
  return { added: { low: estimate - half, estimate, high: estimate + half }, collectorShare };
}

/**
 * From the calibration's state of the machine to the target's: the ratio of their baseline
 * server µs per statement, when both were measured; 1 otherwise.
 */
export function stateScale(c: OverheadCalibration, input: { targetUsPerStatement?: number }): number {
  const reference = c.cpu?.referenceUsPerStatement;
  const target = input.targetUsPerStatement;
  return reference && target && reference > 0 && target > 0 ? target / reference : 1;
}

// A negative added time (noise in the fit) means faster; at half the time it is −100 %: clamp there.
const fraction = (t0: number, added: number): number => (t0 + added > t0 / 2 ? added / (t0 + added) : -1);

/**
 * A CPU calibration's range. CPU-bound: every added CPU µs (backends and logging collector) costs
 * throughput, against the transaction's CPU time — measured (bench), or its statements at the
 * calibration's cheapest (pgbench's) cost each, which bounds it from below. Idle cores: only the
 * backends' share is on a transaction's path (and no contention for the collector's wake-ups),
 * against its wall time per client (clients / TPS, which is at least its CPU time). The truth
 * lies between: the range runs from the lower regime's low to the higher's high.
 */
function cpuCalibratedOverhead(
  c: OverheadCalibration & { cpu: CpuCostModel },
  input: CalibratedInput,
): CalibratedOverhead {
  const { added, collectorShare } = predictAddedSplit(c, input);
  // With idle cores there is no contention for the collector's wake-ups to cause, and the
  // collector runs on a core of its own: only the backends' part is on the path.
  const onPathAdded = predictAddedUs(c, input, {
    perTransaction: false,
    ...(c.cpu.collector ? { collector: false } : {}),
  });
  const cpu0 =
    input.baselineCpuUsPerTransaction ??
    (input.statementsPerTransaction ?? input.auditedStatementsPerTransaction) *
      c.cpu.baselineServerUsPerStatement.low;
  const onPath = c.cpu.collector ? 1 : 1 - collectorShare;
  const t0 = input.baselineUsPerTransaction;
  const cpuBound = {
    low: fraction(cpu0, added.low),
    estimate: fraction(cpu0, added.estimate),
    high: fraction(cpu0, added.high),
  };
  const idleCores = {
    low: fraction(t0, onPathAdded.low * onPath),
    estimate: fraction(t0, onPathAdded.estimate * onPath),
    high: fraction(t0, onPathAdded.high * onPath),
  };
  return {
    low: Math.min(idleCores.low, cpuBound.low),
    estimate: cpuBound.estimate,
    high: Math.max(idleCores.high, cpuBound.high),
    addedUs: added,
    cpuBound,
    idleCores,
  };
}

/**
 * The overhead a calibration predicts: added time from the coefficients' ranges, widened by the
 * fit's residual error at 95 %, as a throughput loss against the baseline time per transaction.
 */
export function calibratedOverhead(c: OverheadCalibration, input: CalibratedInput): CalibratedOverhead {
  if (c.cpu) return cpuCalibratedOverhead({ ...c, cpu: c.cpu }, input);
  const lineCost = input.logElsewhere ? (c.lineCostElsewhereUs ?? c.lineCostUs) : c.lineCostUs;
  const terms: Array<[CalibratedCost, number]> = [[lineCost, input.linesPerTransaction]];
  if (c.statementCostUs) terms.push([c.statementCostUs, input.auditedStatementsPerTransaction]);
  let low = 0;
  let estimate = 0;
  let high = 0;
  for (const [cost, x] of terms) {
    low += cost.low * x;
    estimate += cost.estimate * x;
    high += cost.high * x;
  }
  if (c.residualStdErrUs !== null) {
    const spread = t95(c.degreesOfFreedom) * c.residualStdErrUs;
    low -= spread;
    high += spread;
  }
  const t0 = input.baselineUsPerTransaction;
  return {
    low: fraction(t0, low),
    estimate: fraction(t0, estimate),
    high: fraction(t0, high),
    addedUs: { low, estimate, high },
  };
}

/** Said of every uncalibrated range: where its coefficients come from, and how to do better. */
export const UNCALIBRATED_NOTE =
  'uncalibrated: coefficients from public measurements (digoal, "PostgreSQL 开启审计日志、时间记录带来的性能影响有多少?", 2018; Gold Lapel, "pgAudit Performance Impact: Benchmarks and Mitigation Strategies"), not from this hardware: run `auditpipe bench --calibration-out FILE` and pass --calibration FILE';
