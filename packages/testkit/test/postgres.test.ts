import { existsSync, readFileSync } from "node:fs";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe("startPostgres", () => {
  let pg: PostgresCluster;
  beforeAll(async () => {
    pg = await startPostgres({
      logDestination: ["csvlog", "jsonlog", "stderr"],
      logLinePrefix: "%m [%p] %q%u@%d ",
      pgaudit: { log: "all", log_parameter: true },
    });
  });
  afterAll(() => pg?.stop());

  it("runs PostgreSQL 15 with pgaudit loaded and the extension created", async () => {
    const version = await pg.query<{ server_version_num: string }>("SHOW server_version_num");
    expect(Number(version.rows[0]?.server_version_num)).toBeGreaterThanOrEqual(150000);
    const ext = await pg.query("SELECT extname FROM pg_extension WHERE extname = 'pgaudit'");
    expect(ext.rowCount).toBe(1);
    expect(pg.connectionString).toMatch(/^postgresql:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  });

  it("writes pgaudit entries to every requested destination", async () => {
    await pg.query("SELECT $1::int + 1 AS testkit_probe", [41]);
    const current = pg.currentLogfiles();
    expect(Object.keys(current).sort()).toEqual(["csvlog", "jsonlog", "stderr"]);
    await expect
      .poll(() => readFileSync(current.csvlog!, "utf8"), { timeout: 5000 })
      .toContain("testkit_probe");
    const csv = readFileSync(current.csvlog!, "utf8");
    expect(csv).toContain('"AUDIT: SESSION,');
    expect(csv).toContain(",READ,SELECT,,,");
    await expect
      .poll(() => readFileSync(current.jsonlog!, "utf8"), { timeout: 5000 })
      .toContain("testkit_probe");
    await expect
      .poll(() => readFileSync(current.stderr!, "utf8"), { timeout: 5000 })
      .toMatch(
        / postgres@postgres LOG: {2}AUDIT: SESSION,\d+,1,READ,SELECT,,,SELECT \$1::int \+ 1 AS testkit_probe,41$/m,
      );
  });

  it("rotates the log on request", async () => {
    const before = pg.logFiles();
    await new Promise((r) => setTimeout(r, 1100)); // log_filename has one-second resolution
    await pg.rotate();
    const after = pg.logFiles();
    expect(after.length).toBeGreaterThan(before.length);
    expect(Object.values(pg.currentLogfiles()).every((f) => !before.includes(f))).toBe(true);
  });

  it("runs pgbench and as other roles", async () => {
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    const result = await pg.pgbench(["-t", "20", "-c", "2", "-n"]);
    expect(result.stdout).toMatch(/number of transactions actually processed: 40\/40/);
    await pg.query("CREATE ROLE testkit_reader LOGIN");
    const client = await pg.connect({ user: "testkit_reader" });
    const who = await client.query("SELECT current_user AS u");
    await client.end();
    expect(who.rows[0].u).toBe("testkit_reader");
    const psql = await pg.psql("SELECT 'from psql' AS x;\n", { args: ["-At"] });
    expect(psql.stdout.trim()).toBe("from psql");
  });
});

describe("stop", () => {
  it("stops the server and removes its directories", async () => {
    const pg = await startPostgres();
    const dataDir = pg.dataDir;
    expect(existsSync(dataDir)).toBe(true);
    await pg.stop();
    expect(existsSync(dataDir)).toBe(false);
    await expect(pg.connect()).rejects.toThrow();
    await pg.stop(); // idempotent
  });
});
