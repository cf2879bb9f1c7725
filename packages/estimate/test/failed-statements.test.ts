/**
 * Statements that fail are in pgaudit's log (it logs at the privilege check, before they run)
 * but not in pg_stat_statements (which counts what completes): the sample says so when
 * pg_stat_database rolled back more transactions than the ROLLBACKs it counted (measured on a
 * real server, 2026-12-07: three INSERTs of one key, two failing, were three WRITE entries and
 * one call).
 */
import { type StatementLoad, sampleWorkload } from "@auditpipe/estimate";
import { startPostgres } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { failedTransactionsWarning, type Snapshot } from "../src/_snapshot-rates.ts";

const snap = (xacts: number, rollbacks: number): Snapshot => ({
  statements: null,
  hiddenCalls: new Map(),
  tables: new Map(),
  xacts,
  rollbacks,
  evictions: null,
  sessions: 0,
});
const rollback = (callsPerSec: number): StatementLoad => ({
  text: "ROLLBACK",
  callsPerSec,
  kind: "UTILITY",
  command: "ROLLBACK",
  relations: [],
  rowsPerCall: 0,
});

describe("failed transactions", () => {
  it("rollbacks beyond the ROLLBACKs counted are errors, whose statements pgaudit logs and pg_stat_statements does not", () => {
    const warning = failedTransactionsWarning(snap(0, 0), snap(1000, 100), 10, [rollback(4)]);
    expect(warning).toMatch(/^6\.0 transactions\/s \(6 %\) were rolled back without a ROLLBACK/);
    expect(warning).toMatch(/the estimate is low/);
  });

  it("ROLLBACKs of the application's own may follow failed statements (retries): said, with their rate", () => {
    const warning = failedTransactionsWarning(snap(0, 0), snap(1000, 40), 10, [rollback(4)]);
    expect(warning).toMatch(/^4\.0 ROLLBACKs\/s \(4 % of transactions\) were counted/);
    expect(warning).toMatch(/low by up to one of its entries per ROLLBACK/);
  });

  it("says nothing for a stray error or ROLLBACK, or where rollbacks are unknown", () => {
    expect(failedTransactionsWarning(snap(0, 0), snap(1000, 3), 10, [rollback(0.3)])).toBeNull();
    expect(failedTransactionsWarning(snap(0, 0), snap(1000, 3), 10, [])).toBeNull();
    const older = { ...snap(0, 0), rollbacks: undefined };
    expect(failedTransactionsWarning(older, snap(1000, 100), 10, [])).toBeNull();
  });
});

describe("failed transactions, on a real server", () => {
  it("the sample warns when the workload's statements fail", async () => {
    const pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"], pgaudit: { log: "none" } });
    try {
      await pg.query(
        "CREATE EXTENSION pg_stat_statements; CREATE TABLE k (id int PRIMARY KEY); INSERT INTO k VALUES (1)",
      );
      const client = await pg.connect();
      let failures = 0;
      let running = true;
      // An application that inserts keys it expects to exist now and then: each one fails.
      const load = (async () => {
        while (running) await client.query("INSERT INTO k VALUES (1)").catch(() => failures++);
      })();
      try {
        const sample = await sampleWorkload({
          connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
          intervalMs: 2_000,
        });
        expect(failures).toBeGreaterThan(0);
        expect(sample.warnings.some((w) => /rolled back without a ROLLBACK/.test(w))).toBe(true);
      } finally {
        running = false;
        await load;
        await client.end();
      }
    } finally {
      await pg.stop();
    }
  });
});
