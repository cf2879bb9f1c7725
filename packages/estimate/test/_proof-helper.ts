/** Switching audit configurations on a live cluster and measuring what pgaudit wrote. */
import { closeSync, mkdtempSync, openSync, readSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditConfig } from "@auditpipe/estimate";
import type { VolumeReport } from "@auditpipe/meter";
import { type PostgresCluster, rewriteDocSection, sleep, waitUntil } from "@auditpipe/testkit";
import pg from "pg";
// Measured as `auditpipe analyze` measures it, without importing the CLI (an app above us).
import { analyzeFiles } from "./_log-volume.ts";

const lit = (s: string): string => `'${s.replaceAll("'", "''")}'`;
const ident = (s: string): string => `"${s.replaceAll('"', '""')}"`;
const onOff = (b: boolean | undefined): string => (b ? "on" : "off");

function quoted(relation: string): string {
  // Already as quote_qualified_identifier prints it (a mixed-case name): as is.
  if (relation.includes('"')) return relation;
  const [schema, table] = relation.split(".");
  return `${ident(schema!)}.${ident(table!)}`;
}

/** ALTER SYSTEM + reload; the audit role's grants replaced by the configuration's. */
export async function applyConfig(pg: PostgresCluster, c: AuditConfig, auditor: string): Promise<void> {
  const statements = [
    `ALTER SYSTEM SET pgaudit.log = ${lit(c.log.join(","))}`,
    `ALTER SYSTEM SET pgaudit.log_relation = ${onOff(c.logRelation)}`,
    `ALTER SYSTEM SET pgaudit.log_catalog = ${onOff(c.logCatalog !== false)}`,
    `ALTER SYSTEM SET pgaudit.log_statement_once = ${onOff(c.logStatementOnce)}`,
    `ALTER SYSTEM SET pgaudit.log_parameter = ${onOff(c.logParameter)}`,
    `ALTER SYSTEM SET pgaudit.log_rows = ${onOff(c.logRows)}`,
    `ALTER SYSTEM SET pgaudit.role = ${lit(c.role ?? "")}`,
    // Every user schema's tables (a workload's may live outside public).
    `DO $r$ DECLARE s name; BEGIN
       FOR s IN SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' LOOP
         EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', s, ${lit(auditor)});
       END LOOP; END $r$`,
    ...(c.grants ?? []).map(
      (g) =>
        `GRANT ${g.privileges.join(", ")}${g.columns ? ` (${g.columns.map(ident).join(", ")})` : ""} ON ${quoted(g.relation)} TO ${ident(auditor)}`,
    ),
    "SELECT pg_reload_conf()",
  ];
  for (const sql of statements) await pg.query(sql);
  // A new backend must see the new settings before the load starts.
  const want = c.log.join(",");
  for (let i = 0; i < 50; i++) {
    const client = await pg.connect();
    try {
      const r = await client.query(
        "SELECT current_setting('pgaudit.log') AS log, current_setting('pgaudit.role') AS role",
      );
      if (r.rows[0].log === want && r.rows[0].role === (c.role ?? "")) return;
    } finally {
      await client.end();
    }
    await sleep(100);
  }
  throw new Error(`pgaudit settings did not take effect: ${want}`);
}

let markers = 0;

