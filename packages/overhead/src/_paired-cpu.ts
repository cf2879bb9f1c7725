/**
 * The overhead from CPU time, each run paired with the baseline measured around it. A busy
 * neighbour slows every process on the machine, so TPS (wall time) swings by tens of percent
 * between identical runs; CPU time per transaction swings far less, and comparing each
 * configuration's run with the baseline at the same moment cancels most of what is left. Pure.
 */
import {
  type BootstrapOptions,
  bootstrapMedian,
  median,
  type OverheadInterval,
  pairedOverheadInterval,
} from "./stats.ts";
import type { RunResult } from "./types.ts";

type PerTransaction = { server: number; logger: number; client: number };

/** CPU µs per transaction of one run, or null when its CPU time was not measured. */
export function cpuPerTransaction(run: RunResult): PerTransaction | null {
  if (!run.cpu || !(run.transactions > 0)) return null;
  const us = (sec: number): number => (sec * 1e6) / run.transactions;
  return { server: us(run.cpu.serverSec), logger: us(run.cpu.loggerSec), client: us(run.cpu.clientSec) };
}

/** The logging collector's wake-ups per transaction of one run; null where not measured (older reports). */
function wakeupsPerTransaction(run: RunResult | undefined): number | null {
  return run?.cpu?.loggerWakeups !== undefined && run.transactions > 0
    ? run.cpu.loggerWakeups / run.transactions
    : null;
}

export interface PairedRun {
  round: number;
  /** Server CPU µs per transaction the configuration added over the baseline at that moment. */
  addedServerUs: number;
  /** The logging collector's part of it. */
  addedLoggerUs: number;
  /** The collector's wake-ups per transaction over the baseline's; null where not measured. */
  addedLoggerWakeups: number | null;
  /** The run's TPS (with its lines per transaction, the rate the collector received lines at). */
  tps: number;
  /** The baseline's server CPU µs per transaction. */
  baselineServerUs: number;
  /** The baseline's server + pgbench CPU µs per transaction. */
  baselineTotalUs: number;
  /** addedServerUs / (baselineTotalUs + addedServerUs): the TPS a CPU-bound machine loses. */
  overhead: number;
}

/**
 * The baseline's CPU per transaction at a run's place in the plan: interpolated between the
 * baseline runs just before and just after it, so drift that is linear over those runs cancels;
 * the nearest one at either end of the bench.
 */
function baselineAt(baseline: readonly RunResult[], run: RunResult): PerTransaction | null {
  let before: RunResult | undefined;
  let after: RunResult | undefined;
  for (const b of baseline) {
    if (b.index < run.index && (!before || b.index > before.index)) before = b;
    if (b.index > run.index && (!after || b.index < after.index)) after = b;
  }
  const a = before && cpuPerTransaction(before);
  const z = after && cpuPerTransaction(after);
  if (a && z) {
    const w = (run.index - before!.index) / (after!.index - before!.index);
    const at = (k: keyof PerTransaction): number => a[k] + (z[k] - a[k]) * w;
    return { server: at("server"), logger: at("logger"), client: at("client") };
  }
  return a ?? z ?? null;
}

/** The baseline's collector wake-ups per transaction nearest a run in the plan (its own lines are few: checkpoints, autovacuum). */
function nearestWakeups(baseline: readonly RunResult[], run: RunResult): number | null {
  let best: RunResult | undefined;
  for (const b of baseline)
    if (
      wakeupsPerTransaction(b) !== null &&
      (!best || Math.abs(b.index - run.index) < Math.abs(best.index - run.index))
    )
      best = b;
  return wakeupsPerTransaction(best);
}

/**
 * One pair per run of the configuration that has CPU times, against the baseline at the same
 * moment (the load of other work drifts over seconds: see baselineAt). pgbench's own time is in
 * the denominator (it shares the machine) but not in the added time: auditing gives the client
 * no work, so its time would add only noise.
 */
