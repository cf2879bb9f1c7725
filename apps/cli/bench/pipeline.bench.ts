/**
 * The sidecar's pipeline against the design's targets, on real pgaudit logs:
 * - throughput: FileSource → LiveMeter → LocalDirSink (NDJSON in its default compression, fsynced) over the reference
 *   csvlog and stderr files, against parse-only over the same file in the same run, interleaved;
 * - peak RSS of the real `auditpipe run` process reading ~250 MB and ~1 GB files;
 * - tail latency: append → counted in GET /v1/volume, p50/p99;
 * - impact on PostgreSQL: pgbench TPS with the sidecar running vs without, interleaved;
 * - CPU per entry of the real sidecar shipping to MinIO (gzip and zstd; its default compaction,
 *   adopt: none on the database host), by kind of thread, and where it goes stage by stage; the
 *   compaction child's CPU per row compacted (`auditpipe compact` off the host, or the sidecar's
 *   child with --compaction child), on one shipped host-hour on its own; its start-up CPU with a cold and a warm compile cache. With
 *   AUDITPIPE_BENCH_BASELINE_BIN=<another build's bin/auditpipe.js>, that build too, interleaved;
 *   gzip -6, zstd -1 and node -e '' between its runs, the yardsticks of issue 24's ratios;
 * - analyze: `auditpipe analyze` on every core and with --jobs 1 against csv-parse splitting the
 *   same file, interleaved.
 * Writes `.bench/pipeline.json`; scripts/bench.mjs renders it into docs/benchmarks.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import { DEFAULT_COMPRESSION } from "@auditpipe/ship";
import { repoRoot, startMinio } from "@auditpipe/testkit";
import { landingHour } from "../../../packages/compact/bench/_landing-hour.ts";
import { REFERENCE_LOG_LINE_PREFIX, referenceData } from "../../../packages/parse/bench/_reference-data.ts";
import { analyzeVsCsvParse } from "./_analyze-bench.ts";
import { type Anchors, bestAnchors, commandCpuSeconds, measureAnchors } from "./_anchors.ts";
import { type CompactionChildRun, compactionChild } from "./_compaction-child.ts";
import { cpuStages } from "./_cpu-stages.ts";
import { runParseOnly, runPipeline } from "./_pipeline.ts";
import {
  pgbenchImpact,
  type RssResult,
  type StartCpuResult,
  sidecarRss,
  sidecarStartCpu,
  tailLatency,
} from "./_sidecar-bench.ts";

const ROUNDS = 3;
const only = process.env.AUDITPIPE_BENCH_PIPELINE_PARTS?.split(",") ?? [
  "throughput",
  "rss",
  "latency",
  "pgbench",
  "cpu",
  "analyze",
];
const gc = (globalThis as { gc?: () => void }).gc;
const load = () => loadavg()[0]!;
/** Load average (1 min) before and after each part, by part: other agents share the machine. */
const loads: Record<string, [number, number]> = {};
const round2 = (n: number) => Number(n.toFixed(2));
console.log(
  `load average ${load().toFixed(2)} on ${cpus().length} cores${load() > 0.5 ? " (busy machine: figures will be low)" : ""}`,
);

const refs = await referenceData();
const files: { format: LogFormat; file: string; prefix?: string }[] = [
  { format: "csvlog", file: refs.csvlog },
  { format: "stderr", file: refs.stderr, prefix: REFERENCE_LOG_LINE_PREFIX },
];

interface ThroughputResult {
  format: LogFormat;
  file: string;
  bytes: number;
  entries: number;
  objects: number;
  objectBytes: number;
  pipeline: { bestEntriesPerSec: number; medianEntriesPerSec: number; bestMs: number };
  parseOnly: { bestEntriesPerSec: number; bestMs: number };
  /** pipeline best / parse-only best. */
  ratio: number;
  /** The local sink's compression (its default). */
  compression: string;
  rounds: { pipelineMs: number; parseMs: number; load: number }[];
}

const doc: Record<string, unknown> = {
  suite: "pipeline",
  kind: "pipeline",
  machine: `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`,
  date: new Date().toISOString(),
  targets: { entriesPerSec: 250_000, peakRssMb: 200, p99Ms: 250, tpsRatio: 0.99 },
};

