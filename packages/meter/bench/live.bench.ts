/**
 * LiveMeter.entry() throughput: the sidecar's meter must not be its bottleneck (target ≥ 2M
 * entries/s, above the parsers' 0.5–1M). Compared in the same run with analyze's exact
 * VolumeTally. Entries are synthetic but shaped like pgbench under `pgaudit.log = all`: a
 * handful of classes/commands/users/databases, and every key a fresh string, as a parser hands
 * them over (a reused string would keep its hash cached and flatter the numbers).
 *
 * Against zod's traps: load printed first, cases interleaved round by round, gc() before each
 * sample, best of ROUNDS kept, results consumed. Writes `.bench/meter-live.json` in the shape
 * scripts/bench.mjs renders into docs/benchmarks.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { LiveMeter, VolumeTally } from "@auditpipe/meter";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { Bench } from "tinybench";

const ENTRIES = 500_000;
const ROUNDS = 7;

type Pair = [AuditEntry, LogRecord];

const fresh = (s: string): string => Buffer.from(s).toString("latin1");
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;

/** `objects` distinct object names; Infinity: every entry names a new object (the sketch evicts on each). */
function workload(objects: number): Pair[] {
  const classes = ["READ", "WRITE", "READ", "WRITE", "MISC"];
  const commands = ["SELECT", "UPDATE", "SELECT", "INSERT", "BEGIN"];
  const users = Array.from({ length: 20 }, (_, i) => `app_user_${i}`);
  const dbs = ["bench", "shop", "postgres"];
  const out: Pair[] = [];
  for (let i = 0; i < ENTRIES; i++) {
    const k = i % 5;
    const object = Number.isFinite(objects) ? `public.pgbench_t${(i * 7919) % objects}` : `public.t_${i}`;
    const entry: AuditEntry = {
      auditType: fresh("SESSION"),
      statementId: i,
      substatementId: 1,
      class: fresh(classes[k]!),
      command: fresh(commands[k]!),
      objectType: k === 4 ? "" : "TABLE",
      objectName: k === 4 ? "" : fresh(object),
      statement: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;",
      parameter: "<not logged>",
      rows: null,
    };
    const record = {
      offset: i * 200,
      size: 180 + (i % 40),
      timestamp: "2026-11-23 07:56:00.123 UTC",
      user: fresh(pick(users, i)),
      database: fresh(pick(dbs, i)),
    } as LogRecord;
    out.push([entry, record]);
  }
  return out;
}

interface Case {
  name: string;
  data: Pair[];
  run: (data: Pair[]) => number;
  baseline?: boolean;
}

function live(data: Pair[]): number {
  const meter = new LiveMeter();
  for (const [e, r] of data) meter.entry(e, r);
  return meter.snapshot({ limit: 10 }).totals.bytes;
}

function volumeTally(data: Pair[]): number {
  const tally = new VolumeTally();
  for (const [e, r] of data) tally.addEntry(e, r);
  return tally.bytes;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) console.warn("no gc(): run with node --expose-gc (pnpm bench does) for stable numbers");
console.log(`load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores`);
const few = workload(1000);
const distinct = workload(Number.POSITIVE_INFINITY);
const bytes = few.reduce((sum, [, r]) => sum + r.size, 0);
const cases: Case[] = [
  { name: "LiveMeter.entry, 1,000 objects (sketch not full)", data: few, run: live },
  { name: "LiveMeter.entry, every object new (sketch evicting)", data: distinct, run: live },
  { name: "VolumeTally.addEntry (analyze, exact maps)", data: few, run: volumeTally, baseline: true },
];

const best = new Map<string, number>();
let checksum = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 });
    bench.add(c.name, () => {
      checksum += c.run(c.data);
    });
    gc?.();
    await bench.run();
    const ms = (bench.tasks[0]!.result as { latency?: { min: number } }).latency?.min ?? Number.NaN;
    // Round 0 warms the JIT up and is not kept.
    if (round > 0 && !(ms >= (best.get(c.name) ?? Number.POSITIVE_INFINITY))) best.set(c.name, ms);
  }
}
if (checksum === -1) console.log("unreachable"); // keeps the results alive

const results = cases.map((c) => {
  const ms = best.get(c.name)!;
  const perSec = 1000 / ms;
  const caseBytes = c.data.reduce((sum, [, r]) => sum + r.size, 0);
  return {
    name: c.name,
    records: c.data.length,
    entries: c.data.length,
    entriesPerSec: Math.round(c.data.length * perSec),
    recordsPerSec: Math.round(c.data.length * perSec),
    mbPerSec: Number(((caseBytes / 1e6) * perSec).toFixed(1)),
    minMs: Number(ms.toFixed(1)),
    ...(c.baseline ? { baseline: true } : {}),
  };
});
console.table(results);
const dir = join(repoRoot(), ".bench");
mkdirSync(dir, { recursive: true });
const machine = `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`;
const doc = {
  suite: "meter-live",
  machine,
  date: new Date().toISOString(),
  bytes,
  load: loadavg()[0],
  results,
};
writeFileSync(join(dir, "meter-live.json"), `${JSON.stringify(doc, null, 2)}\n`);