export function pairRuns(baseline: readonly RunResult[], mine: readonly RunResult[]): PairedRun[] {
  const out: PairedRun[] = [];
  const measured = baseline.filter((b) => cpuPerTransaction(b) !== null);
  for (const run of mine) {
    const c = cpuPerTransaction(run);
    const b = baselineAt(measured, run);
    if (!c || !b) continue;
    const added = c.server - b.server;
    const total = b.server + b.client;
    const mineWakeups = wakeupsPerTransaction(run);
    const baseWakeups = nearestWakeups(measured, run);
    out.push({
      round: run.round,
      addedServerUs: added,
      addedLoggerUs: c.logger - b.logger,
      addedLoggerWakeups:
        mineWakeups !== null && baseWakeups !== null ? Math.max(0, mineWakeups - baseWakeups) : null,
      tps: run.tps,
      baselineServerUs: b.server,
      baselineTotalUs: total,
      overhead: total + added > 0 ? added / (total + added) : 0,
    });
  }
  return out;
}

export interface CpuCellSummary {
  perTransaction: PerTransaction;
  /** Null for the baseline, and when no baseline run had CPU times. */
  overhead: OverheadInterval | null;
}

/** The cell's CPU figures, or null when any of its runs lacks CPU times (then TPS is the basis). */
export function cpuCell(
  baseline: readonly RunResult[],
  mine: readonly RunResult[],
  isBaseline: boolean,
  options: BootstrapOptions,
): CpuCellSummary | null {
  const per = mine.map(cpuPerTransaction);
  if (per.length === 0 || per.some((p) => p === null)) return null;
  const perTransaction = {
    server: median(per.map((p) => p!.server)),
    logger: median(per.map((p) => p!.logger)),
    client: median(per.map((p) => p!.client)),
  };
  if (isBaseline) return { perTransaction, overhead: null };
  const pairs = pairRuns(baseline, mine);
  if (pairs.length === 0) return { perTransaction, overhead: null };
  return {
    perTransaction,
    overhead: pairedOverheadInterval(
      pairs.map((p) => p.overhead),
      options,
    ),
  };
}

/** The CPU-basis fields of a calibration point, from the cell's paired runs; null without CPU times. */
export function cpuPointFields(
  baseline: readonly RunResult[],
  mine: readonly RunResult[],
  options: BootstrapOptions,
): {
  samples: number[];
  addedUs: { median: number; low: number; high: number };
  addedLoggerUs: number;
  baselineServerUs: { median: number; low: number; high: number };
  baselineSamples: number[];
  loggerSamples: number[];
  wakeupSamples?: number[];
  tpsSamples: number[];
} | null {
  const pairs = pairRuns(baseline, mine);
  if (pairs.length === 0 || pairs.length < mine.length) return null;
  const samples = pairs.map((p) => p.addedServerUs);
  const baseServer = baseline.map(cpuPerTransaction).filter((p) => p !== null);
  return {
    samples,
    addedUs: bootstrapMedian(samples, options),
    addedLoggerUs: median(pairs.map((p) => p.addedLoggerUs)),
    baselineSamples: pairs.map((p) => p.baselineServerUs),
    loggerSamples: pairs.map((p) => p.addedLoggerUs),
    tpsSamples: pairs.map((p) => p.tps),
    ...(pairs.every((p) => p.addedLoggerWakeups !== null)
      ? { wakeupSamples: pairs.map((p) => p.addedLoggerWakeups!) }
      : {}),
    baselineServerUs: bootstrapMedian(
      baseServer.map((p) => p.server),
      options,
    ),
  };
}

/**
 * The TPS-based overhead, each run against the baseline's TPS around it (interpolated as for CPU
 * times): 1 − TPS / baseline TPS, median over runs with its bootstrap interval. What the runs
 * really lost in throughput, whatever limited them; drift that is linear over neighbouring
 * runs cancels, a neighbour's burst does not. Null with fewer than two baseline runs.
 */
export function pairedTpsOverhead(
  baseline: readonly RunResult[],
  mine: readonly RunResult[],
  options: BootstrapOptions,
): OverheadInterval | null {
  const measured = baseline.filter((b) => b.tps > 0);
  if (measured.length < 2 || mine.length === 0) return null;
  const losses: number[] = [];
  for (const run of mine) {
    let before: RunResult | undefined;
    let after: RunResult | undefined;
    for (const b of measured) {
      if (b.index < run.index && (!before || b.index > before.index)) before = b;
      if (b.index > run.index && (!after || b.index < after.index)) after = b;
    }
    const base =
      before && after
        ? before.tps + ((after.tps - before.tps) * (run.index - before.index)) / (after.index - before.index)
        : (before ?? after)!.tps;
    if (base > 0) losses.push(1 - run.tps / base);
  }
  return losses.length > 0 ? pairedOverheadInterval(losses, options) : null;
}
