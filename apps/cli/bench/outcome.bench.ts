/**
 * What the outcome stage costs (docs/architecture.md, "Outcomes"), before and after, interleaved:
 * - the join's CPU per entry in the sidecar's own code path (_cpu-stages.ts: encode, then encode
 *   and the join), best of the rounds;
 * - `auditpipe analyze` of the reference csvlog and stderr files: CPU (user + system, every
 *   thread) and wall time of the built CLI, this build against another (AUDITPIPE_BENCH_BASELINE_BIN,
 *   e.g. main's bin/auditpipe.js), rounds interleaved;
 * - `auditpipe run` over the reference csvlog into a local directory: CPU per entry of the whole
 *   process tree once every entry is acknowledged, both builds interleaved;
 * - latency from appending a real record to its acknowledgement by the sink (`pipeline.sinks`
 *   in GET /v1/volume), one record every 200 ms, both builds: the outcome stage may hold a batch
 *   up to 2 s past its age while its entries await their outcome.
 * Writes `.bench/outcome.json`; scripts/bench.mjs renders it into docs/benchmarks.md.
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { REFERENCE_LOG_LINE_PREFIX, referenceData } from "../../../packages/parse/bench/_reference-data.ts";
import { getJson, spawnSidecar } from "../test/_sidecar.ts";
import { cpuStages } from "./_cpu-stages.ts";
import { csvlogRecords } from "./_sidecar-bench.ts";

const ROUNDS = 3;
const THIS = join(repoRoot(), "apps", "cli", "bin", "auditpipe.js");
const BASELINE = process.env.AUDITPIPE_BENCH_BASELINE_BIN;
const builds = [
  { name: "this build", bin: THIS },
  ...(BASELINE ? [{ name: "baseline", bin: BASELINE }] : []),
];
const load = () => Number(loadavg()[0]!.toFixed(2));
const loads: Record<string, [number, number]> = {};
const refs = await referenceData();

/** CPU seconds (user + system) of a finished command and its children, and its wall seconds. */
function timed(args: string[]): { cpu: number; wall: number; stdout: string } {
  const r = spawnSync("/usr/bin/time", ["-f", "%U %S %e", process.execPath, ...args], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed:\n${r.stderr}`);
  const [user, sys, wall] = r.stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
  return { cpu: user! + sys!, wall: wall!, stdout: r.stdout };
}

// 1. The join in the sidecar's code path.
let before = load();
const stages = await cpuStages(refs.csvlog, ROUNDS);
loads.stages = [before, load()];

// 2. analyze, whole command.
before = load();
const analyze: { build: string; file: string; entries: number; cpuSeconds: number; wallSeconds: number }[] =
  [];
for (const [format, file, extra] of [
  ["csvlog", refs.csvlog, []],
  ["stderr", refs.stderr, ["--prefix", REFERENCE_LOG_LINE_PREFIX]],
] as const) {
  const best = new Map<string, { cpu: number; wall: number; entries: number }>();
  for (let round = 0; round < ROUNDS; round++)
    for (const b of builds) {
      const r = timed([b.bin, "analyze", "--json", "--format", format, ...extra, file]);
      const entries = (JSON.parse(r.stdout) as { entries: number }).entries;
      const prev = best.get(b.name);
      if (!prev || r.cpu < prev.cpu) best.set(b.name, { cpu: r.cpu, wall: r.wall, entries });
    }
  for (const [build, r] of best)
    analyze.push({ build, file: format, entries: r.entries, cpuSeconds: r.cpu, wallSeconds: r.wall });
}
loads.analyze = [before, load()];

/** User + system CPU seconds of a process and its descendants (/proc, 10 ms ticks). */
function treeCpu(pid: number): number {
  let sum = 0;
  const walk = (p: number): void => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ");
      sum += (Number(f[11]) + Number(f[12])) / 100;
      for (const c of readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/))
        if (c) walk(Number(c));
    } catch {}
  };
  walk(pid);
  return sum;
}

interface Volume {
  totals: { entries: number };
  pipeline: { sinks: Record<string, { entries: number }> };
}

// 3. The sidecar over the reference csvlog, to the last acknowledgement.
before = load();
const sidecar: { build: string; entries: number; cpuUsPerEntry: number; seconds: number }[] = [];
const entriesIn = analyze.find((a) => a.file === "csvlog")!.entries;
for (let round = 0; round < 2; round++)
  for (const b of builds) {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-outcome-"));
    mkdirSync(join(work, "log"));
    symlinkSync(refs.csvlog, join(work, "log", "postgresql.csv"));
    const s = spawnSidecar(
      [
        "--log-dir",
        join(work, "log"),
        "--format",
        "csvlog",
        "--sink",
        join(work, "sink"),
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
      ],
      {},
      { built: true, bin: b.bin },
    );
    try {
      const url = await s.url();
      const t0 = performance.now();
      for (;;) {
        const v = await getJson<Volume>(`${url}/v1/volume`);
        if ((v.pipeline.sinks["local-dir"]?.entries ?? 0) >= entriesIn) break;
        if (performance.now() - t0 > 600_000) throw new Error("the sidecar did not catch up");
        await new Promise((r) => setTimeout(r, 100));
      }
      const cpu = treeCpu(s.child.pid!);
      const row = {
        build: b.name,
        entries: entriesIn,
        cpuUsPerEntry: Number(((cpu * 1e6) / entriesIn).toFixed(2)),
        seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
      };
      const prev = sidecar.find((r) => r.build === b.name);
      if (!prev) sidecar.push(row);
      else if (row.cpuUsPerEntry < prev.cpuUsPerEntry) Object.assign(prev, row);
    } finally {
      s.child.kill("SIGTERM");
      await s.exited;
      rmSync(work, { recursive: true, force: true });
    }
  }
loads.sidecar = [before, load()];

// 4. Append → acknowledged, one real record every 200 ms.
before = load();
const APPENDS = 40;
const records = csvlogRecords(refs.csvlog, APPENDS + 1);
const latency: { build: string; p50Ms: number; p99Ms: number; maxMs: number }[] = [];
for (const b of builds) {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-outcome-lat-"));
  mkdirSync(join(work, "log"));
  const file = join(work, "log", "postgresql-latency.csv");
  const fd = openSync(file, "a");
  writeSync(fd, records[0]!);
  const s = spawnSidecar(
    [
      "--log-dir",
      join(work, "log"),
      "--format",
      "csvlog",
      "--sink",
      join(work, "sink"),
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
    ],
    {},
    { built: true, bin: b.bin },
  );
  try {
    const url = await s.url();
    const acked = async () =>
      (await getJson<Volume>(`${url}/v1/volume`)).pipeline.sinks["local-dir"]?.entries ?? 0;
    const appendedAt: number[] = [];
    const ackedAt: number[] = [];
    let done = false;
    const poller = (async () => {
      while (!done) {
        const n = (await acked()) - 1;
        const at = performance.now();
        while (ackedAt.length < n) ackedAt.push(at);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const t0 = performance.now();
    for (let i = 0; i < APPENDS; i++) {
      const wait = t0 + i * 200 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      appendedAt.push(performance.now());
      writeSync(fd, records[i + 1]!);
    }
    const deadline = performance.now() + 30_000;
    while (ackedAt.length < APPENDS && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    done = true;
    await poller;
    const delays = appendedAt
      .slice(0, ackedAt.length)
      .map((t, i) => ackedAt[i]! - t)
      .sort((a, b) => a - b);
    const q = (p: number) =>
      Number(delays[Math.min(delays.length - 1, Math.floor(p * delays.length))]!.toFixed(0));
    latency.push({ build: b.name, p50Ms: q(0.5), p99Ms: q(0.99), maxMs: Number(delays.at(-1)!.toFixed(0)) });
  } finally {
    closeSync(fd);
    s.child.kill("SIGTERM");
    await s.exited;
    rmSync(work, { recursive: true, force: true });
  }
}
loads.latency = [before, load()];

const doc = {
  suite: "outcome",
  kind: "outcome",
  machine: `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`,
  date: new Date().toISOString(),
  baseline: BASELINE ?? null,
  loads,
  stages: stages.filter((s) => s.name.startsWith("encode") || s.name.startsWith("outcome")),
  analyze,
  sidecar,
  latency,
};
mkdirSync(join(repoRoot(), ".bench"), { recursive: true });
writeFileSync(join(repoRoot(), ".bench", "outcome.json"), `${JSON.stringify(doc, null, 2)}\n`);
console.log(JSON.stringify(doc, null, 2));
