/**
 * `auditpipe estimate` and `auditpipe recommend` on a real PostgreSQL under pgbench load, the
 * connection from PG* variables; the recommended script applied twice; a password in --db never
 * printed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

let pg: PostgresCluster;
const saved = { ...process.env };

beforeAll(async () => {
  pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.pgbench(["-i", "-s", "1", "-q"]);
  await pg.query(
    `CREATE TABLE "Customer ""VIP""" (id int PRIMARY KEY, full_name text, email text, iban text, note text);
     COMMENT ON COLUMN "Customer ""VIP""".note IS 'free text, may hold health information'`,
  );
  Object.assign(process.env, {
    PGHOST: pg.socketDir,
    PGPORT: String(pg.port),
    PGUSER: "postgres",
    PGDATABASE: "postgres",
  });
});

afterAll(async () => {
  process.env = saved;
  await pg?.stop();
});

/** Runs the CLI while pgbench loads the database for `seconds`. */
async function underLoad(
  argv: string[],
  seconds = 3,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", String(seconds)]);
  const out = await runCli(argv);
  await load;
  return out;
}

describe("auditpipe estimate", () => {
  it("prints a table of configurations from a sample taken through PG* variables", async () => {
    const out = await underLoad(["estimate", "--interval", "2", "--audit", "write", "--audit", "all"]);
    expect(out.stderr).toMatch(/estimate: sampling for 2 s/);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.split("\n");
    expect(lines.find((l) => l.startsWith("configuration"))).toMatch(
      /entries\/s\s+bytes\/entry\s+MB\/hour\s+GB\/day\s+ingest \$\/month\s+archive GB\s+archive \$\/month/,
    );
    expect(lines.some((l) => /^current\s/.test(l))).toBe(true);
    expect(lines.some((l) => /^all\s+[\d,.]+\s+\d+/.test(l))).toBe(true);
  });

  it("--json: session all writes more than session write, 7 entries per TPC-B transaction", async () => {
    // pg_stat_database's transaction counts reach shared memory up to a second late (PostgreSQL 15
    // flushes a backend's stats at most once a second), so a short window jitters: sample 4 s.
    const out = await underLoad(
      ["estimate", "--interval", "4", "--audit", "write", "--audit", "all", "--json"],
      6,
    );
    expect(out.code, out.stderr).toBe(0);
    const body = JSON.parse(out.stdout);
    const [, write, all] = body.estimates;
    expect(all.bytesPerSec).toBeGreaterThan(write.bytesPerSec);
    // 7 per transaction (BEGIN, 3 UPDATEs, SELECT, INSERT, END), give or take that flush lag;
    // with FK checks or log_relation it would be 10 or more.
    expect(all.entriesPerTransaction).toBeGreaterThan(5.5);
    expect(all.entriesPerTransaction).toBeLessThan(8.8);
  });

  it("--workload-out: the sample as a --workload file, estimated again to the same figures without sampling", async () => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-workload-out-"));
    try {
      const file = join(dir, "sampled.json");
      const sampled = await underLoad(
        [
          "estimate",
          "--interval",
          "2",
          "--audit",
          "write",
          "--audit",
          "all",
          "--json",
          "--workload-out",
          file,
        ],
        4,
      );
      expect(sampled.code, sampled.stderr).toBe(0);
      const again = await runCli([
        "estimate",
        "--workload",
        file,
        "--audit",
        "write",
        "--audit",
        "all",
        "--json",
      ]);
      expect(again.code, again.stderr).toBe(0);
      const before = JSON.parse(sampled.stdout);
      const after = JSON.parse(again.stdout);
      // The sample also estimates the server's current configuration first.
      expect(after.estimates.map((e: { config: string }) => e.config)).toEqual(["write", "all"]);
      for (const [i, e] of after.estimates.entries()) {
        const b = before.estimates[i + 1];
        expect(e.entriesPerSec).toBeCloseTo(b.entriesPerSec, 9);
        expect(e.bytesPerEntry).toBeCloseTo(b.bytesPerEntry, 9);
        expect(e.overhead.throughput).toEqual(b.overhead.throughput);
      }
      expect(after.load).toEqual(before.load);
      // Before sampling, not after: with a file to read, or a directory that is not there.
      const refused = await runCli(["estimate", "--workload", file, "--workload-out", join(dir, "x.json")]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("--workload-out writes a sampled workload");
      const missing = await runCli(["estimate", "--workload-out", join(dir, "no", "such", "x.json")]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("its directory does not exist");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("never prints the password of a --db URL", async () => {
    const out = await runCli([
      "estimate",
      "--db",
      `postgresql://postgres:hunter2-secret@127.0.0.1:1/postgres`,
      "--interval",
      "1",
    ]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/AUDITPIPE_ERR_DB_CONNECT|cannot connect/);
    expect(out.stdout + out.stderr).not.toContain("hunter2-secret");
  });

  it("rejects an unknown configuration naming the flag", async () => {
    const out = await runCli(["estimate", "--workload", "/nonexistent.json", "--audit", "reed"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/--audit .*unknown class "REED"/);
  });
});

describe("auditpipe recommend", () => {
  it("prints an idempotent script with quoted identifiers that applies cleanly twice", async () => {
    const out = await underLoad(["recommend", "--interval", "2", "--sensitive", "pgbench_accounts.abalance"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(
      'GRANT SELECT ("abalance") ON TABLE "public"."pgbench_accounts" TO "auditpipe_auditor";',
    );
    expect(out.stdout).toContain(
      'GRANT SELECT ("email", "iban", "note") ON TABLE "public"."Customer ""VIP""" TO "auditpipe_auditor";',
    );
    expect(out.stdout).toMatch(/-- after \(recommended\)/);
    for (const round of [1, 2]) {
      const applied = await pg.psql(out.stdout, { args: ["-v", "ON_ERROR_STOP=1"] });
      expect(applied.code, `round ${round}: ${applied.stderr}`).toBe(0);
      expect(applied.stderr).not.toMatch(/ERROR|WARNING/);
    }
    await pg.query("SELECT pg_reload_conf()");
    const roles = await pg.query("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'auditpipe_auditor'");
    expect(roles.rows).toEqual([{ rolcanlogin: false }]);
    const grants = await pg.query(
      `SELECT privilege_type, column_name FROM information_schema.column_privileges
        WHERE grantee = 'auditpipe_auditor' AND table_name = 'Customer "VIP"' AND privilege_type = 'SELECT' ORDER BY 2`,
    );
    expect(grants.rows.map((r) => r.column_name)).toEqual(["email", "iban", "note"]);
  });
});
