// Renders .bench/pipeline.json (apps/cli/bench/pipeline.bench.ts) as the "Sidecar pipeline"
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
      `| end-to-end ${r.format} → ${r.compression ?? "gzip"} NDJSON, entries/s (best of ${r.rounds.length}; median ${int(r.pipeline.medianEntriesPerSec)}) | ${int(r.pipeline.bestEntriesPerSec)} | ≥ ${int(t.entriesPerSec)} | ${mark(r.pipeline.bestEntriesPerSec >= t.entriesPerSec)} |`,
    );
  for (const r of s.rss ?? [])
    lines.push(
      `| \`auditpipe run\` peak RSS (VmHWM) over a ${int(r.fileBytes / 1e6)} MB file${r.how ? `, ${r.how}` : ""} | ${int(r.peakRssMb)} MB | ≤ ${t.peakRssMb} MB | ${mark(r.peakRssMb <= t.peakRssMb)} |`,
    );
  if (s.latency)
    lines.push(
      `| append → counted in GET /v1/volume, p99 (p50 ${s.latency.p50Ms} ms, max ${s.latency.maxMs} ms) | ${s.latency.p99Ms} ms | ≤ ${t.p99Ms} ms | ${mark(s.latency.p99Ms <= t.p99Ms)} |`,
    );
  for (const r of (s.cpu?.runs ?? []).filter((r) => r.build === "this build"))
    lines.push(
      `| \`auditpipe run\` into MinIO, ${r.compression}${r.compression === "zstd" ? " (the default)" : ""}: CPU per entry at steady state, every thread | ${r.cpuMicrosPerEntry.steady} µs | ≤ ${s.cpu.targetMicrosPerEntry} µs | ${mark(r.cpuMicrosPerEntry.steady <= s.cpu.targetMicrosPerEntry)} |`,
    );
  for (const r of (s.cpu?.starts ?? []).filter((r) => r.build === "this build"))
    lines.push(
      `| \`auditpipe run\` start-up CPU (spawn → API answering), ${r.cache} compile cache | ${r.cpuToReady} s | ≤ ${s.cpu.targetStartSeconds} s | ${mark(r.cpuToReady <= s.cpu.targetStartSeconds)} |`,
    );
  if (s.pgbench)
    lines.push(
      `| pgbench TPS with / without the sidecar (medians of ${s.pgbench.runs.filter((r) => r.arm === "sidecar").length} runs each; a busy loop using the sidecar's CPU share: ${(s.pgbench.busyRatio * 100).toFixed(1)} %) | ${(s.pgbench.ratio * 100).toFixed(1)} % | ≥ ${t.tpsRatio * 100} % | ${mark(s.pgbench.ratio >= t.tpsRatio)} |`,
    );
  lines.push(
    "",
    "Where the time and memory go (`node --cpu-prof` of `apps/cli/bench/_pipeline.ts` and of the real process; measured",
    'stage by stage under "CPU per entry" below): the main thread parses (the record\'s fields, the pgAudit payload), meters',
    "and hands each entry's fields to the NDJSON writer, whose WebAssembly encoder (`packages/ship/wasm/ndjson.wat`) writes the",
    "lines JSON.stringify would (less than half the CPU of building shipped-record objects and JSON.stringify); gzip or zstd",
    "runs on libuv's pool with a 1 MiB output buffer. Garbage collection is what the 128 MB heap cap costs: V8",
    "charges external memory (Buffers) to the old generation's limit, so the sidecar parses 64 KiB at a time and encodes after",
    "each slice (everything dies young), reuses one read buffer per file, and reuses each batch's NDJSON buffer once the sink",
    "acknowledged it: full collections over a 240 MB file went from 74 to 17, and the capped process reads about as fast as",
    "an uncapped one. Peak RSS is the process's floor (Node, Fastify, prom-client, and for an S3 sink the AWS SDK) plus the heap",
    "and the batches in flight: ~135-140 MB with the documented NODE_OPTIONS, flat from 240 MB to 965 MB files. The launcher",
    "(no NODE_OPTIONS) adds its own ~45 MB and gives its child a 64 MB initial old generation (~7 % less CPU under steady",
    "load, ~10 MB more). Measured and dropped: per-field JavaScript NDJSON builders (slower than JSON.stringify); gzip level 3",
    "(8 % faster end to end and under half of level 6's CPU, but 23 % larger objects; level 1 likewise, 28 %); a worker thread building the shipped records from each batch's log",
    "bytes (parsing twice cost more than the second core had to spare).",
    "",
  );

  if (s.throughput?.length) {
    lines.push(
      "### Throughput",
      "",
      "FileSource → LiveMeter → LocalDirSink in one process, from `start()` until `stop()` returned with everything acknowledged:",
      `read (1 MiB reads), parse, pgAudit payload, meter every entry, shipped-record objects, NDJSON, ${s.throughput[0]?.compression === "zstd" ? "zstd level 1" : "gzip level 6"} (libuv pool),`,
      "temp file + fsync + rename + dir fsync per object, fsynced checkpoints. Parse-only is the same file through the same parser",
      "and payload decoder, read from disk the same way, interleaved with the pipeline in every round (round 0 is a warm-up).",
      "",
      "| file | MB | entries | objects (MB stored) | pipeline best entries/s | median | parse-only entries/s | pipeline / parse-only |",
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
      "Steady entries/s is the rate between 10 % and 90 % of the entries acknowledged (polled every 100 ms); spawn → last",
      "acknowledgement also counts start-up and the last batch's 1 s age limit." +
        (s.latency?.sidecarPeakRssMb
          ? ` For scale: the same process following a small file (the latency run) peaks at ${s.latency.sidecarPeakRssMb} MB.`
          : ""),
      "",
      "CPU per entry is user + system time of every thread of every process of the sidecar (/proc/<pid>/stat), steady",
      "(10 % → 90 % acknowledged) and all-in (spawn → last acknowledgement). Target: ≤ 4.6 µs an entry at steady state.",
      "",
      "| file | how | entries | steady entries/s | spawn → last ack | CPU µs/entry, steady | all-in | peak RSS (VmHWM) | RSS while reading (min–max) |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (const r of s.rss)
      lines.push(
        `| ${int(r.fileBytes / 1e6)} MB (${r.copies} copies) | ${r.how ?? "uncapped"} | ${int(r.entries)} | ${int(r.steadyEntriesPerSec)} | ${r.seconds} s (${int(r.entriesPerSec)}/s) | ${r.cpuMicrosPerEntry?.steady ?? "–"} | ${r.cpuMicrosPerEntry?.all ?? "–"} | ${int(r.peakRssMb)} MB | ${int(r.rssSamplesMb.min)}–${int(r.rssSamplesMb.max)} MB |`,
      );
    lines.push("");
    if (s.startCpu)
      lines.push(
        `Start-up (an empty log directory, NODE_OPTIONS as deployed, the machine's compile cache as it was, best of 3; cold and warm under "CPU per entry"): the API answered ${s.startCpu.toReadySeconds} s after spawn, having used`,
        `${s.startCpu.cpuToReady} s of CPU; ${s.startCpu.cpuFirstSeconds} s of CPU over the first ${s.startCpu.idleSeconds} s. Target: ≤ 0.3 s of CPU to start.`,
        "",
      );
  }
  if (s.cpu?.ratios || s.analyze) lines.push(...renderRatios(s));
  if (s.cpu) lines.push(...renderCpuSection(s.cpu));
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
    const label = { without: "–", sidecar: "sidecar", busy: "busy loop" };
    lines.push(
      "### Impact on PostgreSQL",
      "",
      `A testkit PostgreSQL 15 + pgaudit (\`pgaudit.log = all\`, csvlog), pgbench scale 1, ${p.clients} clients, ${p.seconds} s a run, in rotating`,
      "order: without the sidecar; with a fresh one (`--from end`, fresh state, default nice 10) listening before pgbench starts,",
      "which must then catch up (every entry metered and acknowledged) before it is stopped; and with a busy loop at nice 10",
      "burning the share of one core the sidecar used (the median so far), in 100 ms periods like the sidecar's passes.",
      "",
      "The busy loop is the yardstick for what any process using that much CPU costs here. On this VM that is far more than",
      "its share, whatever its priority: in separate runs a nice-19 loop busy a tenth of the time cost ~20 % of TPS, sidecars",
      "at nice 0, 10 and 19 cost the same, and moving the sidecar's sink and state to tmpfs changed nothing. TPS with nothing",
      "else running varies by about ±15 % from run to run. The gap between the two medians below is the sidecar's own, beyond",
      "its CPU time: more wake-ups, file reads and writes, threads running beside one another. What lowers the cost is less",
      "CPU: a few µs per entry, and under load passes 100 ms apart (1.18 s of CPU per 10 s at 3,000 TPS, against 1.42 s",
      "with 20 ms passes). The 99 % target is out of reach on this machine for any process that keeps up with the log.",
      "",
      "| run | alongside pgbench | TPS | load before | sidecar CPU during the run | caught up after (entries) |",
      "|---:|---|---:|---:|---:|---:|",
      ...p.runs.map(
        (r, i) =>
          `| ${i + 1} | ${label[r.arm] ?? r.arm}${r.share === undefined ? "" : ` (${(r.share * 100).toFixed(1)} % of a core)`} | ${int(r.tps)} | ${r.load} | ${r.cpuSeconds === undefined ? "–" : `${r.cpuSeconds} s`} | ${r.catchUpSeconds === undefined ? "–" : `${r.catchUpSeconds} s (${int(r.entries)})`} |`,
      ),
      "",
      `Medians: without ${int(p.medianWithout)}, with the sidecar ${int(p.medianWith)} (${(p.ratio * 100).toFixed(1)} %), with the busy loop ${int(p.medianBusy)} (${(p.busyRatio * 100).toFixed(1)} %).`,
      "",
    );
  }
  return lines;
}

