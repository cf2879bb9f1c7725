/**
 * Row-level security adds to what pgaudit logs what no statement's text shows: a policy's
 * subquery is one more relation (READ under log_relation and object auditing) and a function it
 * calls one more FUNCTION entry per statement (measured on PostgreSQL 15 + pgaudit 1.7, 2026-12-08:
 * a membership EXISTS and a PL/pgSQL check on a tenant's notes, run as a role the policies bind —
 * `all` 39 % low, `log_relation` 3 READ entries a transaction predicted where pgaudit wrote 10).
 * Not modelled: the sample names the tables, the relations and the functions.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sampleWorkload } from "@auditpipe/estimate";
import { startPostgres } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const SCHEMA = `
CREATE ROLE app LOGIN;
CREATE TABLE tenant_members (tenant int NOT NULL, member name NOT NULL, PRIMARY KEY (tenant, member));
CREATE TABLE tenant_notes (id bigserial PRIMARY KEY, tenant int NOT NULL, body text NOT NULL);
CREATE INDEX ON tenant_notes (tenant);
CREATE FUNCTION tenant_open(t int) RETURNS boolean LANGUAGE plpgsql STABLE AS $f$ BEGIN RETURN t > 0; END $f$;
ALTER TABLE tenant_notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY members ON tenant_notes
  USING (EXISTS (SELECT 1 FROM tenant_members m WHERE m.tenant = tenant_notes.tenant AND m.member = current_user));
CREATE POLICY open_tenant ON tenant_notes AS RESTRICTIVE USING (tenant_open(tenant));
INSERT INTO tenant_members SELECT g, 'app' FROM generate_series(1, 50) g;
INSERT INTO tenant_notes (tenant, body) SELECT 1 + g % 100, 'note ' || g FROM generate_series(1, 5000) g;
GRANT SELECT, UPDATE ON tenant_notes, tenant_members TO app;`;

const SCRIPT = `\\set t random(1, 100)
BEGIN;
SELECT id, body FROM tenant_notes WHERE tenant = :t ORDER BY id DESC LIMIT 3;
UPDATE tenant_notes SET body = body WHERE id = (SELECT max(id) FROM tenant_notes WHERE tenant = :t);
COMMIT;
`;

describe("row-level security, on a real server", () => {
  it("names the policies' relations and functions for a role they bind, and nothing for the table's owner", async () => {
    const pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"], pgaudit: { log: "none" } });
    try {
      await pg.query("CREATE EXTENSION pg_stat_statements");
      await pg.query(SCHEMA);
      const script = join(pg.dataDir, "..", "tenant.sql");
      writeFileSync(script, SCRIPT);
      for (const user of ["app", "postgres"]) {
        let load: Promise<unknown> | undefined;
        const sample = await sampleWorkload({
          connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
          intervalMs: 3_000,
          onProgress: (elapsed) => {
            if (elapsed === 0) load = pg.pgbench(["-U", user, "-n", "-c", "2", "-T", "3", "-f", script]);
          },
        });
        await load;
        const warning = sample.warnings.find((w) => w.startsWith("row-level security applies"));
        if (user === "app")
          expect(warning).toMatch(
            /to app on 1 table.*public\.tenant_notes reads tenant_members and calls tenant_open\(integer\)/,
          );
        else expect(warning, "the owner (a superuser) is not bound by the policies").toBeUndefined();
      }
    } finally {
      await pg.stop();
    }
  });
});
