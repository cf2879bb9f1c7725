/**
 * An S3 archive on a real MinIO, written by the real S3 sink (two hosts, a real log and the same
 * log three hours later): `compact s3://…` writes one Parquet file per host-hour into the bucket;
 * `audit` over s3:// counts every entry once, and a time-bounded query fetches only the partitions
 * of its hours (fewer bytes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compactArchive, openArchive, type S3Settings } from "@auditpipe/compact";
import { openAuditView, runQuery } from "@auditpipe/query";
import { S3Sink } from "@auditpipe/ship";
import { type MinioServer, s3Keys, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

let minio: MinioServer;
let restore: () => void;
let bucket: string;
const work = mkdtempSync(join(tmpdir(), "auditpipe-query-s3-"));
let shipped = 0;
let entries = 0;
let settings: S3Settings;

beforeAll(async () => {
  minio = await startMinio();
  restore = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
  bucket = await minio.freshBucket();
  settings = { endpoint: minio.endpoint, region: minio.region, forcePathStyle: true };
  for (const [host, shift] of [
    ["db1", 0],
    ["db2", 3],
  ] as const) {
    const sink = new S3Sink({
      bucket,
      prefix: "pg/prod",
      host,
      endpoint: minio.endpoint,
      region: minio.region,
      forcePathStyle: true,
      spoolDir: join(work, `spool-${host}`),
    });
    const one = await shipFixture("session-all/postgresql.csv.gz", sink, { shiftHours: shift });
    shipped += one.rows;
    entries += one.entries;
    await sink.close();
  }
});
afterAll(async () => {
  restore?.();
  await minio?.stop();
  rmSync(work, { recursive: true, force: true });
});

const url = () => `s3://${bucket}/pg/prod`;

describe("an S3 archive", () => {
  it("compacts into one Parquet file per host-hour in the bucket", async () => {
    const { keys } = await s3Keys(minio.client(), bucket, "pg/prod/dt=");
    expect(keys.length).toBe(entries);
    const results = await compactArchive(await openArchive(url(), settings), { now: LATER, workDir: work });
    expect(results.map((r) => [r.partition.host, `${r.partition.dt}T${r.partition.hour}`, r.state])).toEqual([
      ["db1", "2026-11-23T07", "due"],
      ["db2", "2026-11-23T10", "due"],
    ]);
    expect(results.reduce((n, r) => n + (r.record?.rows ?? 0), 0)).toBe(shipped);
    const store = await openArchive(url(), settings);
    const listed: string[] = [];
    for await (const o of store.list("parquet/")) listed.push(o.key);
    expect(listed).toEqual([
      "parquet/dt=2026-11-23/hour=07/host=db1/part-0.parquet",
      "parquet/dt=2026-11-23/hour=10/host=db2/part-0.parquet",
    ]);
    store.close();
  });

  it("answers SQL over s3://, fetching only the partitions a time-bounded query needs", async () => {
    const all = await openAuditView(await openArchive(url(), settings), { workDir: work });
    try {
      const r = await runQuery(all.engine, "SELECT host, count(*) FROM audit GROUP BY host ORDER BY host");
      expect(r.rows).toEqual([
        ["db1", String(shipped / 2)],
        ["db2", String(shipped / 2)],
      ]);
      expect(all.scope.parquetFiles).toBe(2);
      expect(all.scope.fetchedBytes).toBe(all.scope.bytes);
    } finally {
      await all.close();
    }
    const late = await openAuditView(await openArchive(url(), settings), {
      workDir: work,
      from: new Date("2026-11-23T10:00:00Z"),
      to: new Date("2026-11-23T11:00:00Z"),
    });
    try {
      const r = await runQuery(late.engine, "SELECT host, count(*) FROM audit GROUP BY host");
      expect(r.rows).toEqual([["db2", String(shipped / 2)]]);
      expect(late.scope.parquetFiles).toBe(1);
      expect(late.scope.fetchedBytes).toBeGreaterThan(0);
      expect(late.scope.fetchedBytes).toBeLessThan(late.scope.archiveBytes / 2);
    } finally {
      await late.close();
    }
  });
});
