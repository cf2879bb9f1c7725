/**
 * One Parquet writer on one host-hour of landing NDJSON, in its own process so its CPU and peak
 * RSS are its own: `duckdb` (compactPartition: the engine reads, sorts and writes) or `hyparquet`
 * (hyparquet-writer: the NDJSON parsed, sorted and turned into columns in JavaScript, zstd from
 * node:zlib). argv: WRITER ARCHIVE OUT. Prints {cpuMs, maxRssMb, wallMs, rows} as JSON.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, zstdCompressSync } from "node:zlib";
import { compactPartition, openArchive, parseLandingKey } from "@auditpipe/compact";

const [writer, archive, out] = process.argv.slice(2);
const t0 = performance.now();
const files: string[] = [];
const walk = (d: string): void => {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith(".ndjson.gz")) files.push(p);
  }
};
walk(archive!);
let rows = 0;
if (writer === "duckdb") {
  const store = await openArchive(archive!);
  const objects = files.map((f) => parseLandingKey(f.slice(archive!.length + 1), 0)!).filter(Boolean);
  const first = objects[0]!;
  const record = await compactPartition(store, { dt: first.dt, hour: first.hour, host: first.host }, objects);
  writeFileSync(out!, readFileSync(join(archive!, record.key)));
  rows = record.rows;
} else {
  const { parquetWriteBuffer } = await import("hyparquet-writer");
  type Line = Record<string, unknown> & {
    ts: string;
    session_id: string;
    session_line: number;
    source: { file: string; offset: number };
  };
  const lines: Line[] = [];
  for (const f of files.sort())
    for (const l of gunzipSync(readFileSync(f)).toString("utf8").split("\n"))
      if (l) lines.push(JSON.parse(l) as Line);
  lines.sort(
    (a, b) =>
      (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0) ||
      (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0) ||
      a.session_line - b.session_line ||
      a.source.offset - b.source.offset,
  );
  const col = (name: string, pick: (l: Line) => unknown, type: string) => ({
    name,
    data: lines.map(pick),
    type,
  });
  const str = (k: string) => col(k, (l) => (l[k] ?? null) as string | null, "STRING");
  const int = (k: string, t = "INT64") =>
    col(
      k,
      (l) => (l[k] === null || l[k] === undefined ? null : t === "INT64" ? BigInt(l[k] as number) : l[k]),
      t,
    );
  const columnData = [
    col("record", (l) => (l.record as string) ?? "entry", "STRING"),
    col("ts", (l) => new Date(l.ts), "TIMESTAMP"),
    ...["user", "database"].map(str),
    int("pid", "INT32"),
    str("session_id"),
    int("session_line"),
    ...["application_name", "remote_host", "audit_type"].map(str),
    int("statement_id"),
    int("substatement_id"),
    ...["class", "command", "object_type", "object_name", "statement"].map(str),
    // Lists as JSON text here: the comparison is of the writer's cost and size on the same values.
    col("parameter", (l) => (Array.isArray(l.parameter) ? JSON.stringify(l.parameter) : null), "JSON"),
    col("parameter_marker", (l) => (Array.isArray(l.parameter) ? null : (l.parameter as string)), "STRING"),
    int("rows"),
    ...["outcome", "sqlstate"].map(str),
    col("source_file", (l) => l.source.file, "STRING"),
    col("source_offset", (l) => BigInt(l.source.offset), "INT64"),
  ];
  const buffer = parquetWriteBuffer({
    columnData: columnData as never,
    codec: "ZSTD",
    compressors: { ZSTD: (b: Uint8Array) => new Uint8Array(zstdCompressSync(b)) } as never,
    rowGroupSize: 30_000,
  });
  writeFileSync(out!, new Uint8Array(buffer));
  rows = lines.length;
}
const u = process.resourceUsage();
process.stdout.write(
  JSON.stringify({
    cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000,
    maxRssMb: u.maxRSS / 1024,
    wallMs: performance.now() - t0,
    rows,
  }),
);
