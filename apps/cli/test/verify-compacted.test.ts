/**
 * `auditpipe verify --public-key` over compacted (Parquet) files, on an archive a real sidecar made:
 * it ships a real log to a real MinIO, its compaction child writes the host-hour's Parquet file and
 * the sidecar signs it into the chain. A Parquet file no signed manifest lists is `extra` (a
 * compaction record is bookkeeping, not judged); a listed one altered is `altered`; landing objects
 * that `auditpipe compact --drop-landing` dropped are "dropped after compaction", not `missing`,
 * while the file that holds their rows is intact, and `missing` with it once it is gone. An hour
 * that grows after it was compacted is compacted anew: the new file is signed into the chain before
 * it replaces the listed one, so verify in between (and after a kill -9 there) finds nothing.
 */

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { CompactionRecord } from "@auditpipe/compact";
import {
  bucketContents,
  type MinioServer,
  repoRoot,
  s3Records,
  startMinio,
  waitUntil,
} from "@auditpipe/testkit";
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const expected = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const MORE = join(repoRoot(), "fixtures", "cases", "object-only");
const more = JSON.parse(readFileSync(join(MORE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const HOUR_KEY = "pg/parquet/dt=2026-11-23/hour=07/host=db1/part-0.parquet";
const RECORD_KEY = "pg/_compaction/db1/2026-11-23T07.json";
const BUCKET = "audit";

let minio: MinioServer;
let work: string;
let env: NodeJS.ProcessEnv;
let s3: string[];
let verifyArgs: string[];
let logDir: string;
let state: string;
let sidecarArgs: string[];

async function run(argv: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawnCli(argv, env);
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.resume();
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout };
}

const put = (key: string, body: Buffer | string) =>
  minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
const del = (key: string) => minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
const landingKeys = async (): Promise<string[]> =>
  [...(await bucketContents(minio.client(), BUCKET, "pg/dt=")).keys()].sort();

beforeAll(async () => {
  minio = await startMinio({ buckets: [BUCKET] });
  work = mkdtempSync(join(tmpdir(), "auditpipe-verify-compacted-"));
  logDir = join(work, "log");
  mkdirSync(logDir);
  writeFileSync(join(logDir, "postgresql.csv"), gunzipSync(readFileSync(join(CASE, "postgresql.csv.gz"))));
  state = join(work, "state");
  env = minio.env();
  s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
  sidecarArgs = [
    ...["--log-dir", logDir, "--format", "csvlog", "--sink", `s3://${BUCKET}/pg`, ...s3, "--host", "db1"],
    ...["--state", state, "--listen", "127.0.0.1:0", "--batch-max-entries", "50"],
    ...["--batch-max-age-ms", "200", "--self-check-ms", "0"],
    // The sidecar compacts by itself (not the default, adopt, which leaves it to a job elsewhere).
    ...["--compaction", "child", "--compact-ms", "1000"],
  ];
  const sidecar = spawnSidecar(sidecarArgs, env);
  try {
    await sidecar.url();
    // The fixture's hour (2026-11-23T07) is long closed: compacted once all of it is shipped (a
    // compaction of part of it is compacted anew), and the file of the whole hour journaled.
    const journaled = join(state, "compaction", "journaled.json");
    await waitUntil(
      async () => {
        const body = (await bucketContents(minio.client(), BUCKET, RECORD_KEY)).get(RECORD_KEY);
        const record = body ? (JSON.parse(body.toString("utf8")) as CompactionRecord) : undefined;
        if (!existsSync(journaled) || !record || record.counts.entries !== expected.entries) return false;
        return JSON.parse(readFileSync(journaled, "utf8"))["2026-11-23T07"] === record.sha256;
      },
      90_000,
      () => "the sidecar did not compact and journal the fixture's whole hour",
    );
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
  } finally {
    sidecar.child.kill("SIGKILL");
  }
  verifyArgs = [
    ...["verify", `s3://${BUCKET}/pg`, ...s3],
    ...["--public-key", join(state, "manifests", "manifest-key.pem.pub")],
  ];
}, 180_000);
afterAll(async () => {
  await minio?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");
const storedHour = async (): Promise<Buffer> =>
  (await bucketContents(minio.client(), BUCKET, HOUR_KEY)).get(HOUR_KEY) as Buffer;
const storedRecord = async (): Promise<CompactionRecord | undefined> => {
  const body = (await bucketContents(minio.client(), BUCKET, RECORD_KEY)).get(RECORD_KEY);
  return body ? (JSON.parse(body.toString("utf8")) as CompactionRecord) : undefined;
};

/** The compaction children a sidecar logged that are stopped (SIGSTOP, here by themselves). */
function stoppedChildren(stderr: string): number[] {
  return [...stderr.matchAll(/"child":(\d+)[^\n]*"msg":"compaction: child started"/g)]
    .map((m) => Number(m[1]))
    .filter((pid) => {
      try {
        return /^State:\s+T/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
      } catch {
        return false;
      }
    });
}

describe("auditpipe verify: compacted files", () => {
  it("signs a grown hour's new Parquet file into the chain before it replaces the listed one: verify in between, after a kill -9 there, and after finds nothing", async () => {
    const before = await storedHour();
    const listedBefore = await storedRecord();
    expect(listedBefore?.sha256).toBe(sha256(before));
    // The hour continues after the clean stop: another real log of it, shipped without compaction.
    writeFileSync(
      join(logDir, "postgresql-2.csv"),
      gunzipSync(readFileSync(join(MORE, "postgresql.csv.gz"))),
    );
    let sidecar = spawnSidecar([...sidecarArgs, "--compact-ms", "0"], env);
    try {
      await sidecar.url();
      await waitUntil(
        async () =>
          (await s3Records<{ record?: string }>(minio.client(), BUCKET, "pg/dt=")).records.filter(
            (r) => (r.record ?? "entry") === "entry",
          ).length >=
          expected.entries + more.entries,
        60_000,
        () => "the sidecar did not ship the second log",
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      // Compacted anew; each compaction child stops itself once the rewrite is announced, before
      // it stores the new file: the window in which the chain and the bucket could disagree.
      sidecar = spawnSidecar(sidecarArgs, { ...env, AUDITPIPE_TEST_COMPACT_STOP_AT: "rewrite-announced" });
      await sidecar.url();
      let first = 0;
      await waitUntil(
        () => {
          first = stoppedChildren(sidecar.stderr())[0] ?? 0;
          return first > 0;
        },
        60_000,
        () => `no compaction child stopped after announcing the rewrite:\n${sidecar.stderr()}`,
      );
      expect(sidecar.stderr()).toContain("rewrite of a compacted file announced in the signed chain");
      expect(sha256(await storedHour())).toBe(listedBefore?.sha256); // not overwritten yet
      const announced = await run(verifyArgs);
      expect(announced.stdout).not.toMatch(/^ALTERED/m);
      expect(announced.stdout).toMatch(/^result: clean, no finding$/m);
      expect(announced.code).toBe(0);

      // kill -9 in the window: the archive stays clean, and the next run does the job.
      process.kill(first, "SIGKILL");
      let second = 0;
      await waitUntil(
        () => {
          second = stoppedChildren(sidecar.stderr()).find((pid) => pid !== first) ?? 0;
          return second > 0;
        },
        60_000,
        () => `the compaction was not retried after the kill:\n${sidecar.stderr()}`,
      );
      process.kill(second, "SIGCONT");
      const journaled = join(state, "compaction", "journaled.json");
      await waitUntil(
        async () => {
          const r = await storedRecord();
          if (r?.counts.entries !== expected.entries + more.entries) return false;
          return JSON.parse(readFileSync(journaled, "utf8"))["2026-11-23T07"] === r?.sha256;
        },
        60_000,
        () => "the grown hour was not compacted and recorded",
      );
      // Stored and journaled, its own listing not in a manifest yet: the announcement vouches.
      const after = await storedHour();
      expect(sha256(after)).toBe((await storedRecord())?.sha256);
      expect(sha256(after)).not.toBe(listedBefore?.sha256);
      const stored = await run(verifyArgs);
      expect(stored.stdout).not.toMatch(/^ALTERED/m);
      expect(stored.stdout).toMatch(/^result: clean, no finding$/m);
      expect(stored.code).toBe(0);

      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
    } finally {
      sidecar.child.kill("SIGKILL");
    }
    // The chain: an announcement (supersedes the old file), then the new file's own listing.
    const listings = [...(await bucketContents(minio.client(), BUCKET, "pg/_manifests/db1/"))]
      .map(([key, body]) => {
        // Chain order: by hour, then sequence (`<hour>.json`, `<hour>.1.json`, …).
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
    const final = sha256(await storedHour());
    expect(listings.at(-1)).toMatchObject({ sha256: final });
    expect(listings.at(-1)?.supersedes).toBeUndefined();
    expect(listings.some((f) => f.supersedes === listedBefore?.sha256)).toBe(true);
    const closed = await run(verifyArgs);
    expect(closed.stdout).toMatch(/^result: clean, no finding$/m);
    expect(closed.code).toBe(0);
  }, 240_000);

  it("reports a Parquet file no signed manifest lists as extra, and a listed one altered as altered", async () => {
    const clean = await run(verifyArgs);
    expect(clean.stdout).toMatch(/^result: clean, no finding$/m);
    expect(clean.code).toBe(0);

    // Forged: another hour's file under the host's keys, with a compaction record beside it.
    const forged = "pg/parquet/dt=2026-11-23/hour=08/host=db1/part-0.parquet";
    const original = (await bucketContents(minio.client(), BUCKET, HOUR_KEY)).get(HOUR_KEY) as Buffer;
    await put(forged, original);
    await put("pg/_compaction/db1/2026-11-23T08.json", "{}");
    try {
      const extra = await run(verifyArgs);
      expect(extra.stdout).toMatch(
        /^EXTRA\s+pg\/parquet\/dt=2026-11-23\/hour=08\/host=db1\/part-0\.parquet\n\s+a compacted file stored .*after host db1's chain was closed by a clean stop/m,
      );
      expect(extra.stdout).toMatch(/^result: 1 finding \(1 extra\)$/m); // the record is not one
      expect(extra.code).toBe(1);
    } finally {
      await del(forged);
      await del("pg/_compaction/db1/2026-11-23T08.json");
    }

    await put(HOUR_KEY, Buffer.concat([original, Buffer.from("x")]));
    try {
      const altered = await run(verifyArgs);
      expect(altered.stdout).toMatch(
        /^ALTERED\s+pg\/parquet\/dt=2026-11-23\/hour=07\/host=db1\/part-0\.parquet$/m,
      );
      expect(altered.code).toBe(1);
    } finally {
      await put(HOUR_KEY, original);
    }
  }, 60_000);

  it("takes landing objects dropped by compact --drop-landing for retention while their Parquet file is intact", async () => {
    const landing = await landingKeys();
    expect(landing.length).toBeGreaterThan(1);
    const compact = await run(["compact", `s3://${BUCKET}/pg`, ...s3, "--drop-landing"]);
    expect(compact.stdout).toMatch(
      /^2026-11-23T07 {2}db1 {2}already compacted \(.*\), \d+ landing objects dropped$/m,
    );
    expect(compact.code).toBe(0);
    expect(await landingKeys()).toEqual([]);

    const dropped = await run(verifyArgs);
    expect(dropped.stdout).toContain(
      `dropped after compaction into ${HOUR_KEY}: ${landing.length} landing objects (retention, --drop-landing)`,
    );
    expect(dropped.stdout).toMatch(/^result: clean, no finding$/m);
    expect(dropped.code).toBe(0);
    const json = JSON.parse((await run([...verifyArgs, "--json"])).stdout) as {
      dropped: { key: string; into: string }[];
    };
    expect(json.dropped.map((d) => d.key).sort()).toEqual(landing);

    await del(HOUR_KEY);
    const gone = await run(verifyArgs);
    for (const key of [HOUR_KEY, ...landing])
      expect(gone.stdout).toMatch(new RegExp(`^MISSING\\s+${key.replace(/[.]/g, "\\.")}$`, "m"));
    expect(gone.stdout).toMatch(
      new RegExp(`^result: ${landing.length + 1} findings \\(${landing.length + 1} missing\\)$`, "m"),
    );
    expect(gone.code).toBe(1);
  }, 60_000);
});
