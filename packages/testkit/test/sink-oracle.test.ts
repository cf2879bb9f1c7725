/**
 * The sink oracles read back what a sink stored with node:zlib and the AWS SDK only: gzip and
 * zstd objects, nested partitions, temp files and manifests left out, duplicates kept.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import {
  duplicates,
  type MinioServer,
  s3Keys,
  shippedKeys,
  shippedLines,
  shippedRecords,
  startMinio,
} from "@auditpipe/testkit";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** NDJSON of shipped-record stand-ins (only the key fields matter to the oracle). */
const ndjson = (lines: [string, number][]): Buffer =>
  Buffer.from(
    lines
      .map(([s, n]) => `${JSON.stringify({ record: "entry", session_id: s, session_line: n })}\n`)
      .join(""),
  );
/** An outcome line (not an entry: the entry oracles leave it out). */
const outcomeLine = `${JSON.stringify({ record: "outcome", session_id: "s1", session_line: 1, outcome: "succeeded" })}\n`;

describe("local-dir oracle", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "auditpipe-oracle-"));
    mkdirSync(join(dir, "dt=2026-11-24", "hour=19"), { recursive: true });
    const hour = join(dir, "dt=2026-11-24", "hour=19");
    writeFileSync(
      join(hour, "a-0-10.ndjson.gz"),
      gzipSync(
        ndjson([
          ["s1", 1],
          ["s1", 2],
        ]),
      ),
    );
    writeFileSync(
      join(hour, "a-10-20.ndjson.zst"),
      zstdCompressSync(
        ndjson([
          ["s1", 2],
          ["s2", 1],
        ]),
      ),
    );
    writeFileSync(join(hour, "a-20-30.ndjson.gz.tmp-1-abcd"), "half written");
    writeFileSync(join(hour, "a-30-40.ndjson.gz"), gzipSync(outcomeLine));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads every object under the directory, gzip and zstd, and skips temp files", () => {
    expect(shippedKeys(dir).sort()).toEqual(["s1:1", "s1:2", "s1:2", "s2:1"]);
    expect(shippedRecords(dir)).toHaveLength(4);
    expect(shippedLines(dir)).toHaveLength(5); // and the outcome line
    expect(duplicates(shippedKeys(dir))).toEqual(["s1:2"]);
  });

  it("finds nothing in a directory that is not there yet", () => {
    expect(shippedRecords(join(dir, "none"))).toEqual([]);
  });
});

describe("S3 oracle and MinIO helpers", () => {
  let minio: MinioServer;
  beforeAll(async () => {
    minio = await startMinio();
  });
  afterAll(() => minio?.stop());

  it("reads data objects of a fresh bucket under a prefix, not manifests", async () => {
    const bucket = await minio.freshBucket();
    expect(await minio.freshBucket()).not.toBe(bucket);
    const put = (key: string, body: Buffer) =>
      minio.client().send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    await put("pg/dt=2026-11-24/hour=19/h/a-0-10.ndjson.gz", gzipSync(ndjson([["s1", 1]])));
    await put("pg/dt=2026-11-24/hour=19/h/a-10-20.ndjson.zst", zstdCompressSync(ndjson([["s1", 2]])));
    await put("pg/_manifests/h/2026-11-24T19.json", Buffer.from("{}"));
    await put("other/a-0-10.ndjson.gz", gzipSync(ndjson([["s9", 9]])));
    expect(await s3Keys(minio.client(), bucket, "pg/")).toEqual({ keys: ["s1:1", "s1:2"], objects: 2 });
    expect((await s3Keys(minio.client(), bucket)).keys).toHaveLength(3);
  });

  it("gives a child process its credentials and region, and no shared files", () => {
    expect(minio.env()).toMatchObject({
      AWS_ACCESS_KEY_ID: minio.accessKeyId,
      AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
      AWS_REGION: minio.region,
      AWS_SHARED_CREDENTIALS_FILE: expect.stringMatching(/^\/nonexistent/),
    });
  });
});
