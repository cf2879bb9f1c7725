import { REDACTED_VALUE, redactParameter, redactStatement } from "@auditpipe/ship";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FixtureEntry, fixtureEntries } from "./_redact-fixtures.ts";

const entries: FixtureEntry[] = fixtureEntries();
const statements = [...new Set(entries.map((e) => e.statement))];

/**
 * Constants the fixture session (fixtures/src/session.ts) wrote, as their content: known
 * independently of our lexer. Each must occur in some logged statement (checked below, so this
 * list cannot silently go stale) and in no redacted one.
 */
const SESSION_CONSTANTS = [
  "hunter2",
  "bob@example.com",
  "Grüße, 世界 ✓",
  "O''Brien, \"Bob\"",
  "tab\\there\\nnew line",
  "back\\slash@example.com",
  "gruss@example.com",
  "%,%",
  "renamed",
  'one, "1"',
  "'customer '",
  "from DO",
  "called",
  "'kept'",
  "rolled back",
  "8MB",
  "psql, renamed",
  "fixture app, with spaces",
  "compound one",
  "compound two",
  "in another database",
  "dollar 'quoted'",
  "$$plain$$",
  "\\\\back\\\\slash",
  "x".repeat(20),
  "é".repeat(20),
  "word0, ",
  "10.50",
  "'book'",
  "'ink'",
];

/**
 * What may remain of a redacted statement once placeholders, quoted identifiers, type modifiers
 * and identifiers are removed: a digit, quote or dollar quote left over is a constant that
 * survived. A plain regex pass, deliberately unrelated to the lexer under test.
 */
function leftovers(redacted: string): string {
  return redacted
    .replace(/"(?:[^"]|"")*"/g, " ")
    .replace(/'\$\d+'|\$\d+/g, " ")
    .replace(/\b(?:char|numeric|varchar|timestamp)\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\)/gi, " ")
    .replace(/[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*/g, " ")
    .replace(/(?<![\w.])0(?![\w.])/g, " "); // utility statements' numeric placeholder
}

