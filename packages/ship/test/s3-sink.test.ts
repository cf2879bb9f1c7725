import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { recordsBatch, S3Sink, type S3SinkOptions, SinkErrorCode } from "@auditpipe/ship";
import type { UploadedObject } from "@auditpipe/ship/sinks/s3";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { encodeNdjson } from "../src/encode.ts";
import { batch, ndjsonLines, record, tempDir } from "./_sink-suite.ts";

let minio: MinioServer;
let restoreEnv: () => void;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  minio = await startMinio();
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
});

async function makeSink(options: Partial<S3SinkOptions> = {}): Promise<{ sink: S3Sink; bucket: string }> {
  const bucket = options.bucket ?? (await minio.freshBucket());
  const spoolDir = tempDir("s3-spool");
  const sink = new S3Sink({
    bucket,
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: "db-1",
    spoolDir,
    retry: { baseDelayMs: 50, maxDelayMs: 500, writeBudgetMs: 2_000 },
    ...options,
  });
  cleanup.push(async () => {
    await sink.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });
  return { sink, bucket };
}

describe("S3Sink", () => {
  test("keys: <prefix>/dt=/hour=/<host>/<source>-<first>-<last>.ndjson.zst (the default)|.gz", async () => {
    const gz = await makeSink({ prefix: "/pg/audit/", host: "db 1.example.com:5432", compression: "gzip" });
    const zst = await makeSink({ prefix: "pg/audit", bucket: gz.bucket });
    const b = batch("9f8e7d", 1024, 4096, 2, "2024-12-31T23:59:59.999Z");
    await gz.sink.write(b);
    await zst.sink.write(b);
    expect([...(await bucketContents(minio.client(), gz.bucket)).keys()].sort()).toMatchInlineSnapshot(`
      [
        "pg/audit/dt=2024-12-31/hour=23/db-1.example.com-5432/9f8e7d-0000000000001024-0000000000004096.ndjson.gz",
        "pg/audit/dt=2024-12-31/hour=23/db-1/9f8e7d-0000000000001024-0000000000004096.ndjson.zst",
      ]
    `);
  });

  test("headers: Content-Type, Content-Encoding, SHA-256 checksum and sha256 metadata of the stored bytes", async () => {
    for (const compression of ["gzip", "zstd"] as const) {
      const uploaded: UploadedObject[] = [];
      const { sink, bucket } = await makeSink({ compression, onUploaded: (o) => void uploaded.push(o) });
      const b = batch("c0ffee", 0, 900, 5);
      await sink.write(b);
      const [o] = uploaded;
      const head = await minio
        .client()
        .send(new HeadObjectCommand({ Bucket: bucket, Key: o!.key, ChecksumMode: "ENABLED" }));
      expect(head.ContentType).toBe("application/x-ndjson");
      expect(head.ContentEncoding).toBe(compression);
      expect(head.ChecksumSHA256).toBe(Buffer.from(o!.sha256, "hex").toString("base64"));
      expect(head.Metadata?.sha256).toBe(o!.sha256);
      expect(head.ContentLength).toBe(o!.size);
    }
  });

  test("gzip and zstd bodies decode to the batch's NDJSON, byte for byte", async () => {
    for (const compression of ["gzip", "zstd"] as const) {
      const { sink, bucket } = await makeSink({ compression });
      const b = batch("d00d", 0, 5000, 50);
      await sink.write(b);
      const [key, body] = [...(await bucketContents(minio.client(), bucket))][0]!;
      const lines = await ndjsonLines(body, key);
      expect(`${lines.join("\n")}\n`).toBe(encodeNdjson(b.records).toString("utf8"));
    }
  });

  test("onUploaded gets the stored object before write() resolves; the bytes are the same on every write", async () => {
    const events: string[] = [];
    const uploaded: UploadedObject[] = [];
    const { sink, bucket } = await makeSink({
      compression: "zstd",
      onUploaded: async (o) => {
        // The object is already in the store when the hook runs.
        const head = await minio.client().send(new HeadObjectCommand({ Bucket: bucket, Key: o.key }));
        events.push(`hook:${head.ContentLength}`);
        uploaded.push(o);
      },
    });
    const b = batch("abcd", 100, 200, 4);
    await sink.write(b);
    events.push("resolved");
    await sink.write(b);
    expect(events).toEqual([`hook:${uploaded[0]!.size}`, "resolved", `hook:${uploaded[0]!.size}`]);
    expect(uploaded[0]).toMatchObject({
      key: "dt=2024-05-06/hour=07/db-1/abcd-0000000000000100-0000000000000200.ndjson.zst",
      entries: 4,
      range: b.range,
      contentEncoding: "zstd",
    });
    expect(uploaded[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(uploaded[0]!.uploadedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(uploaded[1]!.sha256).toBe(uploaded[0]!.sha256); // deterministic compression
    expect(sink.spoolFiles()).toBe(0);
    expect(sink.health()).toEqual({ state: "ok", spoolBytes: 0, spoolFiles: 0 });
  });

  test("a large batch goes up as a multipart upload", async () => {
    const uploaded: UploadedObject[] = [];
    const { sink, bucket } = await makeSink({
      multipartThresholdBytes: 5 << 20,
      onUploaded: (o) => void uploaded.push(o),
    });
    // Random statements do not compress: ~12 MiB stored, over the 5 MiB threshold.
    const records = Array.from({ length: 3000 }, (_, i) =>
      record(i, undefined, `SELECT '${randomBytes(3000).toString("base64")}'`),
    );
    const b = recordsBatch(
      { sourceId: "big", sourceName: "big.csv", start: 0, end: 30_000_000 },
      records,
      30_000_000,
    );
    await sink.write(b);
    const [o] = uploaded;
    expect(o!.size).toBeGreaterThan(8 << 20);
    const head = await minio.client().send(new HeadObjectCommand({ Bucket: bucket, Key: o!.key }));
    expect(head.ETag).toMatch(/-2"$/); // a multipart ETag: <md5 of part md5s>-<parts>
    expect(head.Metadata?.sha256).toBe(o!.sha256);
    const [key, body] = [...(await bucketContents(minio.client(), bucket))][0]!;
    expect((await ndjsonLines(body, key)).length).toBe(3000);
  });

  test("a clear error per missing or bad option, before any I/O", () => {
    const base = { bucket: "b", spoolDir: "/tmp/x" };
    const cases: [Partial<S3SinkOptions>, RegExp][] = [
      [{ bucket: "" }, /`bucket` is required/],
      [{ spoolDir: "" }, /`spoolDir` is required/],
      [{ compression: "brotli" as never }, /`compression` must be "gzip" or "zstd"/],
      [{ objectLock: { mode: "LEGAL" as never, days: 1 } }, /`objectLock.mode`/],
      [{ objectLock: { mode: "GOVERNANCE", days: 0 } }, /`objectLock.days`/],
      [{ endpoint: "not a url" }, /`endpoint` must be a URL/],
      [{ multipartThresholdBytes: 1024 }, /at least 5242880/],
    ];
    for (const [override, message] of cases) {
      let error: unknown;
      try {
        new S3Sink({ ...base, ...override } as S3SinkOptions);
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: SinkErrorCode.CONFIG, message: expect.stringMatching(message) });
    }
  });

  test("the host segment defaults to the machine's name, sanitised", async () => {
    const { sink } = await makeSink({ host: undefined });
    expect(sink.options.host).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(sink.keyOf(batch("x", 0, 1))).toContain(`/${sink.options.host}/x-`);
  });
});