/**
 * Issue 24's targets as ratios of anchors measured in the same run on the same file (the `cpu`
 * part: gzip -6, zstd -1, node -e '' between the sidecar's runs; the best of each kept).
 */
function renderRatios(s) {
  const c = s.cpu;
  const a = c.anchors;
  const run = (compression) => c.runs.find((r) => r.build === "this build" && r.compression === compression);
  const start = (cache) => c.starts.find((r) => r.build === "this build" && r.cache === cache);
  const x = (n) => (n === undefined ? "–" : `${n}x`);
  const z = s.analyze;
  const lines = ["### Targets as ratios (same run, same file)", ""];
  if (s.cpu?.ratios)
    lines.push(
      `Run ${s.date?.slice(0, 16).replace("T", " ") ?? "?"} UTC on ${s.machine ?? "?"}. Anchors measured between the sidecar's runs of the \`cpu\` part (best of ${c.anchorRuns?.length ?? "?"}): \`gzip -6\` of the raw`,
      `reference csvlog ${a.gzipMicrosPerEntry} µs of CPU per audit entry, \`zstd -1\` ${a.zstdMicrosPerEntry} µs, \`node -e ''\` ${a.nodeStartSeconds} s of CPU.`,
      `Load average (1 min) before → after the part: ${s.loads?.cpu?.join(" → ") ?? "?"}; CPU time from /proc is steadier than wall time under load, and`,
      "both sides of each ratio were measured under the same load.",
      ...((s.loads?.cpu?.[0] ?? 0) > 2
        ? [
            "Taken under load: other processes shared the 2 cores, so read the ratios (both sides shared the load) rather than",
            "the absolute figures, and judge the targets on a quiet machine (`AUDITPIPE_BENCH_PIPELINE_PARTS=cpu,analyze pnpm bench cli/bench/pipeline.bench`).",
          ]
        : []),
      "",
    );
  lines.push("| target | this run | ratio | target ratio | |", "|---|---:|---:|---:|---|");
  if (s.cpu?.ratios)
    lines.push(
      `| \`run\` → MinIO, default configuration (zstd), CPU per entry at steady state, every thread | ${run("zstd")?.cpuMicrosPerEntry.steady ?? "–"} µs | ${x(c.ratios.cpuPerEntryOverGzip)} gzip -6 | ≤ 1.5x | ${mark(c.ratios.cpuPerEntryOverGzip <= 1.5)} |`,
      `| the same with \`--compression gzip\` (for comparison) | ${run("gzip")?.cpuMicrosPerEntry.steady ?? "–"} µs | ${x(c.ratios.gzipConfigOverGzip)} gzip -6 | – | |`,
      `| start-up CPU, spawn → API answering, warm compile cache (a restarted sidecar) | ${start("warm")?.cpuToReady ?? "–"} s | ${x(c.ratios.startOverNode)} node -e '' | ≤ 5x | ${mark(c.ratios.startOverNode <= 5)} |`,
      `| start-up CPU, cold compile cache (first start) | ${start("cold")?.cpuToReady ?? "–"} s | ${x(c.ratios.coldStartOverNode)} node -e '' | – | |`,
    );
  if (z)
    lines.push(
      `| \`analyze\` of the reference csvlog (${(z.fileBytes / 1e6).toFixed(0)} MB, ${int(z.entries)} entries), ${z.jobs} threads, wall time (load ${z.rounds.map((r) => r.load).join(", ")} at the rounds' starts) | ${(z.best.analyzeMs / 1000).toFixed(2)} s | ${x(z.overCsvParse)} csv-parse splitting it (${(z.best.csvParseMs / 1000).toFixed(2)} s) | ≥ 8x | ${mark(z.overCsvParse >= 8)} |`,
      `| the same, entries/s | ${int(z.entriesPerSec)} | – | ≥ 1,000,000 | ${mark(z.entriesPerSec >= 1e6)} |`,
      `| \`analyze --jobs 1\` (one reader, for comparison) | ${(z.best.serialMs / 1000).toFixed(2)} s | ${x(z.serialOverCsvParse)} csv-parse | – | |`,
    );
  if (s.pgbench)
    lines.push(
      `| pgbench TPS beside the sidecar / without (medians, ${int(s.pgbench.medianWithout)} TPS without) | ${int(s.pgbench.medianWith)} | ${(s.pgbench.ratio * 100).toFixed(1)} % | ≥ 95 % | ${mark(s.pgbench.ratio >= 0.95)} |`,
      `| pgbench TPS beside a busy loop using the sidecar's CPU share (the yardstick; not a gate) | ${int(s.pgbench.medianBusy)} | ${(s.pgbench.busyRatio * 100).toFixed(1)} % | – | |`,
    );
  lines.push("");
  if (z)
    lines.push(
      `\`analyze\`'s targets are wall time on every core: with the load average at ${s.loads?.analyze?.join(" → ") ?? "?"} during that part, other`,
      "processes held the cores for part of it, and its figures are lower bounds; they need a quiet machine",
      `(\`AUDITPIPE_BENCH_PIPELINE_PARTS=analyze\` re-measures them alone). CPU: ${z.rounds.map((r) => `${r.analyzeCpuSeconds} s`).join(", ")} on every core, ${z.rounds.map((r) => `${r.serialCpuSeconds} s`).join(", ")} with --jobs 1.`,
      "",
    );
  lines.push(
    "What the figures above led to (issue 24), and what was left:",
    "",
    "- **zstd level 1 is the default codec of landing objects** (`--compression gzip` keeps gzip). gzip level 6 was about a",
    "  third of the sidecar's CPU per entry, as much as `gzip -6` of the whole raw log, so no gzip configuration can come",
    '  near 1.5x of it. Every reader was checked (docs/archive.md, "Compression"): our own tools, DuckDB and the Parquet',
    "  compaction (DuckDB's read_json, codec by extension) read both; Athena engine 3 and Trino read `.zst` text; a stock",
    "  pyspark does not (Hadoop's native zstd is needed for text) and reads the compacted Parquet instead.",
    "- Outcome texts without a SQLSTATE are looked up by outcome alone (no key string built per entry).",
    "- Start-up (2026-11-28): where `run`'s CPU to the API answering goes, from `process.cpuUsage()` at each step of the",
    "  built `run` (warm compile cache, load average ~15, so the figures are inflated; their shares are what counts): ~85 %",
    "  is loading modules. Third-party: prom-client 60-80 ms (its process-CPU metric loads @opentelemetry/api: 25-30 ms),",
    "  zod 50-70 ms, Fastify 60-75 ms, pino ~25 ms; ours: the estimate package with its zod schemas (the API's",
    "  /v1/estimates routes) 26-30 ms, the API's route schemas ~17 ms, and the meter's `Intl.NumberFormat`, whose ICU data",
    "  cost 15-25 ms at import: it is now made on first use (the only cut made here; 15 interleaved starts of each build at",
    "  load ~20: median 0.66 s against main's 0.69 s, minimum 0.50 s against 0.49 s — within the noise of this machine).",
    "  Then building the API (Fastify, its routes, `ready()`) 35-45 ms, the configuration's zod parse ~10 ms, and with",
    "  NODE_OPTIONS a second Node boot (the",
    "  launcher's execve for --initial-old-space-size, ~0.03-0.04 s). Measured and left: bundling zod, Fastify, pino and",
    "  prom-client into the CLI's chunks (one file instead of some hundreds of module resolutions) cut importing them from",
    "  290-380 ms to 120-160 ms in a standalone test, the largest lever, but docs/architecture.md keeps third-party libraries",
    "  external (their own versions and licences, `npm audit`) and pino's transports resolve files at run time: a packaging",
    "  decision, not taken here. The API's schemas on first use: Fastify compiles each route's validator by `ready()`, and",
    "  an asynchronous validator's answer is pass/fail only (the zod-parsed body, with its defaults, would be lost), so the",
    "  estimate routes' schemas are still built at start. Two Node boots and Fastify alone are about 5x `node -e ''` here:",
    "  ≤ 5x needs the packaging change and a lighter HTTP server, or an API that answers before Fastify loads.",
    "- Steady CPU (2026-11-28): a `--cpu-prof` of the real `run` (local sink, zstd, the 240 MB file; shares of the",
    "  non-idle samples): parsing 25 % (every csvlog field made a string, the pgAudit payload, the csv-fields",
    "  WebAssembly), NDJSON encoding 25 % (the WebAssembly encoder ~9 %, copying the strings into its memory as UTF-16 ~6 %),",
    "  the outcome join 10 %, garbage collection 9 %, metering 7 %, tailing 4 %, the advisor 4 %, the rest (zlib, fs,",
    "  start-up) 16 %. Cut: the log stamp of every entry, which the meter and the advisor parsed with a regular expression",
    "  and Date.UTC, is read from its three millisecond digits when it shares the last stamp's second (0.83-1.09 µs →",
    "  0.27-0.52 µs a stamp over the reference csvlog's 420,000 stamps, in-process, interleaved); in the table above that",
    "  is below the noise between rounds (±15 % at load averages of 15-17). What is left is the issue's first lever: the",
    "  parser hands the encoder byte ranges (26 fields are made strings per record, eagerly, and copied again as UTF-16",
    "  for the encoder), which changes LogRecord for every consumer; not started.",
    "- Steady CPU, the real process beyond the stages (2026-11-28, later): a `--cpu-prof` of the built `run` (NODE_OPTIONS",
    "  as deployed, local sink, zstd, the reference csvlog; shares of the main thread's non-idle samples, start-up ~10 % of",
    "  them). NDJSON encoding ~22 % (the writer's JavaScript 11 %, the WebAssembly 6.4 %, copying the strings as UTF-16 3.4",
    "  %, ISO stamps 1 %), parsing ~18 % (csvlog 7.9 %, the pgAudit payload 5.3 %, the csv-fields WebAssembly 2.3 %), the",
    "  outcome join 10 %, metering 7 %, garbage collection 7 %, the advisor 4.5 %, copying each entry's session id 2.6 %,",
    "  answering the benchmark's polls of /v1/volume ~2 %, closing batches 2 %, reading, spooling and fsync ~2-3 %. The",
    "  ~2-3 µs the real main thread spends beyond the stage table is mostly what that table does not do as the sidecar",
    "  does: the join there costs 0.48 µs an entry, here ~1 µs (a handle per entry, the lane's bookkeeping); the advisor",
    "  there 0.24, here ~0.45 (each sampled statement costs ~14 µs: fingerprint, lexer, its regular expressions); the",
    "  session-id copies (~0.27 µs: the lane compared with the last id only, and under load the sessions' records",
    "  interleave, so nearly every entry copied its id) and the API's answers to the benchmark's 100 ms polls (~0.2 µs, a",
    "  cost of the measurement: a Prometheus scrape every 15 s is nothing alike) are not in it at all; garbage collection",
    "  under the 128 MB cap is larger in the real process. Cut: the encoder takes ASCII strings as bytes (one UTF-8 write",
    "  of the pending text says whether every character is ASCII; otherwise UTF-16 as before), and escapes them 16 bytes a",
    "  step up to the first byte to escape or the string's end, so a short string (a role, a command) is one step: the",
    "  encode stage in-process over 110,000 entries of the reference csvlog, 7 interleaved rounds at load 22, 2.28 → 1.90",
    "  µs an entry (median; best 1.85 → 1.60), the output byte for byte the same (tested on every fixture entry down both",
    "  paths, and on every ASCII character, non-ASCII and lone surrogates). The lane keeps each backend's session id by pid",
    "  (a microbenchmark of 32 interleaved sessions: ~260 ns an entry → ~100). Measured and dropped: returning the last",
    "  record's string when a field that takes few values (user, database, severity, CLASS, COMMAND…) repeats, compared",
    "  with `startsWith` at a position, made parsing slower (records 0.84 → 1.24 µs, records and payloads 1.65 → 1.98,",
    "  medians of 7 interleaved rounds); writing each string into a buffer as it is added (`utf8Write`, `latin1Write`,",
    "  `encodeInto`) and joining an array cost more than one write of the concatenated text (V8's rope, flattened once).",
    "  The real process, both builds interleaved in one run (the reference csvlog, 420,034 entries, into a local sink,",
    "  zstd, NODE_OPTIONS as deployed; CPU per entry between 10 % and 90 % acknowledged from /proc, every thread and the",
    "  main thread alone; `gzip -6` of the same file timed between rounds), 8 rounds each at load averages 5.3-12.8: this",
    "  build 8.77 µs an entry (median; best 6.66), main thread 7.24; main 9.55 (best 8.68), main thread 7.94; `gzip -6`",
    "  3.76 µs (3.29-4.00): **2.33x** against main's 2.54x, short of 1.5x. The same build varied by ±15 % between rounds at",
    "  that load, so the difference (~8 %) is about one round's noise; the in-process figures above are the firmer ones.",
    "  Left: the encoder reading the statement and message from the parser's bytes (both are CSV-quoted, the statement",
    "  twice, so the module would unquote as it escapes, and LogRecord would carry byte ranges for every consumer), fields",
    "  made strings lazily, the advisor's cost per sampled statement (packages/estimate) and the join's per-entry handle",
    "  (packages/outcome).",
    "- `analyze` was not re-measured in the 2026-11-28 run: its rows above are from 2026-11-27 17:46.",
    "- `analyze` on every core used ~1.6-1.8x the CPU of `--jobs 1` on the reference csvlog at load averages of 11-16",
    "  (2026-11-27): ranges are held as columns until the outcome join's state reaches them, and ~12 % of each worker's",
    "  time is garbage collection. On a machine whose cores are taken by others, `--jobs 1` finishes first. Holding fewer",
    "  ranges, or joining in the reading thread when the state is already there, are the levers left.",
    "",
  );
  return lines;
}

