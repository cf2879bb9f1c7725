/**
 * Reading what pgbench reports: the summary on stdout (TPS, transactions, failures) and its
 * per-transaction log (`-l`), from which latency percentiles come — pgbench's own summary gives
 * only the mean.
 */
import { quantileSorted } from "./stats.ts";

export interface PgbenchSummary {
  tps: number;
  transactions: number;
  failed: number;
  /** pgbench's mean latency, ms (null when it did not print one). */
  meanLatencyMs: number | null;
}

/** Parses pgbench's summary; null when it holds no `tps =` line (pgbench failed). */
export function parsePgbenchSummary(stdout: string): PgbenchSummary | null {
  const tps = /^tps = ([0-9.]+) \(without initial connection time\)/m.exec(stdout);
  if (!tps) return null;
  const processed = /^number of transactions actually processed: (\d+)/m.exec(stdout);
  const failed = /^number of failed transactions: (\d+)/m.exec(stdout);
  const latency = /^latency average = ([0-9.]+) ms/m.exec(stdout);
  return {
    tps: Number(tps[1]),
    transactions: processed ? Number(processed[1]) : 0,
    failed: failed ? Number(failed[1]) : 0,
    meanLatencyMs: latency ? Number(latency[1]) : null,
  };
}

export interface LatencyPercentiles {
  transactions: number;
  meanMs: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * Latency percentiles from pgbench's per-transaction log lines
 * (`client_id transaction_no time script_no time_epoch time_us [schedule_lag]`, time in µs).
 * Failed transactions (`failed`/`skipped` in the time column) are left out; so are lines that
 * are not of that shape, counted in `malformed`.
 */
export function latencyFromPgbenchLog(text: string): LatencyPercentiles & { malformed: number } {
  const micros: number[] = [];
  let malformed = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const fields = line.split(" ");
    const time = fields[2];
    if (fields.length < 6 || time === undefined) {
      malformed++;
      continue;
    }
    if (time === "failed" || time === "skipped") continue;
    const us = Number(time);
    if (!Number.isFinite(us)) {
      malformed++;
      continue;
    }
    micros.push(us);
  }
  micros.sort((a, b) => a - b);
  const ms = (us: number): number => us / 1000;
  const sum = micros.reduce((a, b) => a + b, 0);
  return {
    transactions: micros.length,
    meanMs: micros.length > 0 ? ms(sum / micros.length) : Number.NaN,
    p50Ms: ms(quantileSorted(micros, 0.5)),
    p95Ms: ms(quantileSorted(micros, 0.95)),
    p99Ms: ms(quantileSorted(micros, 0.99)),
    maxMs: micros.length > 0 ? ms(micros.at(-1)!) : Number.NaN,
    malformed,
  };
}
