/**
 * Where a compaction's CPU goes, step by step (docs/benchmarks.md, "CPU per row"): the SQL of
 * compactPartition run in one process, in the same order and with the same engine settings and
 * heap flags as the compaction child, with the process's CPU (user and system, every thread) and
 * peak RSS (VmHWM, reset between steps) taken at each step's end. It mirrors compact-partition.ts
 * — keep the two in step; the rows digest it prints must be the one `auditpipe compact` records.
 * Run by hand on a shipped host-hour (packages/compact/bench/_landing-hour.ts builds one):
 *   node --max-old-space-size=64 --max-semi-space-size=4 --conditions=@auditpipe/source \
 *     packages/compact/bench/cpu-steps.ts .bench-data/landing-zstd/dt=…/hour=…
 * DUCKDB_JE_MALLOC_CONF overrides the allocator setting as it does for the child.
 */
import { createHash } from "node:crypto";
import { createReadStream, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { applyDecisions, DECISION_KEY } from "../src/_decisions.ts";
import { SLICE_ROWS, STAGE_GROUP_OBJECTS, STAGING_MEMORY_LIMIT } from "../src/compact-partition.ts";
import { DEFAULT_COMPACTION_MEMORY_LIMIT, openEngine } from "../src/engine.ts";
import { digestRows } from "../src/rows-digest.ts";
import {
  ndjsonColumns,
  PARQUET_COLUMNS,
  quoteIdent,
  quoteLiteral,
  ROW_ORDER,
  typedSelectList,
} from "../src/schema.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: cpu-steps.ts <dir of one host-hour's landing objects>");
const objects = readdirSync(dir)
  .filter((f) => /\.ndjson(\.gz|\.zst)?$/.test(f))
  .sort()
  .map((f) => join(dir, f));
const work = await mkdtemp(join(tmpdir(), "auditpipe-cpu-steps-"));

const steps: { step: string; userS: number; sysS: number; peakMb: number }[] = [];
let last = process.cpuUsage();
/** Ends a step: its CPU since the last, and its peak RSS (the kernel's high-water mark, then reset). */
function done(step: string): void {
  const now = process.cpuUsage();
  const peakMb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024;
  writeFileSync("/proc/self/clear_refs", "5");
  const prev = steps.find((s) => s.step === step);
  const userS = (now.user - last.user) / 1e6;
  const sysS = (now.system - last.system) / 1e6;
  if (prev) {
    prev.userS += userS;
    prev.sysS += sysS;
    prev.peakMb = Math.max(prev.peakMb, peakMb);
  } else steps.push({ step, userS, sysS, peakMb });
  last = now;
}

const COLUMNS = PARQUET_COLUMNS.map((c) => quoteIdent(c.name)).join(", ");
const STAGE_FORMAT = "FORMAT parquet, COMPRESSION snappy, DICTIONARY_SIZE_LIMIT 1";
const list = (paths: string[]) => `[${paths.map(quoteLiteral).join(", ")}]`;
try {
  const engine = await openEngine({
    path: join(work, "compact.duckdb"),
    memoryLimit: DEFAULT_COMPACTION_MEMORY_LIMIT,
    compactAllocator: true,
    tempDirectory: join(work, "spill"),
  });
  const c = engine.connection;
  await c.run("SET parquet_metadata_cache = true");
  done("open the engine");
  for (const f of objects) await pipeline(createReadStream(f), createHash("sha256"));
  done("hash the inputs");
  await mkdir(join(work, "stage"));
  const stages: string[] = [];
  await c.run(`SET memory_limit = '${STAGING_MEMORY_LIMIT}'`);
  for (let first = 0; first < objects.length; first += STAGE_GROUP_OBJECTS) {
    const stage = join(work, "stage", `${first}.parquet`);
    await c.run(
      `COPY (SELECT *, ${DECISION_KEY} AS _key FROM (
         SELECT ${typedSelectList()} FROM read_json(${list(objects.slice(first, first + STAGE_GROUP_OBJECTS))},
           format = 'newline_delimited', columns = ${ndjsonColumns()})))
       TO ${quoteLiteral(stage)} (${STAGE_FORMAT}, ROW_GROUP_SIZE 10000)`,
    );
    stages.push(stage);
  }
  await c.run(`SET memory_limit = '${DEFAULT_COMPACTION_MEMORY_LIMIT}'`);
  done("stage the objects, 64 a read_json call (typed select, decision key, snappy Parquet)");
  await c.run(`CREATE VIEW lines AS SELECT * FROM read_parquet(${list(stages)})`);
  const counts = await applyDecisions(c);
  done("decisions and counts");
  const n = Math.ceil(counts.lines / SLICE_ROWS);
  const quantiles = Array.from({ length: n - 1 }, (_, i) => ((i + 1) / n).toFixed(6)).join(", ");
  const bounds = (
    await c.runAndReadAll(
      `SELECT DISTINCT unnest(quantile_disc(epoch_us(ts), [${quantiles}])) AS b
       FROM (SELECT ts FROM lines WHERE ts IS NOT NULL) USING SAMPLE reservoir(100000 ROWS) REPEATABLE (1)
       ORDER BY b`,
    )
  )
    .getRows()
    .map((r) => r[0] as bigint);
  done("slice bounds");
  const at = (b: bigint) => `CAST(make_timestamp(${b}) AS TIMESTAMPTZ)`;
  const wheres = [
    `WHERE ts IS NULL OR ts < ${at(bounds[0] as bigint)}`,
    ...bounds.slice(1).map((b, i) => `WHERE ts >= ${at(bounds[i] as bigint)} AND ts < ${at(b)}`),
    `WHERE ts >= ${at(bounds[bounds.length - 1] as bigint)}`,
  ];
  const slices: string[] = [];
  for (const [i, where] of wheres.entries()) {
    const slice = join(work, "stage", `slice-${i}.parquet`);
    await c.run(
      `COPY (SELECT ${COLUMNS} FROM final ${where} ORDER BY ${ROW_ORDER}) TO ${quoteLiteral(slice)} (${STAGE_FORMAT})`,
    );
    slices.push(slice);
  }
  done(`sort ${slices.length} slices (scan through the decisions, sort, snappy Parquet)`);
  const out = join(work, "out.parquet");
  await c.run(
    `COPY (SELECT ${COLUMNS} FROM read_parquet(${list(slices)})) TO ${quoteLiteral(out)}
     (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 30000, KV_METADATA {auditpipe_schema: '1'})`,
  );
  done("final zstd Parquet write");
  const digest = await digestRows(c, `read_parquet(${quoteLiteral(out)})`, { workDir: work });
  done("read back and rows digest");
  await pipeline(createReadStream(out), createHash("sha256"));
  engine.close();
  done("hash the file, close");
  const rows = digest.rows;
  const total = steps.reduce((t, s) => t + s.userS + s.sysS, 0);
  console.log(
    `${rows.toLocaleString("en-US")} rows, ${digest.digest}; ${total.toFixed(2)} s of CPU, ${((total / rows) * 1e6).toFixed(2)} µs a row\n`,
  );
  console.log("| step | CPU µs a row (system) | peak RSS |\n|---|---:|---:|");
  for (const s of steps)
    console.log(
      `| ${s.step} | ${(((s.userS + s.sysS) / rows) * 1e6).toFixed(2)} (${((s.sysS / rows) * 1e6).toFixed(2)}) | ${Math.round(s.peakMb)} MB |`,
    );
} finally {
  await rm(work, { recursive: true, force: true });
}
