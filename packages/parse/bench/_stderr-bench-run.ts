/**
 * Shared harness for the stderr and syslog benchmarks (zod's traps: a fixed iteration count,
 * gc() between samples, the minimum time, a result that is consumed). Writes
 * `.bench/<suite>.json` like bench/_bench-harness.ts: `{suite, machine, date, file, bytes, load, results: [{name, entriesPerSec, mbPerSec, ...}]}`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import type { LogParser, LogRecord, RecordSink } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { Bench } from "tinybench";

export interface Case {
  name: string;
  make: (sink: RecordSink) => LogParser;
  /** Extra work per record (e.g. decoding its pgAudit payload); returns 1 when it found an entry. */
  perRecord?: (record: LogRecord) => number;
}

const CHUNK = 64 * 1024;

export async function runSuite(
  suite: string,
  file: string,
  data: Buffer,
  cases: Case[],
  iterations = 8,
): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const counts = new Map<string, { records: number; entries: number }>();
  const bench = new Bench({ iterations, warmupIterations: 2, time: 0, warmupTime: 0 });
  for (const c of cases) {
    bench.add(c.name, () => {
      let records = 0;
      let entries = 0;
      const per = c.perRecord;
      const parser = c.make({
        record(r) {
          records++;
          if (per !== undefined) entries += per(r);
        },
        malformed() {},
      });
      for (let pos = 0; pos < data.length; pos += CHUNK) parser.push(data.subarray(pos, pos + CHUNK));
      parser.end();
      counts.set(c.name, { records, entries });
    });
    if (gc) bench.addEventListener("cycle", () => gc());
  }
  console.log(`${suite}: ${(data.length / 1e6).toFixed(1)} MB, load ${loadavg()[0]!.toFixed(2)}`);
  await bench.run();
  const results = bench.tasks.map((t) => {
    const r = t.result as { latency?: { min: number } } | undefined;
    const min = r?.latency?.min ?? Number.NaN; // ms
    const n = counts.get(t.name)!;
    const perSec = 1000 / min;
    return {
      name: t.name,
      records: n.records,
      entries: n.entries,
      entriesPerSec: Math.round((n.entries || n.records) * perSec),
      recordsPerSec: Math.round(n.records * perSec),
      mbPerSec: Number(((data.length / 1e6) * perSec).toFixed(1)),
      minMs: Number(min.toFixed(2)),
    };
  });
  console.table(results);
  const dir = join(repoRoot(), ".bench");
  mkdirSync(dir, { recursive: true });
  const machine = `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`;
  // Same document shape as bench/_bench-harness.ts writes for csvlog/jsonlog, for scripts/bench.mjs.
  const doc = {
    suite,
    machine,
    date: new Date().toISOString(),
    file,
    bytes: data.length,
    load: loadavg()[0],
    results,
  };
  writeFileSync(join(dir, `${suite}.json`), `${JSON.stringify(doc, null, 2)}\n`);
}
