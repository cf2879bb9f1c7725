/**
 * `auditpipe estimate` as a plain login role on a real PostgreSQL under pgbench load: what the
 * role cannot read (shared_preload_libraries, other roles' statements and sessions) is named with
 * the grant that fixes it and never reported as a fact; a sample that saw nothing of the workload
 * prints no table; the same role with the grants gets the normal table.
 */
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

let pg: PostgresCluster;
const saved = { ...process.env };

beforeAll(async () => {
  pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.pgbench(["-i", "-s", "1", "-q"]);
  await pg.query(
    `CREATE ROLE plain LOGIN;
     CREATE ROLE "granted one" LOGIN;
     GRANT pg_read_all_stats, pg_read_all_settings TO "granted one";
     GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO plain`,
  );
  Object.assign(process.env, { PGHOST: pg.socketDir, PGPORT: String(pg.port), PGDATABASE: "postgres" });
});

afterAll(async () => {
  process.env = saved;
  await pg?.stop();
});

/**
 * `estimate` as `role` while pgbench runs as each of `loadRoles`: connected before the sample, and
 * lasting past it (a long -T, its sessions ended once the estimate is back, not a guessed length).
 */
async function estimateAs(role: string, ...loadRoles: string[]) {
  process.env.PGUSER = role;
  const users = loadRoles.length > 0 ? loadRoles : ["postgres"];
  const loads = users.map((user) => pg.pgbench(["-n", "-U", user, "-c", "1", "-T", "300"]));
  const active = async (): Promise<number> =>
    (await pg.query("SELECT DISTINCT usename FROM pg_stat_activity WHERE application_name = 'pgbench'"))
      .rowCount ?? 0;
  await waitUntil(
    async () => (await active()) === users.length,
    10_000,
    () => "pgbench did not start",
  );
  const out = await runCli(["estimate", "--interval", "2", "--audit", "write"]);
  // Still running, every one of them: the load lasted past the sample.
  expect(await active(), "pgbench ended before the estimate did").toBe(users.length);
  await pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'");
  // pgbench exits non-zero when its session is ended; that it ended is all that is waited for.
  await Promise.allSettled(loads);
  return out;
}

describe("auditpipe estimate as a role without pg_read_all_stats / pg_read_all_settings", () => {
  it("refuses to print a table when every statement of the workload was hidden, naming the grants", async () => {
    const out = await estimateAs("plain");
    expect(out.code, out.stdout).toBe(1);
    expect(out.stdout).not.toMatch(/^configuration/m);
    expect(out.stderr).toMatch(/hidden from role plain by pg_stat_statements/);
    expect(out.stderr).toContain('GRANT pg_read_all_stats, pg_read_all_settings TO "plain"');
    expect(out.stderr).toMatch(/cannot read shared_preload_libraries/);
    // What the role could not read is not stated as a fact about the server.
    expect(out.stderr).not.toMatch(/pgaudit is not in shared_preload_libraries/);
    expect(out.stderr).not.toMatch(/no other client is connected/);
  });

  it("estimates its own visible workload, saying what it could not read and how to fix it", async () => {
    const out = await estimateAs("plain", "plain");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toMatch(
      /role plain cannot read shared_preload_libraries \(GRANT pg_read_all_settings TO "plain", or sample as a superuser\)/,
    );
    expect(out.stderr).not.toMatch(/pgaudit is not in shared_preload_libraries/);
    expect(out.stderr).not.toMatch(/no other client is connected/);
    const write = out.stdout.split("\n").find((l) => /^write\s/.test(l));
    expect(Number(write?.split(/\s+/)[1]?.replaceAll(",", ""))).toBeGreaterThan(0);
  });

  it("with others' statements partly hidden: estimates what it sees and says what share it could not", async () => {
    const out = await estimateAs("plain", "plain", "postgres");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toMatch(
      /pg_stat_statements hid the statements of 1 other role\(s\) from role plain \(\d+% of the calls during the sample\): the estimates leave them out and are too low\. GRANT pg_read_all_stats TO "plain"/,
    );
    expect(out.stdout).toMatch(/statements \(others hidden from this role\)/);
  });

  it("with GRANT pg_read_all_stats, pg_read_all_settings: the normal table and no privilege warnings", async () => {
    const out = await estimateAs("granted one");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).not.toMatch(/cannot read|hid|GRANT|shared_preload_libraries|no other client/);
    expect(out.stdout).toMatch(/^current\s/m);
    const write = out.stdout.split("\n").find((l) => /^write\s/.test(l));
    // pgbench's TPC-B writes 4 statements per transaction: WRITE entries at some hundreds per second.
    expect(Number(write?.split(/\s+/)[1]?.replaceAll(",", ""))).toBeGreaterThan(10);
  });
});
