/**
 * Real pgAudit output for the csvlog/jsonlog tests: a throwaway PostgreSQL 15 + pgaudit cluster
 * runs statements chosen to stress quoting, then we read back what the server wrote.
 */
import { readFileSync } from "node:fs";
import type { LogParser, LogRecord, MalformedRecord, ParserOptions, RecordSink } from "@auditpipe/parse";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";

export interface Samples {
  csv: Buffer;
  json: Buffer;
}

/** Statements and their parameters, run in order; the tests assert on their audit entries. */
export async function runStatements(pg: PostgresCluster): Promise<void> {
  await pg.query("CREATE TABLE t (id serial PRIMARY KEY, v text)");
  await pg.query(`INSERT INTO t (v) VALUES ('a,b'), ('x"y'), (E'line1\\nline2\\ttab\\\\bs'), ('héllo ✓ 😀')`);
  await pg.query("SELECT $1::text, $2::text, $3::text, $4::text, $5::int", ["a,b", 'x"y', null, "", 7]);
  await pg.query("SELECT $1::text", ["plain"]);
  await pg.query('SELECT $1::text AS "quoted, name"', ['line\nbreak "q"']);
  await pg.query("DO $$BEGIN PERFORM 1; END$$");
  await pg.query("CREATE ROLE bob PASSWORD 'secret'");
  await pg.query("SELECT 1; SELECT 2");
  await pg.query('SELECT $q$it\'s, "dollar"$q$ AS x');
  await pg.query("UPDATE t SET v = v || '!' WHERE id <= 3");
}

/** Starts a cluster with csvlog+jsonlog and full pgaudit logging, runs runStatements, returns the logs. */
export async function collectSamples(): Promise<Samples> {
  const pg = await startPostgres({
    logDestination: ["csvlog", "jsonlog"],
    pgaudit: { log: "all", log_parameter: true, log_rows: true },
  });
  try {
    await pg.query("SET application_name = 'auditpipe-test'");
    await runStatements(pg);
    await pg.query("SELECT 'the end'");
    const files = pg.currentLogfiles();
    // The logging collector writes asynchronously: wait for the last statement in both files.
    await waitUntil(
      () =>
        [files.csvlog, files.jsonlog].every(
          (f) => f !== undefined && readFileSync(f, "utf8").includes("the end"),
        ),
      10_000,
      () => "the last statement never reached the csvlog and jsonlog files",
    );
    return { csv: readFileSync(files.csvlog!), json: readFileSync(files.jsonlog!) };
  } finally {
    await pg.stop();
  }
}

export interface Collected {
  records: LogRecord[];
  malformed: MalformedRecord[];
}

/** Runs a parser over `chunks` and collects what it reports. */
export function collect(
  create: (sink: RecordSink, options?: ParserOptions) => LogParser,
  chunks: Uint8Array[],
  options?: ParserOptions,
): Collected {
  const out: Collected = { records: [], malformed: [] };
  const parser = create(
    { record: (r) => out.records.push(r), malformed: (m) => out.malformed.push(m) },
    options,
  );
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return out;
}
