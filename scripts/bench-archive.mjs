// Renders .bench/archive.json (packages/query/bench/archive.bench.ts) and .bench/parquet-writer.json
// (packages/compact/bench/writer.bench.ts) as the archive sections of docs/benchmarks.md.
const int = (n) => (n === undefined || Number.isNaN(n) ? "–" : Math.round(n).toLocaleString("en-US"));
const mb = (b) => `${(b / 1e6).toLocaleString("en-US", { maximumFractionDigits: 1 })} MB`;
const gb = (b) => (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : mb(b));

export function renderWriterSection(s) {
  const lines = [
    "## Parquet writer (one host-hour, each writer in its own process)",
    "",
    `Run ${s.date.slice(0, 16).replace("T", " ")} UTC on ${s.machine}; load average ${s.load[0]} → ${s.load[1]} (a shared 2-core machine: CPU time is the steadier figure). The reference csvlog as one host-hour (${mb(s.landingBytes)} of landing gzip NDJSON), best of two interleaved runs each.`,
    "",
    "| writer | rows | rows per CPU second | CPU | wall | peak RSS | file | DuckDB reads it back | same bytes twice |",
    "|---|---:|---:|---:|---:|---:|---:|---|---|",
  ];
  for (const r of s.results)
    lines.push(
      `| ${r.writer === "duckdb" ? "DuckDB (`@duckdb/node-api`, 1 thread, 96 MB limit)" : "hyparquet-writer (JS; parse and sort in JS, zstd from node:zlib)"} | ${int(r.rows)} | ${int(r.rowsPerCpuSecond)} | ${(r.cpuMs / 1000).toFixed(1)} s | ${(r.wallMs / 1000).toFixed(1)} s | ${int(r.maxRssMb)} MB | ${mb(r.size)} | ${r.duckdbReadsBack ? "yes, every row" : "no"} | ${r.deterministic ? "yes" : "no"} |`,
    );
  lines.push(
    "",
    "DuckDB's figures are the whole compaction (read the gzip NDJSON, sort, write, read back and digest every row); hyparquet-writer's are parse, sort and write only, with the hour's rows held in the JavaScript heap (it has no spilling sort). Spark reads DuckDB's files in `packages/compact/test/spark-archive.test.ts`.",
    "",
    "Chosen: DuckDB. For about the same CPU it does the whole job in bounded memory (its sort spills to disk, so a larger hour needs no more RAM, where the JavaScript writer needs the hour in the heap and a sort of our own), writes lists and structs as Parquet types (hyparquet-writer took `parameter` as JSON text here), and is the engine `auditpipe query` runs on, so one native dependency serves both. parquet-wasm with apache-arrow was not measured: it too writes from an in-memory Arrow table, so it shares the JavaScript writer's memory problem.",
    "",
  );
  return lines;
}

export function renderArchiveSection(s) {
  const lat = Object.entries(s.latency);
  const lines = [
    "## The archive as a dataset (NDJSON vs Parquet)",
    "",
    `Run ${s.date.slice(0, 16).replace("T", " ")} UTC on ${s.machine}; load average before → after: ${Object.entries(
      s.loads,
    )
      .map(([k, [a, b]]) => `${k} ${a} → ${b}`)
      .join(
        ", ",
      )}. Data: the reference csvlog (${mb(s.reference.bytes)}, ${int(s.reference.entriesPerHour)} entries in about a minute) shipped by the real pipeline once per hour for ${s.hours} hours (timestamps moved by whole hours): ${int(s.entries)} entries. Figures for a day or a month are the measured per-hour bytes times 24 or 720.`,
    "",
    "| what | NDJSON (gzip, landing) | Parquet (zstd, compacted) | ratio |",
    "|---|---:|---:|---:|",
    `| bytes stored per host-hour | ${mb(s.stored.ndjsonBytes / s.hours)} | ${mb(s.stored.parquetBytes / s.hours)} | ${(s.stored.ndjsonBytes / s.stored.parquetBytes).toFixed(1)}x less |`,
  ];
  for (const q of s.scanned)
    lines.push(
      `| bytes scanned: ${q.name} (${q.hours} host-hours) | ${gb(q.ndjsonBytes)} | ${gb(q.parquetBytes)} | ${(q.ndjsonBytes / q.parquetBytes).toFixed(1)}x less |`,
    );
  lines.push(
    "",
    "NDJSON: a JSON reader parses every byte of every object in range (Athena bills what it reads). Parquet: the compressed column chunks of the columns the question reads (from each file's metadata), every row group counted — statistics can skip more.",
    "",
    `Compaction (one \`auditpipe compact --from H --to H\` process per host-hour, median of ${s.hours}): ${(s.compaction.medianCpuMs / 1000).toFixed(1)} s CPU per host-hour, **${int(s.compaction.cpuNsPerEntry)} ns CPU per entry** (reading the gzip NDJSON, sorting, writing, reading back and digesting every row), ${(s.compaction.medianWallMs / 1000).toFixed(1)} s wall, peak RSS ${int(s.compaction.maxRssMb)} MB (the engine's limit is 96 MB; the rest is Node, the JSON reader's buffers and the Parquet writer's row group).`,
    "",
    `Latency of "${s.scanned[0].name}" over the ${s.hours} hours (median of three, interleaved, same answer: ${int(s.answer)} rows):`,
    "",
    "| how | wall | CPU (this process) |",
    "|---|---:|---:|",
    ...lat.map(
      ([k, v]) =>
        `| ${k} | ${(v.medianWallMs / 1000).toFixed(2)} s | ${(v.medianCpuMs / 1000).toFixed(2)} s |`,
    ),
    "",
  );
  return lines;
}
