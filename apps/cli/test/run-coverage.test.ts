import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, zstdDecompressSync } from "node:zlib";
import { startMinio, startPostgres, waitUntil } from "@auditpipe/testkit";
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { spawnCli, spawnSidecar } from "./_sidecar.ts";

/** Runs `auditpipe verify` as a process; its exit code and output. */
async function verify(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(["verify", ...args], env);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

/** Over the parser's 64 MiB record limit (DEFAULT_MAX_RECORD_BYTES): the record is given up whole. */
const OVERSIZED = 64 * 1024 * 1024 + 1024;

describe("auditpipe run --sink s3:// records coverage; verify --require-coverage reports it", () => {
  it("a session's SET pgaudit.log = 'misc', a session's unseen 'none' set back, ALTER SYSTEM + reload of pgaudit.log, a restart and a record given up are in the signed manifest, and fail --require-coverage; analyze reports them from the log files", async () => {
    const minio = await startMinio({ buckets: ["audit"] });
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write, ddl, misc" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-coverage-"));
    const state = join(work, "state");
    const env = minio.env();
    const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const client = minio.client();
    const shipped = async (): Promise<string> => {
      const out = await client.send(new ListObjectsV2Command({ Bucket: "audit", Prefix: "pg/cov/" }));
      const keys = (out.Contents ?? []).map((o) => o.Key ?? "").filter((k) => /\.ndjson\.(gz|zst)$/.test(k));
      const bodies = await Promise.all(
        keys.map(async (Key) => {
          const body = await (await client.send(new GetObjectCommand({ Bucket: "audit", Key }))).Body!;
          const bytes = await body.transformToByteArray();
          return (Key.endsWith(".gz") ? gunzipSync(bytes) : zstdDecompressSync(bytes)).toString("utf8");
        }),
      );
      return bodies.join("");
    };
    const sidecar = spawnSidecar(
      [
        // No --pgaudit-log: the baseline changes are judged against is read from --pgdata.
        "--pgdata",
        pg.dataDir,
        "--sink",
        "s3://audit/pg/cov",
        ...s3,
        "--host",
        "pg-0",
        "--state",
        state,
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ],
      env,
    );
    try {
      await sidecar.url();
      await pg.psql("CREATE TABLE t (s text);");
      // One record over the parser's limit: skipped whole, a range given up.
      const db = await pg.connect();
      // A literal, not a parameter: pgaudit logs the statement text.
      await db.query(`INSERT INTO t VALUES ('${"x".repeat(OVERSIZED)}')`).finally(() => db.end());
      // One statement per query: pgaudit logs a multi-statement query's whole text for each. pgaudit
      // logs a SET after applying it: a value without misc ('none') leaves no entry at all
      // (docs/archive.md#coverage); 'misc' lowers what the session audits and is logged.
      const session = await pg.connect();
      await session.query("SET pgaudit.log = 'misc'");
      await session.query("INSERT INTO t VALUES ('unaudited')").finally(() => session.end());
      // 'none' is never logged, but setting the server's value back is, and says what came before.
      const hidden = await pg.connect();
      await hidden.query("SET pgaudit.log = 'none'");
      await hidden.query("INSERT INTO t VALUES ('hidden')");
      await hidden.query("SET pgaudit.log = 'write, ddl, misc'").finally(() => hidden.end());
      await pg.psql("ALTER SYSTEM SET pgaudit.log = 'ddl'; SELECT pg_reload_conf();");
      await waitUntil(
        async () => (await pg.psql("SHOW pgaudit.log;")).stdout.includes("ddl"),
        30_000,
        () => "the reload did not take pgaudit.log = 'ddl'",
      );
      await pg.restart();
      await pg.psql("CREATE TABLE after_restart (id int);");
      await waitUntil(
        async () => (await shipped()).includes("after_restart"),
        45_000,
        () => "the statement after the restart was not shipped",
        300,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      const publicKey = join(state, "manifests", "manifest-key.pem.pub");
      const base = ["s3://audit/pg/cov", ...s3, "--public-key", publicKey];
      const required = await verify([...base, "--require-coverage"], env);
      expect(required.stderr).not.toMatch(/error/i);
      expect(required.stdout).toMatch(/^result: clean, no finding$/m); // integrity holds
      expect(required.stdout).toMatch(/^ {2}GAP .*bytes \d+ to \d+ given up \(record-too-large\)$/m);
      expect(required.stdout).toMatch(/^ {2}LOWERED .*pgaudit\.log set to "misc" \(set\)/m);
      expect(required.stdout).toMatch(
        /^ {2}LOWERED .*pgaudit\.log set to "write, ddl, misc" \(set\) .*turned auditing down before, unseen/m,
      );
      expect(required.stdout).toMatch(/^ {2}LOWERED .*pgaudit\.log set to "ddl" \(alter-system\)/m);
      expect(required.stdout).toMatch(/^ {2}LOWERED .*pgaudit\.log set to "ddl" \(reload\)/m);
      expect(required.stdout).toMatch(/^ {2}SERVER-STOP .*server stopped/m);
      expect(required.stdout).toMatch(/^ {2}SERVER-START .*server started/m);
      expect(required.stdout).toMatch(/--require-coverage: fails/);
      expect(required.code).toBe(1);

      // Without --require-coverage the same report, and integrity alone decides the exit code.
      const reported = await verify([...base, "--json"], env);
      expect(reported.code).toBe(0);
      const report = JSON.parse(reported.stdout) as {
        ok: boolean;
        coverage: {
          ok: boolean;
          problems: { kind: string }[];
          hours: { settingChanges: { setting: string; value?: string; via?: string; effect: string }[] }[];
        };
      };
      expect(report.ok).toBe(true);
      expect(report.coverage.ok).toBe(false);
      const kinds = new Set(report.coverage.problems.map((p) => p.kind));
      expect([...kinds].sort()).toEqual(["gap", "lowered", "server-start", "server-stop"]);
      const changes = report.coverage.hours.flatMap((h) => h.settingChanges);
      // Each seen once, however often its range was read.
      expect(changes.filter((c) => c.via === "set" && c.value === "misc")).toHaveLength(1);
      expect(changes.filter((c) => c.via === "reload" && c.setting === "pgaudit.log")).toHaveLength(1);
      expect(changes.find((c) => c.via === "configured")).toMatchObject({
        value: "write, ddl, misc",
        effect: "changed",
      });

      // analyze reports the same from the log files alone.
      const child = spawnCli(
        ["analyze", `${pg.logDir}/*.csv`, "--pgaudit-log", "write, ddl, misc", "--jobs", "1", "--json"],
        env,
      );
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.resume();
      expect(await new Promise((resolve) => child.on("close", resolve))).toBe(0);
      const analyzed = (JSON.parse(out) as { coverage: typeof report.coverage }).coverage;
      expect(analyzed.ok).toBe(false);
      expect([...new Set(analyzed.problems.map((p) => p.kind))].sort()).toEqual([
        "gap",
        "lowered",
        "server-start",
        "server-stop",
      ]);
      const fromLogs = analyzed.hours.flatMap((h) => h.settingChanges).map((c) => [c.via, c.value, c.effect]);
      expect(fromLogs).toEqual([
        ["configured", "write, ddl, misc", "changed"],
        ["set", "misc", "lowered"],
        ["set", "write, ddl, misc", "lowered"],
        ["alter-system", "ddl", "lowered"],
        ["reload", "ddl", "lowered"],
      ]);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