/** The `cpu` part: CPU per entry of the real sidecar into MinIO, by thread and by stage, and its start-up. */
function renderCpuSection(c) {
  const builds = [...new Set(c.runs.map((r) => r.build))];
  const lines = [
    "### CPU per entry",
    "",
    "On the database host every CPU-second the sidecar uses is taken from PostgreSQL. `auditpipe run` (the build, NODE_OPTIONS",
    "as docs/operations.md deploys it) ships two copies of the reference csvlog (~240 MB) into a local MinIO; CPU is user +",
    "system time of every thread from /proc, between 10 % and 90 % of the entries acknowledged, split by kind of thread at",
    "the polls nearest those points (main: the JavaScript thread; V8: its garbage-collector and compiler helpers; pool: libuv's",
    "threads, where gzip/zstd, file system calls and hashing run). Best of 2 rounds; compressions" +
      (builds.length > 1
        ? ` and builds (this one and ${builds.filter((b) => b !== "this build").join(", ")}, an earlier commit built the same way) interleaved in each round.`
        : " interleaved in each round."),
    "Other people's processes shared the machine's 2 cores while these ran: a busy machine inflates CPU per entry (caches,",
    "frequency), so compare rows of one run with each other, not with another run's.",
    "",
    "| build | compression | CPU µs/entry, steady | main thread | V8 helpers | libuv pool | other | entries/s, steady | peak RSS |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ...c.runs.map((r) => {
      const t = r.cpuMicrosPerEntry.threads;
      return `| ${r.build} | ${r.compression} | ${r.cpuMicrosPerEntry.steady} | ${t.main} | ${t.v8} | ${t.pool} | ${t.other} | ${int(r.steadyEntriesPerSec)} | ${int(r.peakRssMb)} MB |`;
    }),
    "",
    "Where the main thread's share goes: the sidecar's own code over the same file in one process (in memory, 64 KiB slices,",
    "10,000-entry batches), one stage more each time; whole-process CPU per entry (process.cpuUsage), best of 3 interleaved",
    "rounds. What the real process adds on top is reading the file, the spool (write, fsync, rename), S3 requests, checkpoints,",
    "the API answering the benchmark's polls, and V8's helper threads (see the table above).",
    "",
    "| stage | µs/entry it adds | cumulative |",
    "|---|---:|---:|",
    ...c.stages.map((st) => `| ${st.name} | ${st.added} | ${st.cumulative} |`),
    "",
    ...targetNote(c),
    "",
    'Start-up: spawn until the API answers, an empty log directory and a local sink, NODE_OPTIONS as deployed; "cold" with an',
    'empty compile cache (NODE_COMPILE_CACHE, a fresh directory), "warm" the same directory again; best of 3.',
    "",
    "| build | compile cache | CPU to ready | API answered after | CPU over the first 3 s |",
    "|---|---|---:|---:|---:|",
    ...c.starts.map(
      (r) =>
        `| ${r.build} | ${r.cache} | ${r.cpuToReady} s | ${r.toReadySeconds} s | ${r.cpuFirstSeconds} s |`,
    ),
    "",
  ];
  return lines;
}

