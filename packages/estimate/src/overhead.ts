/**
 * The overhead model: a range, never one percentage. Time each transaction spends producing its
 * log lines (a per-line cost that grows with concurrency) and in pgaudit's hooks, against the
 * time the transaction takes without them; a collector-bound regime above a line rate where the
 * logging collector's single pipe serialises the backends; and the cost of logs sharing the
 * data disk. Coefficients and their sources are below and in docs/estimator.md.
 */
import type { Overhead, Workload } from "./types.ts";

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
/** The logging collector's pipe carries messages in chunks of at most this many payload bytes (PIPE_MAX_PAYLOAD). */
const PIPE_PAYLOAD = 500;

/** A cost fitted by `auditpipe bench`: at the cells' medians, and at their interval ends. */
export interface CalibratedCost {
  estimate: number;
  low: number;
  high: number;
}

/**
 * What the calibrated model's coefficients multiply: log lines per transaction (on the data disk,
 * or elsewhere), statements pgaudit's hooks process per transaction, and transactions that log
 * anything (the logging collector's wake-ups, which on a busy machine cost the backends more
 * than the lines do).
 */
export type CostColumn = "lines" | "linesElsewhere" | "statements" | "transactions";

export interface CostFeatures {
  linesPerTransaction: number;
  auditedStatementsPerTransaction: number;
  logElsewhere: boolean;
}

/**
 * One feature of a workload. A transaction logs anything at most once, so "transactions" is
 * min(1, lines per transaction): exact when every transaction logs alike, an upper bound when a
 * few transactions log several lines each.
 */
