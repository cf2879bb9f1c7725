/**
 * The sidecar compacts by itself: a real sidecar ships a real log (an hour long closed) to a real
 * MinIO, its compaction child writes the host-hour's Parquet file, and the file is recorded in the
 * signed manifest chain. kill -9 of the sidecar mid-compaction (its child ends too) and of the child
 * alone (retried, logged with a code) leave a correct archive: the file the chain lists is the
 * one in the bucket, and rebuilt from the landing objects it gives the same rows and digest.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from "node:zlib";
import { type CompactionRecord, checkCompaction, openArchive } from "@auditpipe/compact";
import { bucketContents, repoRoot, s3Records, startMinio, waitUntil } from "@auditpipe/testkit";
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { type SidecarProcess, spawnCli, spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const expected = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const MORE = join(repoRoot(), "fixtures", "cases", "object-only");
const more = JSON.parse(readFileSync(join(MORE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const HOUR_KEY = "pg/parquet/dt=2026-11-23/hour=07/host=db1/part-0.parquet";
const RECORD_KEY = "pg/_compaction/db1/2026-11-23T07.json";

/** The pids of the compaction children a sidecar logged, in order. */
function childPids(sidecar: SidecarProcess): number[] {
  return [...sidecar.stderr().matchAll(/"child":(\d+)[^\n]*"msg":"compaction: child started"/g)].map((m) =>
    Number(m[1]),
  );
}

/** Whether a process is gone (or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/** Compaction work dirs of killed children (they cannot remove theirs). */
const stale = new Set<string>();
/** A compaction child's private work dir exists: it is mid-compaction. */
const compacting = (tmp: string): boolean =>
  readdirSync(tmp).some((n) => n.startsWith("auditpipe-compact-") && !stale.has(n));

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Waits for a compaction child (after the first `after` the sidecar logged) to be mid-compaction,
 * and freezes it there (SIGSTOP, then the work dir checked: a child stopped with its work dir
 * present has not printed its report). Returns its pid, stopped.
 */
async function freezeMidCompaction(sidecar: SidecarProcess, tmp: string, after: number): Promise<number> {
  let pid = 0;
  await waitUntil(
    () => {
      const pids = childPids(sidecar).slice(after);
      pid = pids.at(-1) ?? 0;
      if (pid === 0 || !signal(pid, "SIGSTOP")) return false;
      if (compacting(tmp)) return true;
      signal(pid, "SIGCONT");
      return false;
    },
    60_000,
    () => "no compaction child was caught compacting",
    10,
  );
  for (const n of readdirSync(tmp)) stale.add(n); // this child's: it is about to be killed
  return pid;
}

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string }> {
  const child = spawnCli(argv, env);
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.resume();
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout };
}