/** The bytes of `file` from `from` to its end. */
function readFrom(file: string, from: number): Buffer {
  const bytes = Buffer.alloc(Math.max(0, statSync(file).size - from));
  const fd = openSync(file, "r");
  try {
    const n = readSync(fd, bytes, 0, bytes.length, from);
    return bytes.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a LOG line from a session pgaudit does not audit (pgaudit.log = none from its startup
 * packet: no SET is logged, and a DO block touches no relation) and waits until the logging
 * collector has put it in the csvlog `file`; returns where its record starts and ends. The
 * collector writes what the backends sent in order, so everything logged before it is there too.
 */
async function logMarker(cluster: PostgresCluster, file: string): Promise<{ start: number; end: number }> {
  const marker = `auditpipe-proof-marker-${process.pid}-${++markers}`;
  const from = statSync(file).size; // written after this call, so past the file's end now
  const client = new pg.Client({
    host: cluster.socketDir,
    port: cluster.port,
    user: "postgres",
    database: "postgres",
    options: "-c pgaudit.log=none",
  });
  await client.connect();
  try {
    await client.query(`DO $$ BEGIN RAISE LOG '${marker}'; END $$`);
  } finally {
    await client.end();
  }
  let tail: Buffer = Buffer.alloc(0);
  await waitUntil(
    () => {
      tail = readFrom(file, from);
      const at = tail.indexOf(marker);
      return at !== -1 && tail.indexOf(0x0a, at) !== -1;
    },
    60_000,
    () => `the logging collector did not write ${marker} to ${file}`,
    20,
  );
  const at = tail.indexOf(marker);
  return { start: from + tail.lastIndexOf(0x0a, at) + 1, end: from + tail.indexOf(0x0a, at) + 1 };
}

/** Runs `load` and analyzes the log bytes written meanwhile (csvlog, jsonlog or stderr: a copy of that slice of the file). */
export async function measureBytes(
  cluster: PostgresCluster,
  load: () => Promise<unknown>,
): Promise<VolumeReport> {
  const files = cluster.currentLogfiles();
  const format = files.csvlog ? "csvlog" : files.jsonlog ? "jsonlog" : "stderr";
  const file = files.csvlog ?? files.jsonlog ?? files.stderr;
  if (!file) throw new Error("no log file");
  const prefix =
    format === "stderr"
      ? (await cluster.query<{ p: string }>("SELECT current_setting('log_line_prefix') AS p")).rows[0]!.p
      : undefined;
  // Between two marker lines: what the load wrote, and nothing of the markers themselves.
  const before = await logMarker(cluster, file);
  await load();
  const after = await logMarker(cluster, file);
  const slice = Buffer.alloc(after.start - before.end);
  const fd = openSync(file, "r");
  try {
    readSync(fd, slice, 0, slice.length, before.end);
  } finally {
    closeSync(fd);
  }
  const out = join(mkdtempSync(join(tmpdir(), "auditpipe-slice-")), `slice.${format}`);
  writeFileSync(out, slice);
  return analyzeFiles([out], { format, ...(prefix === undefined ? {} : { prefix }) });
}

export interface ProofRow {
  workload: string;
  config: string;
  predictedEntries: number;
  measuredEntries: number;
  predictedBytes: number;
  measuredBytes: number;
  /** Bytes per transaction the model alone predicts (nested statements not counted). */
  modelledBytes: number;
}

// A value that rounds to zero prints 0.0%, never -0.0%.
const pct = (x: number): string => `${(Math.abs(x) < 0.0005 ? 0 : x * 100).toFixed(1)}%`;

/**
 * With AUDITPIPE_WRITE_PROOF=1, replaces the table between the proof markers of docs/estimator.md;
 * `run` says when and where it was measured.
 */
export function writeProofTable(rows: ProofRow[], run: string): void {
  const table = [
    run,
    "",
    "| workload | configuration | entries/txn predicted | measured | bytes/txn predicted | measured | error | modelled |",
    "|---|---|--:|--:|--:|--:|--:|--:|",
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.config} | ${r.predictedEntries.toFixed(2)} | ${r.measuredEntries.toFixed(2)} | ${r.predictedBytes.toFixed(0)} | ${r.measuredBytes.toFixed(0)} | ${pct(r.predictedBytes / r.measuredBytes - 1)} | ${pct(r.modelledBytes / r.measuredBytes - 1)} |`,
    ),
  ].join("\n");
  process.stdout.write(`\n${table}\n`);
  if (process.env.AUDITPIPE_WRITE_PROOF === "1") rewriteDocSection("estimator.md", "proof", table);
}