export function costFeature(column: CostColumn, w: CostFeatures): number {
  if (column === "lines") return w.logElsewhere ? 0 : w.linesPerTransaction;
  if (column === "linesElsewhere") return w.logElsewhere ? w.linesPerTransaction : 0;
  if (column === "statements") return w.auditedStatementsPerTransaction;
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
  /** The logging collector's share of the added server time (off the backends' path). */
  loggerShare: number;
  /** Server CPU µs per statement of the calibration's baseline workload. */
  baselineServerUsPerStatement: CalibratedCost;
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
  /** Statements per transaction pgaudit's hooks process (0 when pgaudit audits nothing). */
  auditedStatementsPerTransaction: number;
  logElsewhere: boolean;
  /** Backend time per transaction without the auditing, µs (clients / TPS). */
  baselineUsPerTransaction: number;
  /** Statements per transaction, audited or not (a CPU calibration's CPU-bound denominator). */
  statementsPerTransaction?: number;
  /** CPU µs per transaction without auditing, where measured (bench): the CPU-bound denominator. */
  baselineCpuUsPerTransaction?: number;
  /** The intervals' coverage; default 0.95. */
  level?: IntervalLevel;
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
  options: { perTransaction?: boolean } = {},
): Range {
  const { columns, coefficients, covariance, runs } = c.cpu;
  // A calibration that measured one placement only uses its cost for both.
  const logElsewhere = columns.includes("lines")
    ? input.logElsewhere && columns.includes("linesElsewhere")
    : true;
  const features: CostFeatures = { ...input, logElsewhere };
  const x = columns.map((name) =>
    name === "transactions" && options.perTransaction === false
      ? 0
      : costFeature(name as CostColumn, features),
  );
  const estimate = x.reduce((sum, v, i) => sum + v * coefficients[i]!, 0);
  let variance = 0;
  for (let i = 0; i < x.length; i++)
    for (let j = 0; j < x.length; j++) variance += x[i]! * x[j]! * covariance[i]![j]!;
  const sigma = c.residualStdErrUs ?? 0;
  variance += (MEDIAN_EFFICIENCY * sigma * sigma) / Math.max(1, runs);
  const half = tQuantile(input.level ?? 0.95, c.degreesOfFreedom) * Math.sqrt(Math.max(0, variance));
  return { low: estimate - half, estimate, high: estimate + half };
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
  const added = predictAddedUs(c, input);
  // With idle cores there is no contention for the collector's wake-ups to cause.
  const onPathAdded = predictAddedUs(c, input, { perTransaction: false });
  const cpu0 =
    input.baselineCpuUsPerTransaction ??
    (input.statementsPerTransaction ?? input.auditedStatementsPerTransaction) *
      c.cpu.baselineServerUsPerStatement.low;
  const onPath = 1 - Math.min(1, Math.max(0, c.cpu.loggerShare));
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

export interface OverheadInput {
  workload: Workload;
  entriesPerSec: number;
  /** Audit and other lines per second. */
  linesPerSec: number;
  bytesPerLine: number;
  /** Whether pgaudit does anything (any class or a role): its hooks always run once loaded. */
  auditing: boolean;
  logOnDataDisk: boolean;
  /** Coefficients measured by `auditpipe bench` on this kind of machine; the public ones when absent. */
  calibration?: OverheadCalibration;
}

export function overheadRange(input: OverheadInput): Overhead {
  const w = input.workload;
  const assumptions: string[] = [];
  const tps = w.transactionsPerSec;
  const statementsPerSec = w.statements.reduce((sum, s) => sum + s.callsPerSec, 0);
  const clients = w.clients ?? 0;
  if (tps <= 0 || statementsPerSec <= 0) {
    return {
      throughput: { low: 0, high: 0 },
      latencyMs: { low: 0, high: 0 },
      linesPerSec: input.linesPerSec,
      collectorBound: false,
      confidence: "low",
      assumptions: ["no transactions in the workload: nothing to slow down"],
    };
  }
  // Time a transaction takes now (per client), in µs.
  let baselineUs: number;
  if (clients > 0) {
    baselineUs = (clients / tps) * 1e6;
    assumptions.push(
      `${clients} concurrent client${clients === 1 ? "" : "s"}, ${tps.toFixed(0)} transactions/s: ${baselineUs.toFixed(0)} µs per transaction per client`,
    );
  } else {
    const ms = w.meanStatementMs ?? 0.1;
    baselineUs = (statementsPerSec / tps) * ms * 1000;
    assumptions.push(`client count unknown: a transaction takes its statements' server time (${ms} ms each)`);
  }
  const c = Math.max(1, clients);
  if (input.calibration) return calibratedRange(input, baselineUs, statementsPerSec, assumptions);
  const highLine =
    LINE_COST_US.highOneClient +
    ((LINE_COST_US.highAt56 - LINE_COST_US.highOneClient) * Math.min(c - 1, 55)) / 55;
  const linesPerTxn = input.linesPerSec / tps;
  const stmtsPerTxn = statementsPerSec / tps;
  const hook = input.auditing ? HOOK_COST_US : { low: 0, high: 0 };
  const addedLow = linesPerTxn * LINE_COST_US.low + stmtsPerTxn * hook.low;
  const addedHigh = linesPerTxn * highLine + stmtsPerTxn * hook.high;
  let low = addedLow / (baselineUs + addedLow);
  let high = addedHigh / (baselineUs + addedHigh);
  assumptions.push(
    `${linesPerTxn.toFixed(2)} log lines and ${stmtsPerTxn.toFixed(2)} statements per transaction; ${LINE_COST_US.low}–${highLine.toFixed(1)} µs per line (digoal, 2018, at 56 clients: 23 µs), ${hook.low}–${hook.high} µs of pgaudit hooks per statement`,
  );

  const writes = input.linesPerSec * Math.max(1, Math.ceil(input.bytesPerLine / PIPE_PAYLOAD));
  const collectorBound = writes >= COLLECTOR_BOUND_WRITES.onset;
  if (collectorBound) {
    low = Math.max(low, writes >= COLLECTOR_BOUND_WRITES.saturated ? COLLECTOR_LOSS.low : low);
    high = Math.max(high, COLLECTOR_LOSS.high);
    assumptions.push(
      `${Math.round(writes)} pipe writes/s: in the range where digoal (2018) saw the logging collector's pipe become the bottleneck (−8% to −70% at 56 clients)`,
    );
  }
  if (input.logOnDataDisk && input.entriesPerSec > 0) {
    high = Math.min(0.95, high * SAME_DISK_FACTOR);
    assumptions.push(
      "logs on the data disk: high bound x1.87 (Gold Lapel's pgAudit benchmarks: a separate log volume halved session-ALL overhead)",
    );
  }
  const latencyLow = addedLow / 1000;
  const latencyHigh = collectorBound
    ? Math.max(addedHigh / 1000, (0.63 * linesPerTxn) / 2)
    : addedHigh / 1000;
  assumptions.unshift(UNCALIBRATED_NOTE);
  return {
    throughput: { low, high },
    latencyMs: { low: latencyLow, high: latencyHigh },
    linesPerSec: input.linesPerSec,
    collectorBound,
    confidence: collectorBound || clients === 0 ? "low" : "medium",
    assumptions,
  };
}

function calibratedRange(
  input: OverheadInput,
  baselineUs: number,
  statementsPerSec: number,
  assumptions: string[],
): Overhead {
  const cal = input.calibration!;
  const tps = input.workload.transactionsPerSec;
  const linesPerTxn = input.linesPerSec / tps;
  const stmtsPerTxn = input.auditing ? statementsPerSec / tps : 0;
  const p = calibratedOverhead(cal, {
    linesPerTransaction: linesPerTxn,
    auditedStatementsPerTransaction: stmtsPerTxn,
    logElsewhere: !input.logOnDataDisk,
    baselineUsPerTransaction: baselineUs,
    statementsPerTransaction: statementsPerSec / tps,
  });
  const cost = (x: CalibratedCost): string =>
    `${x.estimate.toFixed(1)} µs [${x.low.toFixed(1)}–${x.high.toFixed(1)}]`;
  assumptions.unshift(`calibrated on ${cal.host}, ${cal.createdAt.slice(0, 10)}`);
  assumptions.push(
    `${linesPerTxn.toFixed(2)} log lines and ${stmtsPerTxn.toFixed(2)} audited statements per transaction; measured ${cost(
      !input.logOnDataDisk && cal.lineCostElsewhereUs ? cal.lineCostElsewhereUs : cal.lineCostUs,
    )} ${cal.cpu ? "of server CPU " : ""}per line${cal.statementCostUs ? `, ${cost(cal.statementCostUs)} per statement in pgaudit's hooks` : ""}${cal.transactionCostUs ? `, ${cost(cal.transactionCostUs)} per transaction that logs (the collector's wake-ups, on a busy machine)` : ""}`,
  );
  if (cal.cpu && p.cpuBound && p.idleCores) {
    const pct = (x: number): string => `${(Math.max(0, x) * 100).toFixed(1)}%`;
    assumptions.push(
      `${Math.max(0, p.addedUs.estimate).toFixed(0)} µs [${Math.max(0, p.addedUs.low).toFixed(0)}–${p.addedUs.high.toFixed(0)}] of server CPU added per transaction; if the server is CPU-bound and its statements cost what the calibration's pgbench statements did (${cal.cpu.baselineServerUsPerStatement.low.toFixed(1)} µs each, a floor): ${pct(p.cpuBound.low)}–${pct(p.cpuBound.high)}; with idle cores, only the backends' ${((1 - cal.cpu.loggerShare) * 100).toFixed(0)}% of it, without the per-transaction cost, against ${baselineUs.toFixed(0)} µs per transaction per client: ${pct(p.idleCores.low)}–${pct(p.idleCores.high)}`,
    );
  }
  const low = Math.max(0, p.low);
  const high = Math.max(low, p.high);
  return {
    throughput: { low, high },
    latencyMs: {
      // The backends' share is what a transaction waits for; the collector's runs beside it.
      low: Math.max(0, p.addedUs.low * (cal.cpu ? 1 - cal.cpu.loggerShare : 1)) / 1000,
      high: Math.max(0, p.addedUs.high) / 1000,
    },
    linesPerSec: input.linesPerSec,
    collectorBound: false,
    confidence: cal.residualStdErrUs === null ? "low" : "medium",
    assumptions,
  };
}