/** Why the CPU-per-entry target is met or not, from this run's own figures. */
function targetNote(c) {
  const mine = (compression) => c.runs.find((r) => r.build === "this build" && r.compression === compression);
  const gzip = mine("gzip");
  const zstd = mine("zstd");
  const gzipStage = c.stages.find((st) => st.name.includes("gzip"))?.added;
  if (!gzip || !zstd || gzipStage === undefined) return [];
  const budget = c.targetMicrosPerEntry;
  return [
    `Against the target of ${budget} µs: with zstd (the default) this build used ${zstd.cpuMicrosPerEntry.steady} µs an entry, with gzip`,
    `${gzip.cpuMicrosPerEntry.steady} µs. gzip level 6 alone adds ${gzipStage} µs (stage table), which leaves ${(budget - gzipStage).toFixed(2)} µs for everything else,`,
    `while the main thread alone used ${gzip.cpuMicrosPerEntry.threads.main} µs: with gzip at level 6 the target is out of reach without`,
    "taking work off the main thread that parsing, metering and encoding every field need (lower gzip levels: see above).",
    zstd.cpuMicrosPerEntry.steady <= budget
      ? "zstd meets it."
      : `zstd is ${(zstd.cpuMicrosPerEntry.steady - budget).toFixed(2)} µs over it in this run (the load average above says how busy the machine was).`,
  ];
}