if (only.includes("throughput")) {
  const before = round2(load());
  const throughput: ThroughputResult[] = [];
  for (const { format, file, prefix } of files) {
    const rounds: ThroughputResult["rounds"] = [];
    let last: Awaited<ReturnType<typeof runPipeline>> | undefined;
    let parsed = 0;
    // Interleaved: parse-only and the pipeline alternate within every round; round 0 warms up.
    for (let round = 0; round <= ROUNDS; round++) {
      gc?.();
      const parse = await runParseOnly(file, format, prefix);
      gc?.();
      const run = await runPipeline(file, format, prefix);
      if (run.entries !== parse.entries)
        throw new Error(
          `${format}: the pipeline shipped ${run.entries} entries, parsing finds ${parse.entries}`,
        );
      parsed += parse.checksum;
      last = run;
      if (round > 0)
        rounds.push({
          pipelineMs: Math.round(run.ms),
          parseMs: Math.round(parse.ms),
          load: Number(load().toFixed(2)),
        });
      console.log(
        `  ${format} round ${round}: pipeline ${run.ms.toFixed(0)} ms, parse-only ${parse.ms.toFixed(0)} ms`,
      );
    }
    if (parsed === -1) console.log("unreachable"); // the checksums are consumed
    const entries = last!.entries;
    const bestPipe = Math.min(...rounds.map((r) => r.pipelineMs));
    const medPipe = [...rounds.map((r) => r.pipelineMs)].sort((a, b) => a - b)[
      Math.floor(rounds.length / 2)
    ]!;
    const bestParse = Math.min(...rounds.map((r) => r.parseMs));
    const { statSync } = await import("node:fs");
    throughput.push({
      compression: DEFAULT_COMPRESSION,
      format,
      file,
      bytes: statSync(file).size,
      entries,
      objects: last!.objects,
      objectBytes: last!.objectBytes,
      pipeline: {
        bestEntriesPerSec: Math.round(entries / (bestPipe / 1000)),
        medianEntriesPerSec: Math.round(entries / (medPipe / 1000)),
        bestMs: bestPipe,
      },
      parseOnly: { bestEntriesPerSec: Math.round(entries / (bestParse / 1000)), bestMs: bestParse },
      ratio: Number((bestParse / bestPipe).toFixed(2)),
      rounds,
    });
  }
  console.table(
    throughput.map((t) => ({
      format: t.format,
      ...t.pipeline,
      parseOnly: t.parseOnly.bestEntriesPerSec,
      ratio: t.ratio,
    })),
  );
  doc.throughput = throughput;
  loads.throughput = [before, round2(load())];
}

if (only.includes("rss")) {
  const before = round2(load());
  const csv = files[0]!;
  const perCopy = (await runParseOnly(csv.file, "csvlog")).entries;
  const rss = [];
  // ~250 MB and ~1 GB: the same file repeated.
  // As docs/operations.md deploys it (NODE_OPTIONS caps the heap, one process), and once as plain
  // `auditpipe run` (the launcher replaces itself with node under its own cap: one process too).
  const nodeOptions = { NODE_OPTIONS: "--max-old-space-size=128 --max-semi-space-size=4" };
  for (const [target, env, how] of [
    [250e6, nodeOptions, `NODE_OPTIONS="${nodeOptions.NODE_OPTIONS}"`],
    [1e9, nodeOptions, `NODE_OPTIONS="${nodeOptions.NODE_OPTIONS}"`],
    [250e6, {}, "no NODE_OPTIONS (the launcher's own limits)"],
  ] as const) {
    const copies = Math.max(1, Math.round(target / (await import("node:fs")).statSync(csv.file).size));
    const r = { how, ...(await sidecarRss(csv.file, perCopy, copies, env)) };
    console.log(
      `  sidecar over ${(r.fileBytes / 1e6).toFixed(0)} MB: peak RSS ${r.peakRssMb} MB, ${r.entriesPerSec} entries/s`,
    );
    rss.push(r);
  }
  doc.rss = rss;
  // Start-up CPU, best of three (a start is short: one slow start on a busy machine says little); the
  // launcher run as a command, by its `#!` line, as the deploy recipes run it.
  const starts = [];
  for (let i = 0; i < 3; i++) starts.push(await sidecarStartCpu(3, nodeOptions, undefined, true));
  doc.startCpu = starts.sort((a, b) => a.cpuToReady - b.cpuToReady)[0];
  console.log(`  sidecar start: ${JSON.stringify(doc.startCpu)}`);
  loads.rss = [before, round2(load())];
}

if (only.includes("latency")) {
  const before = round2(load());
  const latency = await tailLatency(files[0]!.file, 1000, 10);
  console.log(`  tail latency: p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms, max ${latency.maxMs} ms`);
  doc.latency = latency;
  loads.latency = [before, round2(load())];
}

