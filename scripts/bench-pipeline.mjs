// Renders .bench/pipeline.json (packages/tail/bench/pipeline.bench.ts) as the "Sidecar pipeline"
// section of docs/benchmarks.md: throughput, peak RSS, tail latency and pgbench impact against
// the design's targets.
import { relative } from "node:path";

const int = (n) => (n === undefined || Number.isNaN(n) ? "–" : Math.round(n).toLocaleString("en-US"));
const mark = (ok) => (ok ? "✅ meets" : "❌ short");

export function renderPipelineSection(s, root) {
  const t = s.targets ?? { entriesPerSec: 250_000, peakRssMb: 200, p99Ms: 250, tpsRatio: 0.99 };
  const lines = [
    "## Sidecar pipeline (tail → meter → local sink)",
    "",
    `Run ${s.date?.slice(0, 16).replace("T", " ") ?? "?"} UTC on ${s.machine ?? "?"}; load average (1 min) before → after each part: ${Object.entries(
      s.loads ?? {},
    )
      .map(([part, [before, after]]) => `${part} ${before} → ${after}`)
      .join(", ")}.`,
    "The load average is recorded around each part: on this 2-core machine a load above ~0.5 before a part starts means something else was running, and its figures are lower bounds.",
    "",
    "| what | measured | target | |",
    "|---|---:|---:|---|",
  ];
  for (const r of s.throughput ?? [])
    lines.push(
      `| end-to-end ${r.format} → gzip NDJSON, entries/s (best of ${r.rounds.length}; median ${int(r.pipeline.medianEntriesPerSec)}) | ${int(r.pipeline.bestEntriesPerSec)} | ≥ ${int(t.entriesPerSec)} | ${mark(r.pipeline.bestEntriesPerSec >= t.entriesPerSec)} |`,
    );
  for (const r of s.rss ?? [])
    lines.push(
      `| \`auditpipe run\` peak RSS (VmHWM) over a ${int(r.fileBytes / 1e6)} MB file${r.how ? `, ${r.how}` : ""} | ${int(r.peakRssMb)} MB | ≤ ${t.peakRssMb} MB | ${mark(r.peakRssMb <= t.peakRssMb)} |`,
    );
  if (s.latency)
    lines.push(
      `| append → counted in GET /v1/volume, p99 (p50 ${s.latency.p50Ms} ms, max ${s.latency.maxMs} ms) | ${s.latency.p99Ms} ms | ≤ ${t.p99Ms} ms | ${mark(s.latency.p99Ms <= t.p99Ms)} |`,
    );
  if (s.pgbench)
    lines.push(
      `| pgbench TPS with / without the sidecar (medians, ${s.pgbench.runs.length / 2} interleaved pairs) | ${(s.pgbench.ratio * 100).toFixed(1)} % | ≥ ${t.tpsRatio * 100} % | ${mark(s.pgbench.ratio >= t.tpsRatio)} |`,
    );
  lines.push(
    "",
    "Where the time and memory go (profiles with `node --cpu-prof` of `packages/tail/bench/_pipeline.ts`): the pipeline is",
    "bound by its main thread, which parses (csvlog ~0.8 µs an entry), meters, builds the shipped records and JSON-encodes",
    "them (`JSON.stringify`, ~1.5 µs an entry on Node 20, the largest single cost), with garbage collection 15-25 %; gzip runs",
    "on libuv's pool with a 1 MiB output buffer (zlib's 16 KiB default bounced back to the main thread ~25 times a batch and",
    "cost ~15 % of the throughput). Records are encoded a read's worth at a time (≤ 1 MiB of log), so they die young instead",
    "of being promoted while their batch fills. In all, one entry costs ~8 µs of CPU over every thread (gzip level 6 ~2.4 µs of",
    "it): on 2 cores that puts the ceiling near 250,000 entries/s with perfect overlap. Peak RSS is the process's floor (Node,",
    "Fastify, prom-client, the AWS SDK: ~100 MB idle) plus V8's heap, which with V8's defaults grows to ~260-320 MB RSS; with a",
    "128 MB old generation and 4 MB semi-spaces (docs/operations.md) it peaks at ~160-170 MB, flat from 240 MB to 960 MB",
    "files. The launcher also sets a 64 MB initial old generation, which costs ~15 MB of peak RSS and saves a third of the",
    "sidecar's CPU under steady load (below). Measured and dropped: a hand-written NDJSON encoder (slower than",
    "JSON.stringify); encoding each record alone as it is read (~10 % slower); smaller batches (no faster under the cap);",
    "gzip level 3 (8 % faster end to end but 23 % larger objects, so level 6 stays); and building the shipped records on a",
    "worker thread from each batch's log bytes (the main thread only parsing and metering): 125k entries/s with one worker,",
    "145k with two, against ~185k in the same run, because parsing each batch twice costs more CPU than the second core",
    "has to spare.",
    "",
  );

  if (s.throughput?.length) {
    lines.push(
      "### Throughput",
      "",
      "FileSource → LiveMeter → LocalDirSink in one process, from `start()` until `stop()` returned with everything acknowledged:",
      "read (1 MiB reads), parse, pgAudit payload, meter every entry, shipped-record objects, NDJSON, gzip level 6 (libuv pool),",
      "temp file + fsync + rename + dir fsync per object, fsynced checkpoints. Parse-only is the same file through the same parser",
      "and payload decoder, read from disk the same way, interleaved with the pipeline in every round (round 0 is a warm-up).",
      "",
      "| file | MB | entries | objects (MB gz) | pipeline best entries/s | median | parse-only entries/s | pipeline / parse-only |",
      "|---|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (const r of s.throughput)
      lines.push(
        `| ${r.format} \`${relative(root, r.file)}\` | ${(r.bytes / 1e6).toFixed(1)} | ${int(r.entries)} | ${r.objects} (${(r.objectBytes / 1e6).toFixed(1)}) | ${int(r.pipeline.bestEntriesPerSec)} | ${int(r.pipeline.medianEntriesPerSec)} | ${int(r.parseOnly.bestEntriesPerSec)} | ${r.ratio}x |`,
      );
    lines.push("");
  }
  if (s.rss?.length) {
    lines.push(
      "### Memory of the real sidecar",
      "",
      "`auditpipe run` spawned from the build (`node apps/cli/bin/auditpipe.js run`, after `pnpm build`), reading the",
      "reference csvlog repeated into one file; VmHWM read from /proc at the end, VmRSS sampled every 250 ms while it read.",
      "entries/s here is spawn → last entry acknowledged, start-up included." +
        (s.latency?.sidecarPeakRssMb
          ? ` For scale: the same process following a small file (the latency run) peaks at ${s.latency.sidecarPeakRssMb} MB.`
          : ""),
      "",
      "| file | how | entries | seconds | entries/s | peak RSS (VmHWM) | RSS while reading (min–max) |",
      "|---|---|---:|---:|---:|---:|---:|",
    );
    for (const r of s.rss)
      lines.push(
        `| ${int(r.fileBytes / 1e6)} MB (${r.copies} copies) | ${r.how ?? "tsx, uncapped"} | ${int(r.entries)} | ${r.seconds} | ${int(r.entriesPerSec)} | ${int(r.peakRssMb)} MB | ${int(r.rssSamplesMb.min)}–${int(r.rssSamplesMb.max)} MB |`,
      );
    lines.push("");
  }
  if (s.latency) {
    const l = s.latency;
    lines.push(
      "### Tail latency",
      "",
      `The spawned sidecar follows a csvlog file; ${int(l.appends)} real audit records are appended one at a time, ${l.ratePerSec} a second,`,
      `while GET /v1/volume is polled (${int(l.polls)} polls). A record's delay runs from just before its write to the first response`,
      "counting it, so the poll's round trip is included.",
      "",
      `p50 ${l.p50Ms} ms, p99 ${l.p99Ms} ms, max ${l.maxMs} ms.`,
      "",
    );
  }
  if (s.pgbench) {
    const p = s.pgbench;
    lines.push(
      "### Impact on PostgreSQL",
      "",
      `A testkit PostgreSQL 15 + pgaudit (\`pgaudit.log = all\`, csvlog), pgbench scale 1, ${p.clients} clients, ${p.seconds} s a run, runs interleaved`,
      "(without, with, with, without, ...). Each run with the sidecar starts a fresh one (`--from end`, fresh state) that is listening",
      "before pgbench starts and is stopped after it: it reads, meters and ships every entry pgbench causes.",
      "On these 2 cores pgbench and PostgreSQL already use all the CPU there is, so whatever the sidecar uses comes off TPS.",
      "Under load it reads on a 20 ms timer and stops watching the directory (PostgreSQL's logger writes each record with its",
      "own write(), and the watch woke the sidecar for every one); with the 64 MB initial old generation V8 no longer marks its",
      "small heap every half second. Together those halved its CPU here (~3 s per run before).",
      "",
      "| run | sidecar | TPS | load before | sidecar CPU during the run |",
      "|---:|---|---:|---:|---:|",
      ...p.runs.map(
        (r, i) =>
          `| ${i + 1} | ${r.sidecar ? "running" : "–"} | ${int(r.tps)} | ${r.load} | ${r.sidecarCpuSeconds === undefined ? "–" : `${r.sidecarCpuSeconds} s`} |`,
      ),
      "",
      `Median without ${int(p.medianWithout)}, with ${int(p.medianWith)}: ${(p.ratio * 100).toFixed(1)} %.`,
      "",
    );
  }
  return lines;
}
