/**
 * pgaudit.log as pgaudit 1.7 reads it, on a real PostgreSQL 15 + pgaudit: for each value, the
 * statements it logs are those whose class `sessionClasses` turns on. `misc` includes misc_set
 * (check_pgaudit_log: LOG_MISC | LOG_MISC_SET), so `misc, -misc_set` is how SET is left out;
 * SET ROLE is a SET (MISC_SET), not ROLE; `none` adds nothing. Entries reach the client as
 * notices (pgaudit.log_client), so each statement's entries are read as it runs.
 */
import { sessionClasses } from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { utilityClass } from "../src/_entries.ts";

let pg: PostgresCluster;

beforeAll(async () => {
  pg = await startPostgres({ pgaudit: { log: "none", log_client: true, log_level: "notice" } });
  await pg.query("CREATE TABLE t (id int); CREATE ROLE someone");
});

afterAll(async () => {
  await pg?.stop();
});

/** Statements, each with the class the estimator gives it. */
const STATEMENTS: [string, string][] = [
  ["SET work_mem = '8MB'", utilityClass("SET")],
  ["RESET work_mem", utilityClass("RESET")],
  ["SET ROLE someone", utilityClass("SET")],
  ["RESET ROLE", utilityClass("RESET")],
  ["BEGIN", utilityClass("BEGIN")],
  ["SET LOCAL work_mem = '9MB'", utilityClass("SET")],
  ["COMMIT", utilityClass("COMMIT")],
  ["SHOW work_mem", utilityClass("SHOW")],
  ["SELECT 1", "READ"],
  ["INSERT INTO t VALUES (1)", "WRITE"],
  ["CREATE TABLE u (id int)", utilityClass("CREATE TABLE")],
  ["DROP TABLE u", utilityClass("DROP TABLE")],
  ["GRANT SELECT ON t TO someone", utilityClass("GRANT")],
  ["DO $$ BEGIN NULL; END $$", utilityClass("DO")],
];

const VALUES = [
  "misc",
  "misc_set",
  "misc, -misc_set",
  "all, -misc",
  "all, -misc_set",
  "read, none",
  "role",
  "ddl",
  "function",
  "read, write",
];

describe("pgaudit.log, token by token", () => {
  for (const value of VALUES)
    it(`'${value}' logs what sessionClasses says`, async () => {
      const on = sessionClasses(value);
      const c = await pg.connect();
      const logged: string[] = [];
      c.on("notice", (n) => {
        if (n.message?.startsWith("AUDIT: SESSION,")) logged.push(n.message);
      });
      try {
        await c.query(`SET pgaudit.log = '${value.replaceAll("'", "''")}'`);
        const seen: string[] = [];
        const expected: string[] = [];
        for (const [sql, cls] of STATEMENTS) {
          logged.length = 0;
          await c.query(sql);
          await c.query("SHOW server_version"); // a round trip: the statement's notices are in
          const own = logged.filter((m) => !m.includes(",SHOW,") || sql.startsWith("SHOW"));
          if (own.length > 0) seen.push(sql);
          if (on.has(cls)) expected.push(sql);
        }
        expect(seen).toEqual(expected);
      } finally {
        await c.end();
      }
    });
});
