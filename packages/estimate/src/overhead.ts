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
 * `log_statement = all` at 56 clients in seed 003 (0.291 ms vs 0.268 ms, one line per statement).
 */
export const LINE_COST_US: { low: number; highOneClient: number; highAt56: number } = {
  low: 2,
  highOneClient: 5,
  highAt56: 23,
};
/**
 * pgaudit's hooks per statement, in µs, whatever is logged: seed 000 calls it negligible at
 * 10–15k TPS and measurable at 1M+ inserts/s (the TimescaleDB report it cites). An assumption.
 */
export const HOOK_COST_US: { low: number; high: number } = { low: 0.2, high: 2 };
/**
 * Pipe writes per second at which the logging collector becomes the bottleneck: seed 003 saw
 * −8% at ~190k lines/s (log_statement) but −49% at ~107k lines/s (log_duration) and −70% with
 * both, at 56 clients, with perf showing the pipe's mutex (osq_lock). Onset is somewhere in
 * this range; above it, the losses seed 003 measured bound the result.
 */
export const COLLECTOR_BOUND_WRITES: { onset: number; saturated: number } = {
  onset: 100_000,
  saturated: 200_000,
};
/** Seed 003's throughput losses in the collector-bound regime (one line, two lines per statement). */
export const COLLECTOR_LOSS: { low: number; high: number } = { low: 0.08, high: 0.7 };
/**
 * Seed 000: moving the log directory to its own volume cut session-ALL overhead from 15.5% to
 * 8.3% (x1.87). Applied to the high bound when logs share the data disk.
 */
export const SAME_DISK_FACTOR = 1.87;
/** The logging collector's pipe carries messages in chunks of at most this many payload bytes (PIPE_MAX_PAYLOAD). */
const PIPE_PAYLOAD = 500;

export interface OverheadInput {
  workload: Workload;
  entriesPerSec: number;
  /** Audit and other lines per second. */
  linesPerSec: number;
  bytesPerLine: number;
  /** Whether pgaudit does anything (any class or a role): its hooks always run once loaded. */
  auditing: boolean;
  logOnDataDisk: boolean;
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
      `${clients} concurrent clients, ${tps.toFixed(0)} transactions/s: ${baselineUs.toFixed(0)} µs per transaction per client`,
    );
  } else {
    const ms = w.meanStatementMs ?? 0.1;
    baselineUs = (statementsPerSec / tps) * ms * 1000;
    assumptions.push(`client count unknown: a transaction takes its statements' server time (${ms} ms each)`);
  }
  const c = Math.max(1, clients);
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
    `${linesPerTxn.toFixed(2)} log lines and ${stmtsPerTxn.toFixed(2)} statements per transaction; ${LINE_COST_US.low}–${highLine.toFixed(1)} µs per line (seed 003 at 56 clients: 23 µs), ${hook.low}–${hook.high} µs of pgaudit hooks per statement`,
  );

  const writes = input.linesPerSec * Math.max(1, Math.ceil(input.bytesPerLine / PIPE_PAYLOAD));
  const collectorBound = writes >= COLLECTOR_BOUND_WRITES.onset;
  if (collectorBound) {
    low = Math.max(low, writes >= COLLECTOR_BOUND_WRITES.saturated ? COLLECTOR_LOSS.low : low);
    high = Math.max(high, COLLECTOR_LOSS.high);
    assumptions.push(
      `${Math.round(writes)} pipe writes/s: in the range where seed 003 saw the logging collector's pipe become the bottleneck (−8% to −70% at 56 clients)`,
    );
  }
  if (input.logOnDataDisk && input.entriesPerSec > 0) {
    high = Math.min(0.95, high * SAME_DISK_FACTOR);
    assumptions.push(
      "logs on the data disk: high bound x1.87 (seed 000: a separate log volume halved session-ALL overhead)",
    );
  }
  const latencyLow = addedLow / 1000;
  const latencyHigh = collectorBound
    ? Math.max(addedHigh / 1000, (0.63 * linesPerTxn) / 2)
    : addedHigh / 1000;
  return {
    throughput: { low, high },
    latencyMs: { low: latencyLow, high: latencyHigh },
    linesPerSec: input.linesPerSec,
    collectorBound,
    confidence: collectorBound || clients === 0 ? "low" : "medium",
    assumptions,
  };
}
