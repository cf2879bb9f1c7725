/**
 * `audit` over a local-dir archive the real pipeline wrote from a real log: the same rows whether
 * read from the landing NDJSON or the compacted Parquet; the named reports; the engine locked to
 * the archive and to one SELECT; a time-bounded view reads only the partitions it needs.
 */
import { mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compactArchive, openArchive } from "@auditpipe/compact";
import { openAuditView, QueryErrorCode, reportSql, runQuery } from "@auditpipe/query";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-query-test-"));
const dir = join(work, "archive");
let shipped = 0;

beforeAll(async () => {
  shipped = (await shipFixture("session-all/postgresql.csv.gz", dir)).rows;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function query(sql: string, options = {}) {
  const view = await openAuditView(await openArchive(dir), options);
  try {
    return { ...(await runQuery(view.engine, sql)), scope: view.scope };
  } finally {
    await view.close();
  }
}

const SNAPSHOT_SQL = `SELECT class, command, count(*) AS n, count(DISTINCT session_id) AS sessions,
  sum("rows") AS "rows", count(parameter) AS with_values FROM audit GROUP BY ALL ORDER BY ALL`;

describe("the audit view", () => {
  let fromNdjson: unknown[][];

  it("reads the landing NDJSON of an archive not compacted yet", async () => {
    const r = await query(
      "SELECT count(*) AS n, count(DISTINCT (session_id, session_line)) AS distinct_entries FROM audit",
    );
    expect(r.rows).toEqual([[String(shipped), String(shipped)]]);
    expect(r.scope).toMatchObject({ parquetFiles: 0, fetchedBytes: 0 });
    expect(r.scope.ndjsonFiles).toBeGreaterThan(5);
    fromNdjson = (await query(SNAPSHOT_SQL)).rows;
  });

  it("gives the same rows from the compacted Parquet file, and from both when the hour grew after compaction", async () => {
    await compactArchive(await openArchive(dir), { now: LATER });
    const r = await query(SNAPSHOT_SQL);
    expect(r.scope).toMatchObject({ parquetFiles: 1, ndjsonFiles: 0 });
    expect(r.rows).toEqual(fromNdjson);
    // A late landing object (not in the compaction record) is read as NDJSON beside the file.
    const more = (await shipFixture("read-write-once/postgresql.csv.gz", dir)).rows;
    const both = await query("SELECT count(*) FROM audit");
    expect(both.scope).toMatchObject({ parquetFiles: 1 });
    expect(both.scope.ndjsonFiles).toBeGreaterThan(0);
    expect(both.rows).toEqual([[String(shipped + more)]]);
    await compactArchive(await openArchive(dir), { now: LATER });
  });

  it("types the columns as the Parquet archive does", async () => {
    const r = await query("SELECT ts, session_line, parameter, source, host FROM audit LIMIT 1");
    expect(r.columns).toEqual(["ts", "session_line", "parameter", "source", "host"]);
    expect(r.types).toEqual([
      "TIMESTAMP WITH TIME ZONE",
      "BIGINT",
      "VARCHAR[]",
      'STRUCT("file" VARCHAR, "offset" BIGINT)',
      "VARCHAR",
    ]);
  });

  it("reads only the partitions a time-bounded query needs, and only rows in the bounds", async () => {
    const all = await query("SELECT count(*) FROM audit");
    const none = await query("SELECT count(*) FROM audit", {
      from: new Date("2026-11-24T00:00:00Z"),
      to: new Date("2026-11-25T00:00:00Z"),
    });
    expect(none.rows).toEqual([["0"]]);
    expect(none.scope).toMatchObject({ parquetFiles: 0, ndjsonFiles: 0, bytes: 0 });
    expect(none.scope.archiveBytes).toBe(all.scope.archiveBytes);
    // A window inside the fixture's hour: the file is read, the rows are cut by ts.
    const some = await query("SELECT count(*), min(ts) >= TIMESTAMPTZ '2026-11-23 07:46:13.6Z' FROM audit", {
      from: new Date("2026-11-23T07:46:13.600Z"),
      to: new Date("2026-11-23T07:46:13.700Z"),
    });
    expect(some.scope.parquetFiles).toBe(1);
    const n = Number(some.rows[0]![0]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(Number(all.rows[0]![0]));
    expect(some.rows[0]![1]).toBe(true);
  });
});

describe("named reports", () => {
  it("who-touched finds entries by object and, without one, by statement text", async () => {
    const r = await query(reportSql("who-touched", { table: "public.pgbench_branches" }));
    const matched = r.rows.map((row) => row[r.columns.indexOf("matched_by")]);
    expect(matched).toContain("object");
    expect(matched).toContain("statement text");
    const statements = r.rows.map((row) => String(row[r.columns.indexOf("statement")]).toLowerCase());
    // pgaudit.log_statement_once writes a statement's text once, then `<previously logged>`.
    expect(statements.every((s) => s.includes("pgbench_branches") || s === "<previously logged>")).toBe(true);
    // A bare name matches the table in any schema: the same rows here.
    const bare = await query(reportSql("who-touched", { table: "pgbench_branches" }));
    expect(bare.rows).toEqual(r.rows);
    // Not a prefix match: pgbench_branches_x would not be touched.
    const none = await query(reportSql("who-touched", { table: "public.pgbench_branche" }));
    expect(none.rows).toEqual([]);
  });

  it("grants lists DDL and ROLE changes in time order; by-user sums to every entry", async () => {
    const g = await query(reportSql("grants"));
    const classes = new Set(g.rows.map((row) => row[g.columns.indexOf("class")]));
    expect([...classes].sort()).toEqual(["DDL", "ROLE"]);
    expect(g.rows.some((row) => String(row[g.columns.indexOf("command")]) === "GRANT")).toBe(true);
    const u = await query(reportSql("by-user"));
    const total = u.rows.reduce((n, row) => n + Number(row[u.columns.indexOf("entries")]), 0);
    expect(total).toBe(
      Number((await query("SELECT count(*) FROM audit WHERE record = 'entry'")).rows[0]![0]),
    );
    const users = u.rows.map((row) => row[0]);
    expect(users).toContain("Zoë O'Brien");
    const one = await query(reportSql("by-user", { user: "Zoë O'Brien" }));
    expect(one.rows.map((row) => row[0])).toEqual(["Zoë O'Brien"]);
  });
});

describe("the engine is locked to the archive", () => {
  const refused = async (sql: string) => {
    try {
      await query(sql);
    } catch (error) {
      return (error as { code?: string }).code;
    }
    return "ran";
  };

  it("runs one SELECT and nothing that writes, reads elsewhere, loads or changes a setting", async () => {
    const inside = join(dir, "leak.csv");
    expect(await refused(`COPY (SELECT * FROM audit) TO '${inside}'`)).toBe(QueryErrorCode.NOT_READ_ONLY);
    expect(readdirSync(dir)).not.toContain("leak.csv");
    expect(await refused("SELECT * FROM read_csv('/etc/passwd')")).toBe(QueryErrorCode.FAILED);
    expect(await refused("SELECT 1; SELECT 2")).toBe(QueryErrorCode.NOT_READ_ONLY);
    expect(await refused("SET enable_external_access = true")).toBe(QueryErrorCode.NOT_READ_ONLY);
    expect(await refused("INSTALL httpfs")).toBe(QueryErrorCode.NOT_READ_ONLY);
    expect(await refused("LOAD httpfs")).not.toBe("ran");
    expect(await refused(`ATTACH '${join(dir, "x.duckdb")}'`)).not.toBe("ran");
    expect(await refused("CREATE TABLE t AS SELECT 1")).toBe(QueryErrorCode.NOT_READ_ONLY);
    expect(await refused("SELECT * FROM read_parquet('https://example.com/x.parquet')")).toBe(
      QueryErrorCode.FAILED,
    );
    expect(await refused("SELECT 1")).toBe("ran");
  });
});

describe("a decision that arrives in a later hour", () => {
  it("is applied by the view to the entry still pending in its own hour's file", async () => {
    // Hand-made lines in the design's shipped-record shape (the outcome join is another
    // helper's; its real fixtures will replace these): an entry pending in hour 10, its decision
    // in hour 11.
    const late = join(work, "late");
    const { mkdirSync, writeFileSync } = await import("node:fs");
    const { gzipSync } = await import("node:zlib");
    const entry = {
      record: "entry",
      ts: "2026-11-23T10:59:59.000Z",
      user: "alice",
      database: "db",
      pid: 1,
      session_id: "s1",
      session_line: 7,
      application_name: "psql",
      remote_host: "[local]",
      audit_type: "SESSION",
      statement_id: 3,
      substatement_id: 1,
      class: "WRITE",
      command: "UPDATE",
      object_type: "TABLE",
      object_name: "public.t",
      statement: "UPDATE t SET x = 1",
      parameter: "<none>",
      rows: 1,
      outcome: "pending",
      sqlstate: null,
      source: { file: "pg.csv", offset: 100 },
    };
    const decision = {
      record: "outcome",
      session_id: "s1",
      session_line: 7,
      outcome: "rolled_back",
      sqlstate: null,
    };
    const put = (hour: string, lines: object[], range: string) => {
      mkdirSync(join(late, `dt=2026-11-23/hour=${hour}`), { recursive: true });
      writeFileSync(
        join(late, `dt=2026-11-23/hour=${hour}/fp-${range}.ndjson.gz`),
        gzipSync(lines.map((l) => `${JSON.stringify(l)}\n`).join("")),
      );
    };
    put("10", [entry], "0000000000000000-0000000000000200");
    put("11", [decision], "0000000000000200-0000000000000300");
    const results = await compactArchive(await openArchive(late), { now: LATER });
    expect(results.map((r) => r.record?.counts)).toEqual([
      expect.objectContaining({ entries: 1, pending: 1, laterDecisions: 0 }),
      expect.objectContaining({ entries: 0, laterDecisions: 1 }),
    ]);
    const view = await openAuditView(await openArchive(late));
    try {
      const r = await runQuery(view.engine, "SELECT record, outcome, session_line FROM audit");
      expect(r.rows).toEqual([["entry", "rolled_back", "7"]]);
    } finally {
      await view.close();
    }
    // In the same hour, compaction applies it itself: the row carries the final outcome.
    renameSync(
      join(late, "dt=2026-11-23/hour=11/fp-0000000000000200-0000000000000300.ndjson.gz"),
      join(late, "dt=2026-11-23/hour=10/fp-0000000000000200-0000000000000300.ndjson.gz"),
    );
    rmSync(join(late, "_compaction"), { recursive: true });
    rmSync(join(late, "parquet"), { recursive: true });
    const again = await compactArchive(await openArchive(late), { now: LATER });
    expect(again[0]!.record!.counts).toMatchObject({
      entries: 1,
      pending: 0,
      decisionsApplied: 1,
      laterDecisions: 0,
    });
    expect(again[0]!.record!.rows).toBe(1);
  });
});
