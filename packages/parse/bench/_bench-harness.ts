/**
 * Harness of the csvlog/jsonlog benchmarks, built against zod's traps: it reports the machine's
 * load first; interleaves the compared cases (round-robin rounds, each case once per round);
 * calls gc() before every sample and keeps the minimum; and consumes every result (counts and a
 * checksum) so no work can be optimised away. External baselines (pgbadger) are timed by the
 * caller and passed in. Writes `.bench/<suite>.json`, which scripts/bench.mjs turns into
 * docs/benchmarks.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { Bench } from "tinybench";

/** Chunk size of the pushes: a typical file read. */
export const CHUNK_BYTES = 64 * 1024;

export interface Counts {
  records: number;
  entries: number;
  /** Anything derived from the results, so they are really used. */
  checksum: number;
}

export interface BenchCase {
  name: string;
  /** Parses all of `data` once and returns what it found. */
  run: (data: Buffer) => Counts;
  /** A reference implementation the others are compared with. */
  baseline?: boolean;
}

export interface BenchResult {
  name: string;
  records: number;
  entries: number;
  entriesPerSec: number;
  recordsPerSec: number;
  mbPerSec: number;
  minMs: number;
  baseline?: boolean;
}

export function measured(
  name: string,
  counts: Counts,
  ms: number,
  bytes: number,
  baseline = false,
): BenchResult {
  const perSec = 1000 / ms;
  return {
    name,
    records: counts.records,
    entries: counts.entries,
    entriesPerSec: Math.round((counts.entries || counts.records) * perSec),
    recordsPerSec: Math.round(counts.records * perSec),
    mbPerSec: Number(((bytes / 1e6) * perSec).toFixed(1)),
    minMs: Number(ms.toFixed(1)),
    ...(baseline ? { baseline: true } : {}),
  };
}

/** Runs `rounds` interleaved rounds of every case and returns each case's best time. */
export async function runCases(data: Buffer, cases: BenchCase[], rounds: number): Promise<BenchResult[]> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) console.warn("no gc(): run with node --expose-gc for stable numbers");
  const load = loadavg()[0]!;
  console.log(
    `load average ${load.toFixed(2)} on ${cpus().length} cores${load > 0.5 ? " (busy machine: numbers will be low)" : ""}`,
  );
  const best = new Map<string, { ms: number; counts: Counts }>();
  let sink = 0;
  for (let round = 0; round < rounds; round++) {
    for (const c of cases) {
      const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 });
      let counts: Counts = { records: 0, entries: 0, checksum: 0 };
      bench.add(c.name, () => {
        counts = c.run(data);
      });
      gc?.();
      await bench.run();
      const ms = (bench.tasks[0]!.result as { latency?: { min: number } }).latency?.min ?? Number.NaN;
      sink += counts.checksum;
      const prev = best.get(c.name);
      if (round > 0 && (prev === undefined || ms < prev.ms)) best.set(c.name, { ms, counts });
      if (round === 0 && rounds === 1) best.set(c.name, { ms, counts });
    }
  }
  if (sink === -1) console.log("unreachable"); // keeps the checksums alive
  return cases.map((c) => {
    const b = best.get(c.name)!;
    return measured(c.name, b.counts, b.ms, data.length, c.baseline);
  });
}

export function writeSuite(suite: string, file: string, bytes: number, results: BenchResult[]): void {
  console.table(results);
  const dir = join(repoRoot(), ".bench");
  mkdirSync(dir, { recursive: true });
  const machine = `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`;
  const doc = { suite, machine, date: new Date().toISOString(), file, bytes, load: loadavg()[0], results };
  writeFileSync(join(dir, `${suite}.json`), `${JSON.stringify(doc, null, 2)}\n`);
}
