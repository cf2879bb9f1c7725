import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchReportSchema } from "@auditpipe/overhead";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnCli } from "./_sidecar.ts";

const MANAGED = ["pgaudit.log", "pgaudit.role", "pgaudit.log_statement_once", "log_statement"];

/** What postgresql.auto.conf holds for the settings bench manages (ALTER SYSTEM's file). */
async function autoConf(pg: PostgresCluster): Promise<Record<string, string>> {
  const r = await pg.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name = ANY($1)",
    [MANAGED],
  );
  return Object.fromEntries(r.rows.map((row) => [row.name, row.setting]));
}

async function leftovers(pg: PostgresCluster): Promise<{ database: boolean; role: boolean }> {
  const db = await pg.query("SELECT 1 FROM pg_database WHERE datname = 'auditpipe_bench'");
  const role = await pg.query("SELECT 1 FROM pg_roles WHERE rolname = 'auditpipe_bench_auditor'");
  return { database: (db.rowCount ?? 0) > 0, role: (role.rowCount ?? 0) > 0 };
}

/** A setting as a new session sees it (after the reload reached the postmaster). */
async function liveSetting(pg: PostgresCluster, name: string): Promise<string> {
  const c = await pg.connect();
  try {
    return (await c.query<{ v: string }>("SELECT current_setting($1) AS v", [name])).rows[0]!.v;
  } finally {
    await c.end();
  }
}

describe("auditpipe bench on an existing server (a testkit cluster treated as one)", () => {
  let pg: PostgresCluster;
  let work: string;
  let url: string;
  const original = { "pgaudit.log": "ddl" };
  const common = (): string[] => [
    "--db",
    url,
    "--workload",
    "tpcb",
    "--runs",
    "1",
    "--duration",
    "1",
    "--warmup",
    "0",
    "--scale",
    "1",
    "--state-dir",
    join(work, "state"),
  ];

  beforeAll(async () => {
    pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "ddl" } });
    work = mkdtempSync(join(tmpdir(), "auditpipe-bench-existing-"));
    url = pg.connectionString;
  });
  afterAll(async () => {
    await pg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("changes nothing without --yes", async () => {
    const { code, stderr } = await runCli(["bench", ...common(), "--audit", "write"]);
    expect(code).toBe(1);
    expect(stderr).toContain("AUDITPIPE_ERR_BENCH_NEEDS_YES");
    expect(await autoConf(pg)).toEqual(original);
    expect(await leftovers(pg)).toEqual({ database: false, role: false });
  });

  it("measures against pgaudit-loaded-nothing-logged and puts every setting back at the end", async () => {
    const { code, stdout, stderr } = await runCli([
      "bench",
      ...common(),
      "--audit",
      "write,object,log_statement",
      "--yes",
      "--json",
    ]);
    expect(code, stderr).toBe(0);
    const report = benchReportSchema.parse(JSON.parse(stdout));
    expect(report.target).toEqual({ kind: "existing", baseline: "pgaudit-loaded-nothing-logged" });
    expect(report.notes.join(" ")).toMatch(/baseline is pgaudit loaded with nothing logged/);
    const runOf = (c: string) => report.runs.find((r) => r.configuration === c)!;
    expect(runOf("none").log.auditEntries).toBe(0); // the server's own pgaudit.log = ddl was switched off
    expect(runOf("write").log.auditEntries).toBeGreaterThan(0);
    expect(runOf("object").log.auditEntries).toBeGreaterThan(0);
    expect(runOf("log_statement").log.records).toBeGreaterThan(runOf("log_statement").transactions);
    expect(await autoConf(pg)).toEqual(original);
    expect(await liveSetting(pg, "pgaudit.log")).toBe("ddl");
    expect(await liveSetting(pg, "log_statement")).toBe("none");
    expect(await leftovers(pg)).toEqual({ database: false, role: false });
    expect(readdirSync(join(work, "state"))).toEqual([]);
  });

  it("puts every setting back after an error part-way (a pgbench script that fails)", async () => {
    const script = join(work, "broken.sql");
    writeFileSync(script, "SELECT * FROM auditpipe_no_such_table;\n");
    const { code, stderr } = await runCli([
      "bench",
      ...common().filter((a, i, all) => a !== "--workload" && all[i - 1] !== "--workload"),
      "--script",
      script,
      "--audit",
      "all",
      "--yes",
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain("AUDITPIPE_ERR_BENCH_PGBENCH");
    expect(await autoConf(pg)).toEqual(original);
    expect(await liveSetting(pg, "pgaudit.log")).toBe("ddl");
    expect(await leftovers(pg)).toEqual({ database: false, role: false });
  });

  it("after kill -9, --restore puts back what the saved state lists", async () => {
    const stateDir = join(work, "state");
    const child = spawnCli([
      "bench",
      ...common().map((a) => (a === "1" ? "3" : a)),
      "--duration",
      "30",
      "--audit",
      "all",
      "--yes",
    ]);
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    // Killed while it runs pgbench: the state is saved and the settings are changed.
    await waitUntil(
      () => /run \d+\/\d+/.test(err),
      90_000,
      () => `bench did not start a run:\n${err}`,
    );
    child.kill("SIGKILL");
    await exited;
    expect(readdirSync(stateDir)).toHaveLength(1);
    expect(await autoConf(pg)).not.toEqual(original);
    expect((await leftovers(pg)).database).toBe(true);

    const { code, stdout } = await runCli(["bench", "--restore", "--db", url, "--state-dir", stateDir]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/put back .*pgaudit\.log = 'ddl'/);
    expect(await autoConf(pg)).toEqual(original);
    expect(await liveSetting(pg, "pgaudit.log")).toBe("ddl");
    expect(await leftovers(pg)).toEqual({ database: false, role: false });
    expect(existsSync(join(stateDir, readdirSync(stateDir)[0] ?? "none"))).toBe(false);
    const again = await runCli(["bench", "--restore", "--db", url, "--state-dir", stateDir]);
    expect(again.stdout).toContain("nothing to restore");
  });
});
