/**
 * Choosing the Parquet writer by measurement: DuckDB (@duckdb/node-api, the engine compaction
 * uses) against hyparquet-writer (pure JavaScript) on the same host-hour — the reference csvlog
 * (420k entries of a real PostgreSQL + pgaudit under pgbench) shipped by the real pipeline
 * (_landing-hour.ts).
 * Each writer runs in its own process, twice, interleaved: CPU, peak RSS, wall time, file size,
 * whether DuckDB reads the file back with every row, and whether two runs give the same bytes.
 * Writes .bench/parquet-writer.json.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { openEngine, quoteLiteral } from "@auditpipe/compact";
import { repoRoot } from "@auditpipe/testkit";
import { landingHour } from "./_landing-hour.ts";

const CHILD = join(import.meta.dirname, "_writer-child.ts");
const WRITERS = ["duckdb", "hyparquet"] as const;
const ROUNDS = 2;
const root = repoRoot();
const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-writer-"));
const load = () => loadavg()[0]!.toFixed(2);

// Gzip, as this bench's recorded figures were measured (zstd is the sinks' default since issue 24);
// copied, as the writers compact in place and the shipped hour is a cache shared with other benches.
const archive = join(work, "archive");
cpSync(await landingHour("gzip"), archive, { recursive: true });

const loadBefore = load();
const runs: Record<
  string,
  { cpuMs: number; maxRssMb: number; wallMs: number; rows: number; sha256: string; size: number }[]
> = {};
for (let round = 0; round < ROUNDS; round++)
  for (const writer of WRITERS) {
    // DuckDB compacts in place: each run starts from the landing objects alone.
    rmSync(join(archive, "parquet"), { recursive: true, force: true });
    rmSync(join(archive, "_compaction"), { recursive: true, force: true });
    const out = join(work, `${writer}-${round}.parquet`);
    const r = spawnSync(process.execPath, ["--conditions=@auditpipe/source", CHILD, writer, archive, out], {
      encoding: "utf8",
      env: { ...process.env, NODE_OPTIONS: "--max-old-space-size=4096" },
    });
    if (r.status !== 0) throw new Error(`${writer} failed: ${r.stderr}`);
    const m = JSON.parse(r.stdout);
    const bytes = readFileSync(out);
    runs[writer] ??= [];
    runs[writer].push({
      ...m,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      size: bytes.length,
    });
  }
const loadAfter = load();

const engine = await openEngine({ threads: 2, memoryLimit: "1GB" });
const results = [];
for (const writer of WRITERS) {
  const rs = runs[writer]!;
  const file = join(work, `${writer}-0.parquet`);
  const back = await engine.connection.runAndReadAll(
    `SELECT count(*), count(DISTINCT (source_file_or, "offset")) FROM (SELECT ${
      writer === "duckdb"
        ? 'source.file AS source_file_or, source."offset"'
        : 'source_file AS source_file_or, source_offset AS "offset"'
    } FROM read_parquet(${quoteLiteral(file)}))`,
  );
  const [count, distinct] = back.getRows()[0]!.map(Number);
  const best = rs.reduce((a, b) => (a.cpuMs <= b.cpuMs ? a : b));
  results.push({
    writer,
    rows: best.rows,
    rowsPerCpuSecond: best.rows / (best.cpuMs / 1000),
    cpuMs: best.cpuMs,
    wallMs: best.wallMs,
    maxRssMb: Math.max(...rs.map((r) => r.maxRssMb)),
    size: best.size,
    duckdbReadsBack: count === best.rows && distinct === best.rows,
    deterministic: new Set(rs.map((r) => r.sha256)).size === 1,
  });
}
engine.close();
const landingBytes = readdirSync(archive, { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".ndjson.gz"))
  .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);
const out = {
  kind: "parquet-writer",
  suite: "parquet-writer",
  date: new Date().toISOString(),
  machine: `${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, Node ${process.version}`,
  load: [loadBefore, loadAfter],
  landingBytes,
  results,
};
mkdirSync(join(root, ".bench"), { recursive: true });
writeFileSync(join(root, ".bench", "parquet-writer.json"), `${JSON.stringify(out, null, 2)}\n`);
console.log(JSON.stringify(out, null, 2));
rmSync(work, { recursive: true, force: true });