describe("redaction of every fixture statement", () => {
  it("has real data to work on", () => {
    expect(new Set(entries.map((e) => e.case)).size).toBeGreaterThanOrEqual(5);
    expect(statements.length).toBeGreaterThan(1000);
  });

  it("lets none of the session's known constants through", () => {
    for (const constant of SESSION_CONSTANTS) {
      const holding = statements.filter((s) => s.includes(constant));
      expect(holding.length, `no fixture statement holds ${constant}`).toBeGreaterThan(0);
      for (const s of holding) expect(redactStatement(s).text).not.toContain(constant);
    }
  });

  it("leaves no digit, quote or dollar quote outside placeholders, identifiers and type modifiers", () => {
    let replaced = 0;
    for (const s of statements) {
      const { text, literals } = redactStatement(s);
      replaced += literals;
      expect(leftovers(text), text).not.toMatch(/[0-9']|\$\w*\$/);
    }
    expect(replaced).toBeGreaterThan(statements.length);
  });

  it("redacts every logged parameter value", () => {
    const withValues = entries.filter((e) => Array.isArray(e.parameter));
    expect(withValues.length).toBeGreaterThan(5);
    for (const { parameter } of withValues) {
      const out = redactParameter(parameter) as (string | null)[];
      expect(out).toHaveLength((parameter as (string | null)[]).length);
      out.forEach((v, i) => {
        const original = (parameter as (string | null)[])[i];
        expect(v).toBe(
          original === null ? null : original === "<long param suppressed>" ? original : REDACTED_VALUE,
        );
      });
    }
  });
});

describe("redacted fixture statements parse in a real PostgreSQL", () => {
  let pg: PostgresCluster;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });

  /**
   * PostgreSQL parses a whole simple-protocol string before it executes any of it, so a leading
   * `SELECT 1/0` fails with division_by_zero (22012) when everything parses, and nothing else
   * runs; a grammar error anywhere gives syntax_error (42601) first.
   */
  async function sqlstate(sql: string): Promise<string> {
    try {
      await pg.query(`SELECT 1/0;\n${sql}`);
      return "none";
    } catch (error) {
      return (error as { code?: string }).code ?? String(error);
    }
  }

  it("the check itself tells parseable from not (pg_stat_statements' form of these would not parse)", async () => {
    expect(await sqlstate("SELECT interval '1 day'")).toBe("22012");
    expect(await sqlstate("SELECT interval $1")).toBe("42601");
    expect(await sqlstate("SET work_mem = $1")).toBe("42601");
    expect(await sqlstate("DO $1")).toBe("42601");
  });

  /** Every placeholder rule, including the constructs the fixtures do not hold. */
  const HAND_WRITTEN = [
    "SELECT 'a''b', E'\\'', B'101', X'1F', N'n', U&'d!0061t' UESCAPE '!', $$x$$, $t$ 'y' $t$, 'c'\n'd', .5, 1e10, -5", // 0x1F, 1_000: PostgreSQL 16; the testkit runs 15
    "SELECT interval '1 day', date '2024-01-01', timestamp(3) with time zone '2024-01-01', interval '1' second(3), jsonb '{}', \"int4\" '1'",
    "SELECT now() AT TIME ZONE 'UTC', EXTRACT('year' FROM now()), 'x'::varchar(10), CAST(1.5 AS numeric(12,2)), '{1}'::int[]",
    "SELECT * FROM t WHERE a LIKE 'x%' ESCAPE '!' AND b BETWEEN 1 AND 2 ORDER BY 1 LIMIT 10 OFFSET 5",
    "SELECT * FROM t FETCH FIRST 10 ROWS ONLY",
    "SELECT substring('abc' FROM 2 FOR 1), trim(both 'x' FROM 'xax'), position('a' IN 'bab'), overlay('abc' PLACING 'x' FROM 2)",
    "INSERT INTO t VALUES (1, 'a') ON CONFLICT (id) DO UPDATE SET v = 'b' RETURNING 'c'",
    "WITH c AS (SELECT 1) SELECT CASE WHEN 1 = 1 THEN 'y' ELSE 'n' END FROM c",
    "SET work_mem TO '8MB'; SET statement_timeout = 5000; SET TIME ZONE 'UTC'",
    "ALTER ROLE r CONNECTION LIMIT 5 VALID UNTIL '2030-01-01'",
    "CREATE SEQUENCE s INCREMENT BY 5 START WITH 10 CACHE 20",
    "COMMENT ON TABLE t IS 'Bob''s table'",
    "COPY t FROM '/tmp/x.csv' WITH (FORMAT csv, DELIMITER ';', NULL '')",
    "CREATE TABLE t (a varchar(10) DEFAULT 'x' CHECK (a <> ''), b numeric(12,2) DEFAULT 0.5, c timestamp(3)) WITH (fillfactor=90)",
    "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "DO LANGUAGE plpgsql $$ BEGIN RAISE NOTICE 'x'; END $$",
    "PREPARE TRANSACTION 'gid'; COMMIT PREPARED 'gid'",
    "NOTIFY chan, 'payload'",
    "CREATE TYPE mood AS ENUM ('sad', 'ok')",
    "ALTER SYSTEM SET work_mem = '4MB'",
    // A constant glued to a word: `$1AS` would be trailing junk after a parameter.
    "SELECT 'x'AS y, 'a'||'b'AS z FROM t WHERE a='x'OR b=$$y$$AND c=E'z'IS NOT NULL",
    // Type modifiers where a type name goes; data in parentheses after any other AS.
    "WITH c AS MATERIALIZED (SELECT 42) SELECT CAST(1.5 AS numeric(10,2)), 2::pg_catalog.numeric(10,2), interval '1' minute to second(3), 'x'::character varying(5), TREAT(x AS numeric(3)) FROM c",
    "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START WITH 5), v varchar(10), w timestamp(3), i interval(2))",
    "SELECT second(5), varying(6), public.numeric(7)",
  ];

  it("hand-written statements exercising every placeholder rule still parse", async () => {
    for (const s of HAND_WRITTEN) {
      expect(await sqlstate(s), s).toBe("22012");
      const { text, literals } = redactStatement(s);
      expect(literals, s).toBeGreaterThan(0);
      expect(await sqlstate(text), text).toBe("22012");
    }
  });

  it("every statement that parsed before redaction parses after it", async () => {
    const failures: string[] = [];
    let parsed = 0;
    for (const s of statements) {
      const before = await sqlstate(s);
      const redacted = redactStatement(s).text;
      if (before === "22012") parsed++;
      else {
        // Only pgAudit's markers and its <REDACTED> passwords are not SQL to begin with.
        expect(s === "<not logged>" || s === "<previously logged>" || s.includes("<REDACTED>"), s).toBe(true);
        expect(redacted).toBe(s);
        continue;
      }
      const after = await sqlstate(redacted);
      if (after !== "22012") failures.push(`${after}: ${redacted}`);
    }
    expect(failures).toEqual([]);
    expect(parsed).toBeGreaterThan(1000);
  });
});
