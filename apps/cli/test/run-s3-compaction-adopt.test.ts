/**
 * Compaction off the database host (`run --compaction adopt`): a real sidecar ships a real log (an
 * hour long closed) to a real MinIO and compacts nothing; `auditpipe compact` runs as a process of
 * its own against the same archive, as deploy/auditpipe-compact.service (a systemd timer's job) does; the sidecar finds the compaction record,
 * journals the file, and `verify --public-key` passes with the file listed in the signed chain.
 * A kill -9 of the sidecar between reading the record and journaling it adopts it once on restart.
 * The hour grown and compacted anew by hand overwrites the listed file: verify reports it
 * `altered` until the sidecar's next pass signs the new file (with `supersedes`), then clean. Grown
 * again and compacted by the unit's job (`--signed-rewrites`), it is signed before it is replaced,
 * through a request and a signature in the bucket: verify finds nothing at any step.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { CompactionRecord } from "@auditpipe/compact";
import { bucketContents, repoRoot, s3Records, startMinio, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { systemdService } from "./_deploy-files.ts";
import { spawnCli, spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const expected = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const MORE = join(repoRoot(), "fixtures", "cases", "object-only");
const more = JSON.parse(readFileSync(join(MORE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const THIRD = join(repoRoot(), "fixtures", "cases", "ddl-role-object");
const third = JSON.parse(readFileSync(join(THIRD, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const SIGNATURE_KEY = "pg/_compaction/db1/2026-11-23T07.signed.json";
const REQUEST_KEY = "pg/_compaction/db1/2026-11-23T07.rewrite.json";
const HOUR = "2026-11-23T07";
const HOUR_KEY = "pg/parquet/dt=2026-11-23/hour=07/host=db1/part-0.parquet";
const RECORD_KEY = "pg/_compaction/db1/2026-11-23T07.json";
const BUCKET = "audit";

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string }> {
  const child = spawnCli(argv, env);
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.resume();
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout };
}

/** Whether a process is stopped (SIGSTOP). */
function stopped(pid: number): boolean {
  try {
    return /^State:\s+T/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

describe("auditpipe run --compaction adopt", () => {
  it("adopts the files auditpipe compact made elsewhere into the signed chain (once, across a kill -9 between reading and journaling), and signs a rewrite, after it by hand, before it with --signed-rewrites", async () => {
    const minio = await startMinio({ buckets: [BUCKET] });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-adopt-"));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    writeFileSync(join(logDir, "postgresql.csv"), gunzipSync(readFileSync(join(CASE, "postgresql.csv.gz"))));
    const state = join(work, "state");
    const env = minio.env();
    const client = minio.client();
    const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const args = [
      ...["--log-dir", logDir, "--format", "csvlog", "--sink", `s3://${BUCKET}/pg`, ...s3, "--host", "db1"],
      ...["--state", state, "--listen", "127.0.0.1:0", "--batch-max-entries", "50"],
      ...["--batch-max-age-ms", "200", "--self-check-ms", "0"],
      ...["--compaction", "adopt", "--compact-ms", "1000"],
    ];
    // The job off the database host: deploy/auditpipe-compact.service's ExecStart, its bucket this MinIO's.
    const unit = systemdService(
      readFileSync(join(repoRoot(), "deploy", "auditpipe-compact.service"), "utf8"),
    );
    expect(unit.execStart).toEqual([
      "/usr/local/bin/auditpipe",
      "compact",
      "s3://acme-pg-audit/pg/prod",
      "--signed-rewrites",
    ]);
    const compactArgs = [
      ...unit.execStart.slice(1).map((a) => a.replace("s3://acme-pg-audit/pg/prod", `s3://${BUCKET}/pg`)),
      ...s3,
    ];
    const verifyArgs = [
      ...["verify", `s3://${BUCKET}/pg`, ...s3],
      ...["--public-key", join(state, "manifests", "manifest-key.pem.pub")],
    ];
    const entriesShipped = async () =>
      (await s3Records<{ record?: string }>(client, BUCKET, "pg/dt=")).records.filter(
        (r) => (r.record ?? "entry") === "entry",
      ).length;
    const storedRecord = async (): Promise<CompactionRecord | undefined> => {
      const body = (await bucketContents(client, BUCKET, RECORD_KEY)).get(RECORD_KEY);
      return body ? (JSON.parse(body.toString("utf8")) as CompactionRecord) : undefined;
    };
    const journaledPath = join(state, "compaction", "journaled.json");
    const journaled = (): string | undefined =>
      existsSync(journaledPath) ? JSON.parse(readFileSync(journaledPath, "utf8"))[HOUR] : undefined;
    /** The chain's listings of the hour's file, in chain order (hour, then sequence). */
    const listings = async () =>
      [...(await bucketContents(client, BUCKET, "pg/_manifests/db1/"))]
        .map(([key, body]) => {
          const [, hour = "", seq = "0"] = /\/([^/.]+)(?:\.(\d+))?\.json$/.exec(key) ?? [];
          return [`${hour}/${seq.padStart(6, "0")}`, body] as const;
        })
        .sort(([a], [b]) => a.localeCompare(b))
        .flatMap(
          ([, body]) =>
            (JSON.parse(body.toString("utf8")).compacted ?? []) as {
              key: string;
              sha256: string;
              supersedes?: string;
            }[],
        )
        .filter((f) => f.key === HOUR_KEY);

    // The first sidecar stops itself once it has read a record to journal, before journaling it.
    let sidecar = spawnSidecar(args, { ...env, AUDITPIPE_TEST_ADOPT_STOP_AT: "read" });
    try {
      const url = await sidecar.url();
      await waitUntil(
        async () => (await entriesShipped()) >= expected.entries,
        60_000,
        () => "the sidecar did not ship every entry",
      );
      // Shipped, long closed, and nobody compacts it: the gauge and the warning say so.
      let metrics = "";
      await waitUntil(
        async () => {
          metrics = await (await fetch(`${url}/metrics`)).text();
          return (
            /^auditpipe_compaction_unadopted_hours 1$/m.test(metrics) &&
            sidecar.stderr().includes("have no compaction record to adopt")
          );
        },
        30_000,
        () => `the unadopted hour was not reported:\n${metrics}`,
      );
      expect(sidecar.stderr()).not.toContain("compaction: child started");
      expect((await bucketContents(client, BUCKET, "pg/parquet/")).size).toBe(0);
      // Two passes later the warning is still logged once (at most once an hour), naming the job to run.
      const passes = async () =>
        Number(
          /^auditpipe_compaction_runs_total\{result="ok"\} (\d+)$/m.exec(
            await (await fetch(`${url}/metrics`)).text(),
          )?.[1] ?? 0,
        );
      const warnedAt = await passes();
      await waitUntil(
        async () => (await passes()) >= warnedAt + 2,
        30_000,
        () => "the sidecar ran no more adoption passes",
      );
      const warnings = sidecar.stderr().split("have no compaction record to adopt");
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toContain(`auditpipe compact s3://${BUCKET}/pg --host db1 --signed-rewrites`);

      // Compacted elsewhere: a process of its own, no sidecar to talk to.
      const compacted = await run(compactArgs, env);
      expect(compacted.code).toBe(0);
      const first = await storedRecord();
      expect(first?.counts.entries).toBe(expected.entries);

      // The sidecar read the record and stopped before journaling it: killed there.
      const pid = sidecar.child.pid!;
      await waitUntil(
        () => stopped(pid),
        30_000,
        () => `the sidecar did not stop between reading and journaling:\n${sidecar.stderr()}`,
      );
      expect(journaled()).toBeUndefined();
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;

      // Restarted: adopted once, the hour no longer unadopted; a clean stop writes the manifest.
      sidecar = spawnSidecar(args, env);
      const again = await sidecar.url();
      await waitUntil(
        () => journaled() === first?.sha256,
        60_000,
        () => `the record was not adopted after the restart:\n${sidecar.stderr()}`,
      );
      metrics = await (await fetch(`${again}/metrics`)).text();
      expect(metrics).toMatch(/^auditpipe_compaction_files_recorded_total 1$/m);
      expect(metrics).toMatch(/^auditpipe_compaction_unadopted_hours 0$/m);
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      const listed = await listings();
      expect(listed).toEqual([expect.objectContaining({ sha256: first?.sha256 })]);
      expect(sha256((await bucketContents(client, BUCKET, HOUR_KEY)).get(HOUR_KEY)!)).toBe(first?.sha256);
      const clean = await run(verifyArgs, env);
      expect(clean.stdout).toMatch(/^result: clean, no finding$/m);
      expect(clean.code).toBe(0);

      // The hour grows (another real log of it), shipped; compacted anew elsewhere while the
      // sidecar is stopped: the listed file is overwritten, and verify says so until it is signed.
      writeFileSync(
        join(logDir, "postgresql-2.csv"),
        gunzipSync(readFileSync(join(MORE, "postgresql.csv.gz"))),
      );
      sidecar = spawnSidecar(args, env);
      await sidecar.url();
      await waitUntil(
        async () => (await entriesShipped()) >= expected.entries + more.entries,
        60_000,
        () => "the sidecar did not ship the second log",
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      // Run by hand, without --signed-rewrites: it overwrites at once.
      expect((await run(["compact", `s3://${BUCKET}/pg`, ...s3], env)).code).toBe(0);
      const second = await storedRecord();
      expect(second?.counts.entries).toBe(expected.entries + more.entries);
      expect(second?.sha256).not.toBe(first?.sha256);
      const overwritten = await run(verifyArgs, env);
      expect(overwritten.stdout).toMatch(
        /^ALTERED\s+pg\/parquet\/dt=2026-11-23\/hour=07\/host=db1\/part-0\.parquet$/m,
      );
      expect(overwritten.code).toBe(1);

      // The next pass signs the new file with what it replaces, at once: clean while it runs.
      sidecar = spawnSidecar(args, env);
      await sidecar.url();
      await waitUntil(
        () => journaled() === second?.sha256,
        60_000,
        () => `the rewritten record was not adopted:\n${sidecar.stderr()}`,
      );
      expect(sidecar.stderr()).toContain("compacted anew elsewhere announced in the signed chain");
      const signed = await run(verifyArgs, env);
      expect(signed.stdout).toMatch(/^result: clean, no finding$/m);
      expect(signed.code).toBe(0);
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      const chain = await listings();
      expect(chain.at(-1)).toMatchObject({ sha256: second?.sha256 });
      expect(chain.at(-1)?.supersedes).toBeUndefined();
      expect(chain.some((f) => f.sha256 === second?.sha256 && f.supersedes === first?.sha256)).toBe(true);
      const closed = await run(verifyArgs, env);
      expect(closed.stdout).toMatch(/^result: clean, no finding$/m);
      expect(closed.code).toBe(0);

      // Sign first, through the bucket: the hour grows again, and the unit's job
      // (--signed-rewrites) asks the running sidecar, keeps the stored file, and replaces it at
      // a later run once the new file is signed. verify finds nothing at any step.
      writeFileSync(
        join(logDir, "postgresql-3.csv"),
        gunzipSync(readFileSync(join(THIRD, "postgresql.csv.gz"))),
      );
      sidecar = spawnSidecar(args, env);
      await sidecar.url();
      await waitUntil(
        async () => (await entriesShipped()) >= expected.entries + more.entries + third.entries,
        60_000,
        () => "the sidecar did not ship the third log",
      );
      const asked = await run(compactArgs, env);
      expect(asked.stdout).toMatch(
        /2026-11-23T07 {2}db1 {2}compacted anew, waiting for its sidecar to sign the new file/,
      );
      expect(asked.code).toBe(0);
      expect(sha256((await bucketContents(client, BUCKET, HOUR_KEY)).get(HOUR_KEY)!)).toBe(second?.sha256);
      let signature: { sha256?: string; supersedes?: string; signed?: string } = {};
      await waitUntil(
        async () => {
          const body = (await bucketContents(client, BUCKET, SIGNATURE_KEY)).get(SIGNATURE_KEY);
          signature = body ? JSON.parse(body.toString("utf8")) : {};
          return signature.signed !== undefined;
        },
        60_000,
        () => `the sidecar did not sign the requested rewrite:\n${sidecar.stderr()}`,
      );
      expect(signature.supersedes).toBe(second?.sha256);
      const askedClean = await run(verifyArgs, env);
      expect(askedClean.stdout).toMatch(/^result: clean, no finding$/m);
      expect(askedClean.code).toBe(0);
      const replaced = await run(compactArgs, env);
      expect(replaced.code).toBe(0);
      const last = await storedRecord();
      expect(last?.counts.entries).toBe(expected.entries + more.entries + third.entries);
      expect(last?.sha256).toBe(signature.sha256); // the same bytes rebuilt
      expect(sha256((await bucketContents(client, BUCKET, HOUR_KEY)).get(HOUR_KEY)!)).toBe(last?.sha256);
      expect((await bucketContents(client, BUCKET, "pg/_compaction/db1/")).has(REQUEST_KEY)).toBe(false);
      expect((await bucketContents(client, BUCKET, "pg/_compaction/db1/")).has(SIGNATURE_KEY)).toBe(false);
      const replacedClean = await run(verifyArgs, env);
      expect(replacedClean.stdout).toMatch(/^result: clean, no finding$/m);
      expect(replacedClean.code).toBe(0);
      await waitUntil(
        () => journaled() === last?.sha256,
        60_000,
        () => `the replaced file was not adopted:\n${sidecar.stderr()}`,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      const signedChain = await listings();
      expect(signedChain.at(-1)).toMatchObject({ sha256: last?.sha256 });
      expect(signedChain.at(-1)?.supersedes).toBeUndefined();
      expect(signedChain.some((f) => f.sha256 === last?.sha256 && f.supersedes === second?.sha256)).toBe(
        true,
      );
      const end = await run(verifyArgs, env);
      expect(end.stdout).toMatch(/^result: clean, no finding$/m);
      expect(end.code).toBe(0);
    } finally {
      sidecar.child.kill("SIGKILL");
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 300_000);
});
