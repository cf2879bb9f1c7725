/**
 * pgaudit logs every database of the server; the sampler reads the one it connects to. When the
 * server's other databases run transactions during the sample, the estimate says which and how
 * many, so a team does not read one database's figure as the server's.
 */
import { sampleWorkload } from "@auditpipe/estimate";
import { startPostgres } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { otherDatabasesWarning, type Snapshot } from "../src/_snapshot-rates.ts";

const snap = (xacts: number, others?: Record<string, number>): Snapshot => ({
  statements: null,
  hiddenCalls: new Map(),
  tables: new Map(),
  xacts,
  evictions: null,
  sessions: 0,
  ...(others ? { otherDatabases: new Map(Object.entries(others)) } : {}),
});

describe("other databases", () => {
  it("names the busy ones with their rates and their share of the server's transactions", () => {
    const w = otherDatabasesWarning(snap(0, { shop: 0, crm: 10 }), snap(1000, { shop: 500, crm: 20 }), 10);
    expect(w).toMatch(/^other databases on this server ran 51\.0 transactions\/s \(34 % of the server's\)/);
    expect(w).toMatch(/"shop" 50\.0\/s, "crm" 1\.0\/s/);
  });

  it("says nothing when the others are idle or nearly so, or unknown", () => {
    expect(otherDatabasesWarning(snap(0, { shop: 7 }), snap(1000, { shop: 7 }), 10)).toBeNull();
    expect(otherDatabasesWarning(snap(0, { shop: 0 }), snap(1000, { shop: 5 }), 10)).toBeNull();
    // A monitoring agent's few a second beside a busy database.
    expect(otherDatabasesWarning(snap(0, { postgres: 0 }), snap(1000, { postgres: 30 }), 10)).toBeNull();
    expect(otherDatabasesWarning(snap(0), snap(1000, { shop: 500 }), 10)).toBeNull();
    // A database created during the sample counts from its first reading, not from zero.
    expect(otherDatabasesWarning(snap(0, {}), snap(1000, { fresh: 500 }), 10)).toBeNull();
  });
});

describe("other databases, on a real server", () => {
  it("the sample warns when another database is busy", async () => {
    const pg = await startPostgres({ pgaudit: { log: "none" } });
    try {
      await pg.query("CREATE DATABASE elsewhere");
      const client = await pg.connect({ database: "elsewhere" });
      let running = true;
      let done = 0;
      const load = (async () => {
        while (running) {
          await client.query("SELECT 1");
          done++;
        }
      })();
      try {
        const sample = await sampleWorkload({
          connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
          // Backends flush their counts at most once a second: room for a few flushes.
          intervalMs: 3_000,
        });
        expect(done).toBeGreaterThan(0);
        expect(sample.warnings.find((w) => /^other databases on this server ran/.test(w))).toMatch(
          /"elsewhere" \d+\.\d\/s/,
        );
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
