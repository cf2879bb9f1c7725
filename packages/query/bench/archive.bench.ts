/**
 * The archive as a dataset, measured: bytes stored per host-hour (landing gzip NDJSON vs Parquet),
 * compaction CPU per entry and peak RSS (in its own process, as `auditpipe compact` runs it), bytes
 * scanned per typical question, and the latency of `auditpipe query` against DuckDB reading the
 * same NDJSON. Writes .bench/archive.json (rendered into docs/benchmarks.md by scripts/bench.mjs).
 *
 * Data: the reference csvlog (a real PostgreSQL 15 + pgaudit under pgbench, 420k entries in about
 * a minute, packages/parse/bench/_reference-data.ts) shipped by the real pipeline (FileSource →
 * LocalDirSink) once per hour of a day, its timestamps moved by whole hours each time: a server
 * logging that minute's volume every hour (HOURS, default 24). Questions over a month are the
 * measured per-hour bytes times 720.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { openArchive, openEngine, PARQUET_COLUMNS, quoteLiteral, readArchiveState } from "@auditpipe/compact";
import { openAuditView, runQuery } from "@auditpipe/query";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { referenceData } from "../../parse/bench/_reference-data.ts";

const HOURS = Number(process.env.HOURS ?? 24);
const ROUNDS = 3;
const root = repoRoot();
const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-archive-"));
const archive = join(work, "archive");

function shift(raw: Buffer, hours: number): Buffer {
  if (hours === 0) return raw;
  const text = raw
    .toString("latin1")
    .replace(/\b(\d{4}-\d{2}-\d{2}) (\d{2}):/g, (_m, d: string, h: string) => {
      const t = new Date(Date.parse(`${d}T${h}:00:00Z`) + hours * 3_600_000).toISOString();
      return `${t.slice(0, 10)} ${t.slice(11, 13)}:`;
    });
  return Buffer.from(text, "latin1");
}

async function ship(raw: Buffer, n: number): Promise<number> {
  const dir = join(work, `log-${n}`);
  mkdirSync(dir);
  const file = join(dir, "postgresql.csv");
  writeFileSync(file, raw);
  let acked = 0;
  const source = new FileSource({
    logDir: dir,
    format: "csvlog",
    pattern: "postgresql.csv",
    stateDir: join(dir, "state"),
    // gzip, as this bench's recorded figures were measured (zstd is the sinks' default since issue 24).
    sink: new LocalDirSink({ dir: archive, compression: "gzip" }),
    observer: { sinkAck: (_f, e) => (acked += e) },
  });
  await source.start();
  await waitUntil(
    () => source.status().some((f) => f.read >= raw.length),
    600_000,
    () => "not read",
  );
  await source.stop();
  rmSync(dir, { recursive: true, force: true });
  return acked;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

const { csvlog } = await referenceData();
const reference = readFileSync(csvlog);
const loads: Record<string, [string, string]> = {};
const load = () => loadavg()[0]!.toFixed(2);

// 1. The landing archive: HOURS host-hours of the reference log.
let l0 = load();
let entries = 0;
// Hours before the reference one, so every hour is closed now.
for (let h = 0; h < HOURS; h++) entries += await ship(shift(reference, -h), h);
loads.ship = [l0, load()];
const store = await openArchive(archive);
const landing = (await readArchiveState(store)).landing;
const landingBytes = landing.reduce((n, o) => n + o.size, 0);

// 2. Compaction, one `auditpipe compact --from H --to H` process per host-hour: its CPU and peak
// RSS as the process itself reports them (process.resourceUsage() when the command returns).
l0 = load();
const MAIN = join(root, "apps", "cli", "src", "main.ts");
const runs: { cpuMs: number; maxRssMb: number; wallMs: number }[] = [];
const hours = [...new Set(landing.map((o) => `${o.dt}T${o.hour}`))].sort();
for (const hour of hours) {
  const t0 = performance.now();
  const script = `const { main } = await import(${JSON.stringify(MAIN)});
const code = await main(["compact", ${JSON.stringify(archive)}, "--from", "${hour}", "--to", "${hour}", "--grace-minutes", "0"], { stdout() {}, stderr: (t) => process.stderr.write(t), stderrIsTTY: false });
const u = process.resourceUsage();
process.stdout.write(JSON.stringify({ code, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, maxRssMb: u.maxRSS / 1024 }));`;
  const r = spawnSync(
    process.execPath,
    ["--conditions=@auditpipe/source", "--input-type=module", "-e", script],
    {
      encoding: "utf8",
    },
  );
  const out = r.status === 0 ? JSON.parse(r.stdout) : undefined;
  if (out?.code !== 0) throw new Error(`compaction of ${hour} failed (${r.status}): ${r.stderr} ${r.stdout}`);
  runs.push({ cpuMs: out.cpuMs, maxRssMb: out.maxRssMb, wallMs: performance.now() - t0 });
}
loads.compact = [l0, load()];
const state = await readArchiveState(store);
const records = [...state.records.values()];
const parquetBytes = records.reduce((n, r) => n + r.size, 0);
const rows = records.reduce((n, r) => n + r.rows, 0);
if (rows !== entries) throw new Error(`compacted ${rows} rows of ${entries} entries`);

// 3. Bytes a question scans. NDJSON: every object in range (a JSON reader parses all of it).
// Parquet: the column chunks of the columns the question reads, in the row groups it keeps.
const engine = await openEngine({ threads: 2 });
async function parquetColumnBytes(columns: string[]): Promise<number> {
  const files = records.map((r) => quoteLiteral(join(archive, r.key))).join(", ");
  const paths = columns.map((c) => quoteLiteral(c)).join(", ");
  const rs = await engine.connection.runAndReadAll(
    `SELECT sum(total_compressed_size) FROM parquet_metadata([${files}])
     WHERE split_part(path_in_schema, ', ', 1) IN (${paths})`,
  );
  return Number(rs.getRows()[0]![0]);
}
const questions = [
  {
    name: "a user's activity over a day",
    sql: `SELECT ts, command, object_name, statement FROM audit WHERE "user" = 'postgres' ORDER BY ts`,
    columns: ["ts", "user", "command", "object_name", "statement", "session_id", "session_line"],
    hours: 24,
  },
  {
    name: "a table over a month (who-touched)",
    sql: `SELECT ts, "user", command FROM audit WHERE object_name = 'public.pgbench_branches' OR (object_name = '' AND statement ILIKE '%pgbench_branches%')`,
    columns: ["ts", "user", "command", "object_name", "statement", "record"],
    hours: 720,
  },
];
const perHour = (b: number) => b / hours.length;
const scanned = [];
for (const q of questions) {
  const pq = await parquetColumnBytes(q.columns);
  scanned.push({
    name: q.name,
    hours: q.hours,
    ndjsonBytes: perHour(landingBytes) * q.hours,
    parquetBytes: perHour(pq) * q.hours,
    measuredHours: hours.length,
  });
}
engine.close();

// 4. Latency of the day question: `auditpipe query` (view over Parquet, from/to) against DuckDB
// over the same hours' NDJSON (read_json, typed columns, as docs/archive.md shows it). Interleaved.
l0 = load();
const day = { from: new Date(`${hours[0]!.slice(0, 10)}T${hours[0]!.slice(11, 13)}:00:00Z`) };
const to = new Date(day.from.getTime() + Math.min(24, hours.length) * 3_600_000);
const ndjsonFiles = landing.map((o) => quoteLiteral(join(archive, o.key))).join(", ");
const latency: Record<string, { wallMs: number[]; cpuMs: number[] }> = {
  "auditpipe query (Parquet)": { wallMs: [], cpuMs: [] },
  "DuckDB over the NDJSON": { wallMs: [], cpuMs: [] },
};
const q1 = questions[0]!;
let counts: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const view = await openAuditView(store, { from: day.from, to, threads: 2 });
    const r = await runQuery(view.engine, `SELECT count(*) FROM (${q1.sql})`);
    await view.close();
    latency["auditpipe query (Parquet)"]!.wallMs.push(performance.now() - t0);
    latency["auditpipe query (Parquet)"]!.cpuMs.push(cpuMs(process.cpuUsage(c0)));
    counts.push(Number(r.rows[0]![0]));
  }
  {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const e = await openEngine({ threads: 2, memoryLimit: "512MB" });
    const cols = `{ts: 'TIMESTAMPTZ', "user": 'VARCHAR', command: 'VARCHAR', object_name: 'VARCHAR', statement: 'VARCHAR'}`;
    const r = await e.connection.runAndReadAll(
      `SELECT count(*) FROM (${q1.sql.replace("FROM audit", `FROM read_json([${ndjsonFiles}], format = 'newline_delimited', columns = ${cols})`)})`,
    );
    e.close();
    latency["DuckDB over the NDJSON"]!.wallMs.push(performance.now() - t0);
    latency["DuckDB over the NDJSON"]!.cpuMs.push(cpuMs(process.cpuUsage(c0)));
    counts.push(Number(r.getRows()[0]![0]));
  }
}
loads.latency = [l0, load()];
counts = [...new Set(counts)];
if (counts.length !== 1) throw new Error(`the two answers differ: ${counts.join(" vs ")}`);

const result = {
  kind: "archive",
  suite: "archive",
  date: new Date().toISOString(),
  machine: `${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, Node ${process.version}`,
  loads,
  reference: { file: basename(csvlog), bytes: statSync(csvlog).size, entriesPerHour: entries / hours.length },
  hours: hours.length,
  entries,
  stored: { ndjsonBytes: landingBytes, parquetBytes, objects: landing.length, files: records.length },
  compaction: {
    cpuNsPerEntry: (median(runs.map((r) => r.cpuMs)) * 1e6) / (entries / hours.length),
    medianCpuMs: median(runs.map((r) => r.cpuMs)),
    maxRssMb: Math.max(...runs.map((r) => r.maxRssMb)),
    medianWallMs: median(runs.map((r) => r.wallMs)),
  },
  scanned,
  latency: Object.fromEntries(
    Object.entries(latency).map(([k, v]) => [
      k,
      { medianWallMs: median(v.wallMs), medianCpuMs: median(v.cpuMs) },
    ]),
  ),
  answer: counts[0],
  columns: PARQUET_COLUMNS.length,
};
mkdirSync(join(root, ".bench"), { recursive: true });
writeFileSync(join(root, ".bench", "archive.json"), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
store.close();
rmSync(work, { recursive: true, force: true });