describe("auditpipe run: the sidecar's own compaction", () => {
  it("compacts the closed hour in a child, records it in the signed chain, survives kill -9 of the sidecar and of the child, and reports a compaction that keeps failing on /readyz", async () => {
    const minio = await startMinio({ buckets: ["audit"] });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-compaction-"));
    const logDir = join(work, "log");
    const tmp = join(work, "tmp");
    mkdirSync(logDir);
    mkdirSync(tmp);
    writeFileSync(join(logDir, "postgresql.csv"), gunzipSync(readFileSync(join(CASE, "postgresql.csv.gz"))));
    const state = join(work, "state");
    const env = { ...minio.env(), TMPDIR: tmp };
    const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const args = [
      ...["--log-dir", logDir, "--format", "csvlog", "--sink", "s3://audit/pg", ...s3, "--host", "db1"],
      ...[
        "--state",
        state,
        "--listen",
        "127.0.0.1:0",
        "--batch-max-entries",
        "20",
        "--batch-max-age-ms",
        "200",
      ],
      // The sidecar compacts by itself (not the default, adopt, which leaves it to a job elsewhere).
      ...["--compaction", "child", "--compact-ms", "1000", "--self-check-ms", "0"], // the last --compact-ms given wins
    ];
    const client = minio.client();
    /** Entries shipped (attempt and outcome lines, which the sink ships too, left out). */
    const landingEntries = async () =>
      (await s3Records<{ record?: string }>(client, "audit", "pg/dt=")).records.filter(
        (r) => (r.record ?? "entry") === "entry",
      ).length;
    // Shipped first without compaction, so the next start has a host-hour due.
    let sidecar = spawnSidecar([...args, "--compact-ms", "0"], env);
    try {
      await sidecar.url();
      await waitUntil(
        async () => (await landingEntries()) >= expected.entries,
        60_000,
        () => "the sidecar did not ship every entry",
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      // kill -9 of the child alone, mid-compaction: logged with its code, counted, retried.
      sidecar = spawnSidecar(args, env);
      let url = await sidecar.url();
      const first = await freezeMidCompaction(sidecar, tmp, 0);
      expect(getPriority(first)).toBeGreaterThanOrEqual(10); // the sidecar's nice value, inherited
      signal(first, "SIGKILL");
      await waitUntil(
        () => /"code":"AUDITPIPE_ERR_COMPACT_CHILD"[^\n]*compaction failed/.test(sidecar.stderr()),
        30_000,
        () =>
          `the killed child was not reported: ${sidecar
            .stderr()
            .split("\n")
            .filter((l) => l.includes("compaction"))
            .join("\n")}`,
      );

      // Then a run succeeds and the hour's file is journaled for the next manifest.
      const journaled = join(state, "compaction", "journaled.json");
      const record = async (): Promise<CompactionRecord | undefined> => {
        const body = (await bucketContents(client, "audit", RECORD_KEY)).get(RECORD_KEY);
        return body ? (JSON.parse(body.toString("utf8")) as CompactionRecord) : undefined;
      };
      // The counter follows the journaled file's write: waited for with it, not read after it.
      let metrics = "";
      await waitUntil(
        async () => {
          const r = await record();
          if (!existsSync(journaled) || r?.counts.entries !== expected.entries) return false;
          if (JSON.parse(readFileSync(journaled, "utf8"))["2026-11-23T07"] !== r?.sha256) return false;
          metrics = await (await fetch(`${url}/metrics`)).text();
          return /^auditpipe_compaction_files_recorded_total [1-9]/m.test(metrics);
        },
        60_000,
        () => `the compacted hour was not recorded (or not counted):\n${metrics}`,
      );
      expect(metrics).toMatch(
        /^auditpipe_compaction_failures_total\{code="AUDITPIPE_ERR_COMPACT_CHILD"\} [1-9]/m,
      );
      expect(metrics).toMatch(/^auditpipe_compaction_files_recorded_total [1-9]/m);

      // The hour continues (another real log of the same hour appears): due again. kill -9 of the
      // sidecar while its child compacts: the child, let go on, ends too (it watches its parent).
      const before = childPids(sidecar).length;
      writeFileSync(
        join(logDir, "postgresql-2.csv"),
        gunzipSync(readFileSync(join(MORE, "postgresql.csv.gz"))),
      );
      const orphan = await freezeMidCompaction(sidecar, tmp, before);
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      signal(orphan, "SIGCONT");
      await waitUntil(
        () => gone(orphan),
        30_000,
        () => `the compaction child ${orphan} outlived its sidecar`,
      );

      sidecar = spawnSidecar(args, env);
      url = await sidecar.url();
      await waitUntil(
        async () => {
          const r = await record();
          if (!existsSync(journaled) || r?.counts.entries !== expected.entries + more.entries) return false;
          return JSON.parse(readFileSync(journaled, "utf8"))["2026-11-23T07"] === r?.sha256;
        },
        90_000,
        () => "the continued hour was not compacted and recorded",
      );

      // A host-hour that cannot be compacted (a damaged landing object, made by hand here) fails
      // every run: /readyz says so once it failed 3 runs in a row, and recovers when it is gone.
      const damaged = "pg/dt=2026-11-22/hour=05/db1/damaged-0000000000000001-0000000000000002.ndjson.gz";
      await client.send(new PutObjectCommand({ Bucket: "audit", Key: damaged, Body: "not gzip" }));
      await waitUntil(
        async () => {
          const r = await fetch(`${url}/readyz`);
          return (
            r.status === 503 &&
            /compaction failing \(AUDITPIPE_ERR_COMPACT_INPUT, \d+ runs/.test(await r.text())
          );
        },
        60_000,
        () => "a compaction failing run after run was not reported on /readyz",
      );
      expect(await (await fetch(`${url}/metrics`)).text()).toMatch(
        /^auditpipe_compaction_failures_total\{code="AUDITPIPE_ERR_COMPACT_INPUT"\} ([3-9]|\d\d)/m,
      );
      await client.send(new DeleteObjectCommand({ Bucket: "audit", Key: damaged }));
      await waitUntil(
        async () => (await fetch(`${url}/readyz`)).status === 200,
        60_000,
        () => "not ready again",
      );

      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      // The chain lists the file in the bucket, keys with the archive prefix.
      const objects = await bucketContents(client, "audit", "pg/");
      const listed = [...objects]
        .filter(([k]) => k.startsWith("pg/_manifests/db1/"))
        .flatMap(
          ([, body]) =>
            (JSON.parse(body.toString("utf8")).compacted ?? []) as {
              key: string;
              sha256: string;
              rows: number;
              sources: { key: string }[];
            }[],
        );
      const last = listed.filter((f) => f.key === HOUR_KEY).at(-1);
      const file = objects.get(HOUR_KEY)!;
      const final = await record();
      expect(final?.counts.entries).toBe(expected.entries + more.entries);
      expect(last).toMatchObject({
        rows: final?.rows,
        sha256: createHash("sha256").update(file).digest("hex"),
      });
      expect(last?.sources.every((s) => s.key.startsWith("pg/dt=2026-11-23/hour=07/db1/"))).toBe(true);

      // Rebuilt from its landing objects, the file holds the same rows in the same order.
      const store = await openArchive("s3://audit/pg", {
        endpoint: minio.endpoint,
        forcePathStyle: true,
        region: minio.region,
      });
      const saved = { ...process.env };
      Object.assign(process.env, minio.env());
      try {
        const check = await checkCompaction(store, (await record())!);
        expect(check).toEqual({ findings: [], rebuilt: true });
      } finally {
        process.env = saved;
        store.close();
      }

      const verifyArgs = [
        ...["verify", "s3://audit/pg", ...s3],
        ...["--public-key", join(state, "manifests", "manifest-key.pem.pub")],
      ];
      const verified = await run(verifyArgs, env);
      expect(verified.stdout).toMatch(/^result: clean, no finding$/m);
      expect(verified.code).toBe(0);

      // verify rebuilds each compacted file from the landing objects it lists: one of them
      // shortened (rewritten with its first line only) gives other rows, a finding and exit 1.
      const source = last?.sources[0]?.key ?? "";
      const zstd = source.endsWith(".zst");
      const body = objects.get(source)!;
      const firstLine = `${(zstd ? zstdDecompressSync(body) : gunzipSync(body)).toString("utf8").split("\n")[0]}\n`;
      const shortened = zstd ? zstdCompressSync(firstLine) : gzipSync(firstLine);
      await client.send(new PutObjectCommand({ Bucket: "audit", Key: source, Body: shortened }));
      const tampered = await run(verifyArgs, env);
      expect(tampered.stdout).toMatch(
        /^ALTERED\s+pg\/parquet\/dt=2026-11-23\/hour=07\/host=db1\/part-0\.parquet$/m,
      );
      expect(tampered.stdout).toMatch(/rows rebuilt from its sources: \d+ rows/);
      expect(tampered.code).toBe(1);
    } finally {
      sidecar.child.kill("SIGKILL");
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 300_000);
});
