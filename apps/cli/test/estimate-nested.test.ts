/**
 * `estimate` says whether statements run inside others were counted or modelled, in the table
 * and in --json, and `--track-nested` counts them on a real PostgreSQL 15 and leaves
 * pg_stat_statements.track as it was.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const workload = join(tmpdir(), `auditpipe-nested-${process.pid}.json`);
writeFileSync(
  workload,
  JSON.stringify({
    transactionsPerSec: 10,
    statements: [
      {
        text: "INSERT INTO public.orders (customer_id) VALUES ($1)",
        callsPerSec: 10,
        kind: "INSERT",
        relations: [{ relation: "public.orders", write: "INSERT" }],
      },
    ],
    log: { destination: "csvlog" },
  }),
);

describe("estimate: counted or modelled", () => {
  it("a workload file is modelled, and the output says what that may miss", async () => {
    const out = await runCli(["estimate", "--workload", workload, "--audit", "write"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^Modelled: statements run inside others are derived from the catalog/m);
    expect(out.stdout).toMatch(/may miss statements inside functions, procedures and triggers/);
    const json = await runCli(["estimate", "--workload", workload, "--audit", "write", "--json"]);
    expect(JSON.parse(json.stdout).nestedStatements).toMatchObject({
      mode: "modelled",
      mayMiss: expect.stringMatching(/foreign-key checks/),
    });
  });

  describe("--track-nested on a live server", () => {
    let pg: PostgresCluster;
    beforeAll(async () => {
      pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"], pgaudit: { log: "none" } });
      await pg.query("CREATE EXTENSION pg_stat_statements");
    });
    afterAll(async () => {
      await pg?.stop();
    });

    it("counts, says so, and puts pg_stat_statements.track back", async () => {
      const out = await runCli([
        "estimate",
        "--db",
        pg.connectionString,
        "--interval",
        "1",
        "--track-nested",
        "--audit",
        "write",
        "--json",
      ]);
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout).nestedStatements).toEqual({
        mode: "counted",
        reason: "pg_stat_statements.track was switched to 'all' for the sample and put back to 'top'",
      });
      const table = await runCli([
        "estimate",
        "--db",
        pg.connectionString,
        "--interval",
        "1",
        "--track-nested",
      ]);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(
        /^Counted: statements run inside others .* come from pg_stat_statements; /m,
      );
      const r = await pg.query("SELECT current_setting('pg_stat_statements.track') AS v");
      expect(r.rows[0]?.v).toBe("top");
    });

    it("recommend --track-nested counts the foreign-key checks its grants log, and says so", async () => {
      await pg.query(`CREATE TABLE IF NOT EXISTS patient (id int PRIMARY KEY, diagnosis text);
        CREATE TABLE IF NOT EXISTS visit (id serial PRIMARY KEY, patient_id int REFERENCES patient);
        INSERT INTO patient SELECT g, 'none' FROM generate_series(1, 100) g ON CONFLICT DO NOTHING`);
      let sampling = true;
      const load = (async () => {
        // Inserts run until the sample is over: each checks its patient.
        for (let i = 0; sampling; i++)
          await pg.query(`INSERT INTO visit (patient_id) VALUES (${1 + (i % 100)})`);
      })();
      const out = await runCli([
        "recommend",
        "--db",
        pg.connectionString,
        "--interval",
        "2",
        "--track-nested",
      ]);
      sampling = false;
      await load;
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toMatch(
        /^-- Counted: statements run inside others .* come from pg_stat_statements; /m,
      );
      expect(out.stdout).toMatch(
        /^-- public\.patient is referenced by foreign keys \(from public\.visit\): the recommended grants make pgaudit log each foreign-key check of it as an OBJECT READ/m,
      );
      expect(out.stdout).toMatch(/^-- after \(recommended\)\s+[1-9]/m);
      const r = await pg.query("SELECT current_setting('pg_stat_statements.track') AS v");
      expect(r.rows[0]?.v).toBe("top");
    });
  });
});