if (only.includes("pgbench")) {
  const before = round2(load());
  const impact = await pgbenchImpact(5, 8, 2, load);
  console.log(
    `  pgbench with/without the sidecar: ${impact.medianWith}/${impact.medianWithout} = ${impact.ratio}; with a busy loop of its CPU share: ${impact.busyRatio}`,
  );
  doc.pgbench = impact;
  loads.pgbench = [before, round2(load())];
}

if (only.includes("cpu")) {
  const before = round2(load());
  const csv = files[0]!;
  const perCopy = (await runParseOnly(csv.file, "csvlog")).entries;
  const nodeOptions = { NODE_OPTIONS: "--max-old-space-size=128 --max-semi-space-size=4" };
  const baselineBin = process.env.AUDITPIPE_BENCH_BASELINE_BIN;
  const builds: { build: string; bin?: string }[] = [
    { build: "this build" },
    // AUDITPIPE_BENCH_BASELINE_NAME says what it is, e.g. "main at 24e8b86".
    ...(baselineBin
      ? [{ build: process.env.AUDITPIPE_BENCH_BASELINE_NAME ?? "baseline", bin: baselineBin }]
      : []),
  ];
  const minio = await startMinio();
  const runs: (RssResult & { build: string; compression: string })[] = [];
  // This build runs its default configuration, compaction adopt (nothing compacted on the host).
  // A baseline build from before adopt was the default runs with compaction off: its child caught
  // in the steady window counted whatever part of an hour had landed by then. The child is
  // measured apart, on a whole hour: what `auditpipe compact` costs off the host, or what
  // --compaction child adds on it.
  const compactions: (CompactionChildRun & { build: string })[] = [];
  const hour = await landingHour(DEFAULT_COMPRESSION);
  const thisBin = join(repoRoot(), "apps", "cli", "bin", "auditpipe.js");
  // gzip -6, zstd -1 and node -e '' measured between the sidecar's runs, on the same file.
  const anchors: Anchors[] = [];
  const starts: (StartCpuResult & { build: string; cache: "cold" | "warm" })[] = [];
  try {
    const credentials = {
      AWS_ACCESS_KEY_ID: minio.accessKeyId,
      AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
    };
    // Two copies of the reference file (~240 MB), as docs/operations.md deploys it; builds and
    // compressions interleaved in every round, the lowest steady CPU of the rounds kept.
    for (let round = 0; round < 2; round++)
      for (const compression of ["gzip", "zstd"]) {
        anchors.push(measureAnchors(csv.file, perCopy));
        console.log(`  anchors: ${JSON.stringify(anchors.at(-1))}`);
        for (const { build, bin } of builds) {
          const bucket = `cpu-${compression}-${round}-${build.replace(/\W/g, "")}`;
          await minio.createBucket(bucket);
          const sink = {
            sink: `s3://${bucket}/audit`,
            name: "s3",
            args: [
              ...["--s3-endpoint", minio.endpoint, "--s3-region", minio.region, "--s3-force-path-style"],
              ...["--compression", compression, "--batch-max-age-ms", "1000"],
              ...(bin === undefined ? [] : ["--compact-ms", "0"]),
            ],
          };
          const r = await sidecarRss(csv.file, perCopy, 2, { ...nodeOptions, ...credentials }, sink, bin);
          console.log(
            `  ${build}, ${compression}, round ${round}: ${r.cpuMicrosPerEntry.steady} µs/entry steady ${JSON.stringify(r.cpuMicrosPerEntry.threads)}, ${r.steadyEntriesPerSec} entries/s, peak RSS ${r.peakRssMb} MB`,
          );
          const kept = runs.findIndex((k) => k.build === build && k.compression === compression);
          if (kept < 0) runs.push({ ...r, build, compression });
          else if (r.cpuMicrosPerEntry.steady < runs[kept]!.cpuMicrosPerEntry.steady)
            runs[kept] = { ...r, build, compression };
        }
        for (const { build, bin } of compression === DEFAULT_COMPRESSION ? builds : []) {
          const c = compactionChild(bin ?? thisBin, hour);
          console.log(
            `  ${build}, compaction child, round ${round}: ${c.cpuMicrosPerRow} µs/row (${c.cpuS} s for ${c.rows} rows), peak RSS ${Math.round(c.maxRssMb)} MB`,
          );
          const kept = compactions.findIndex((k) => k.build === build);
          if (kept < 0) compactions.push({ ...c, build });
          else if (c.cpuS < compactions[kept]!.cpuS) compactions[kept] = { ...c, build };
        }
      }
  } finally {
    await minio.stop();
  }
  // Start-up (local sink, empty log directory): a fresh compile cache and start-up snapshot
  // directory (the first start builds the blob), then the same ones again; the launcher run as a
  // command, by its `#!` line, as the deploy recipes run it.
  for (let round = 0; round < 3; round++)
    for (const { build, bin } of builds) {
      const cache = mkdtempSync(join(tmpdir(), "auditpipe-bench-compile-cache-"));
      try {
        for (const state of ["cold", "warm"] as const) {
          const caches = { NODE_COMPILE_CACHE: cache, AUDITPIPE_SNAPSHOT_CACHE: join(cache, "snapshot") };
          const r = await sidecarStartCpu(3, { ...nodeOptions, ...caches }, bin, true);
          const kept = starts.findIndex((k) => k.build === build && k.cache === state);
          if (kept < 0) starts.push({ ...r, build, cache: state });
          else if (r.cpuToReady < starts[kept]!.cpuToReady) starts[kept] = { ...r, build, cache: state };
        }
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    }
  anchors.push(measureAnchors(csv.file, perCopy));
  console.log(`  start-up: ${JSON.stringify(starts)}`);
  const stages = await cpuStages(csv.file, 3);
  console.table(stages);
  const anchor = bestAnchors(anchors);
  const ratios = targetRatios(runs, compactions, starts, anchor);
  console.log(`  targets as ratios: ${JSON.stringify(ratios)}`);
  doc.cpu = {
    runs,
    compactions,
    starts,
    stages,
    anchors: anchor,
    anchorRuns: anchors,
    ratios,
    /** This build's sidecar ran its default, adopt: the compaction child is not on the database host. */
    defaultCompaction: "adopt",
    targetMicrosPerEntry: 4.6,
    targetStartSeconds: 0.3,
  };
  loads.cpu = [before, round2(load())];
}

// Start-up alone (not in the default parts; the `cpu` part measures it too): `AUDITPIPE_BENCH_PIPELINE_PARTS=startup`.
// Builds interleaved round by round, a fresh compile cache and start-up snapshot directory ("cold": the first start
// builds the blob, its CPU counted) then the same ones ("warm"), `node -e ''` measured between rounds; lowest CPU and
// median kept. This build also runs without its snapshot (AUDITPIPE_DISABLE_SNAPSHOT=1), as a Node.js where it
// cannot have one would. AUDITPIPE_BENCH_STARTUP_ROUNDS (default 7) rounds; AUDITPIPE_BENCH_STARTUP_ENV="A=1 B=2"
// adds variables to every start (e.g. the launcher's AUDITPIPE_NO_REEXEC=1). Each start runs the launcher as a command,
// by its `#!` line, as the deploy recipes do (the `node` on PATH: pnpm's, node_modules/.bin/node).
if (only.includes("startup")) {
  const before = round2(load());
  const rounds = Number(process.env.AUDITPIPE_BENCH_STARTUP_ROUNDS ?? 7);
  const extraEnv = Object.fromEntries(
    (process.env.AUDITPIPE_BENCH_STARTUP_ENV ?? "")
      .split(/\s+/)
      .filter((kv) => kv.includes("="))
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
  const nodeOptions = { NODE_OPTIONS: "--max-old-space-size=128 --max-semi-space-size=4", ...extraEnv };
  const baselineBin = process.env.AUDITPIPE_BENCH_BASELINE_BIN;
  const builds: { build: string; bin?: string; env?: NodeJS.ProcessEnv }[] = [
    { build: "this build" },
    { build: "this build, no snapshot", env: { AUDITPIPE_DISABLE_SNAPSHOT: "1" } },
    ...(baselineBin
      ? [{ build: process.env.AUDITPIPE_BENCH_BASELINE_NAME ?? "baseline", bin: baselineBin }]
      : []),
  ];
  const all: { build: string; cache: "cold" | "warm"; cpu: number; toReady: number; load: number }[] = [];
  const nodeStarts: number[] = [];
  for (let round = 0; round < rounds; round++) {
    nodeStarts.push(commandCpuSeconds(process.execPath, ["-e", ""], 10));
    for (const { build, bin, env } of round % 2 === 0 ? builds : [...builds].reverse()) {
      const cache = mkdtempSync(join(tmpdir(), "auditpipe-bench-compile-cache-"));
      try {
        for (const cacheState of ["cold", "warm"] as const) {
          const caches = { NODE_COMPILE_CACHE: cache, AUDITPIPE_SNAPSHOT_CACHE: join(cache, "snapshot") };
          const r = await sidecarStartCpu(0, { ...nodeOptions, ...caches, ...env }, bin, true);
          all.push({
            build,
            cache: cacheState,
            cpu: r.cpuToReady,
            toReady: r.toReadySeconds,
            load: round2(load()),
          });
        }
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    }
  }
  nodeStarts.push(commandCpuSeconds(process.execPath, ["-e", ""], 10));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const nodeStart = Math.min(...nodeStarts);
  const summary = builds.flatMap(({ build }) =>
    (["cold", "warm"] as const).map((cache) => {
      const cpus = all.filter((a) => a.build === build && a.cache === cache).map((a) => a.cpu);
      return {
        build,
        cache,
        minCpu: Math.min(...cpus),
        medianCpu: median(cpus),
        minOverNode: round2(Math.min(...cpus) / nodeStart),
        medianOverNode: round2(median(cpus) / median(nodeStarts)),
      };
    }),
  );
  console.table(summary);
  console.log(`  node -e '' CPU: min ${nodeStart.toFixed(3)} s, median ${median(nodeStarts).toFixed(3)} s`);
  doc.startup = { rounds, env: extraEnv, summary, all, nodeStartSeconds: nodeStarts };
  loads.startup = [before, round2(load())];
  console.log(`  load average ${before} → ${round2(load())}`);
}

if (only.includes("analyze")) {
  const before = round2(load());
  const csv = files[0]!;
  const entries = (await runParseOnly(csv.file, "csvlog")).entries;
  doc.analyze = analyzeVsCsvParse(csv.file, entries, ROUNDS);
  console.log(`  analyze: ${JSON.stringify({ ...(doc.analyze as object), rounds: undefined })}`);
  loads.analyze = [before, round2(load())];
}

/**
 * Issue 24's targets as ratios of this run's anchors: the default configuration's (zstd,
 * compaction adopt) steady CPU per entry on the database host over gzip -6's of the raw log (at
 * most 1.5: `cpuPerEntryOverGzip`); start-up CPU to the API answering over an empty node -e
 * script's (at most 5; warm: a restarted sidecar's compile cache). For comparison,
 * `childModeOverGzip` is what --compaction child costs on the host (the sidecar's per entry plus
 * its child's per row compacted: one row per entry), `compactionOverGzip` the child alone.
 */
function targetRatios(
  runs: (RssResult & { build: string; compression: string })[],
  compactions: (CompactionChildRun & { build: string })[],
  starts: (StartCpuResult & { build: string; cache: "cold" | "warm" })[],
  anchor: Anchors,
): Record<string, number | undefined> {
  const r = (n: number | undefined, d: number) => (n === undefined ? undefined : Number((n / d).toFixed(2)));
  const run = (c: string) => runs.find((x) => x.build === "this build" && x.compression === c);
  const start = (c: string) => starts.find((x) => x.build === "this build" && x.cache === c);
  const sidecar = run("zstd")?.cpuMicrosPerEntry.steady;
  const compaction = compactions.find((x) => x.build === "this build")?.cpuMicrosPerRow;
  return {
    childModeOverGzip: r(
      sidecar === undefined || compaction === undefined ? undefined : sidecar + compaction,
      anchor.gzipMicrosPerEntry,
    ),
    compactionOverGzip: r(compaction, anchor.gzipMicrosPerEntry),
    cpuPerEntryOverGzip: r(sidecar, anchor.gzipMicrosPerEntry),
    gzipConfigOverGzip: r(run("gzip")?.cpuMicrosPerEntry.steady, anchor.gzipMicrosPerEntry),
    startOverNode: r(start("warm")?.cpuToReady, anchor.nodeStartSeconds),
    coldStartOverNode: r(start("cold")?.cpuToReady, anchor.nodeStartSeconds),
  };
}

const dir = join(repoRoot(), ".bench");
mkdirSync(dir, { recursive: true });
// Parts not run this time keep their last figures.
let previous: Record<string, unknown> = {};
try {
  previous = JSON.parse((await import("node:fs")).readFileSync(join(dir, "pipeline.json"), "utf8"));
} catch {}
const previousLoads =
  typeof previous.loads === "object" && !Array.isArray(previous.loads) ? (previous.loads as object) : {};
doc.loads = { ...previousLoads, ...loads };
writeFileSync(join(dir, "pipeline.json"), `${JSON.stringify({ ...previous, ...doc }, null, 2)}\n`);
