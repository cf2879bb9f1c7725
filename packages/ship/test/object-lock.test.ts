import { rmSync } from "node:fs";
import { S3Sink, SinkError, SinkErrorCode } from "@auditpipe/ship";
import type { UploadedObject } from "@auditpipe/ship/sinks/s3";
import { type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { GetObjectRetentionCommand, HeadObjectCommand, ListObjectVersionsCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { batch, tempDir } from "./_sink-suite.ts";

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

function makeSink(bucket: string, onUploaded?: (o: UploadedObject) => void): S3Sink {
  const spoolDir = tempDir("s3-spool");
  const sink = new S3Sink({
    bucket,
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: "db-1",
    spoolDir,
    objectLock: { mode: "GOVERNANCE", days: 3 },
    retry: { baseDelayMs: 50, maxDelayMs: 200, writeBudgetMs: 2_000 },
    ...(onUploaded ? { onUploaded } : {}),
  });
  cleanup.push(async () => {
    await sink.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });
  return sink;
}

test("on a lock-enabled bucket every object carries the retention; a rewrite of the range adds no second version", async () => {
  const bucket = await minio.freshBucket({ objectLock: true });
  const uploaded: UploadedObject[] = [];
  const sink = makeSink(bucket, (o) => void uploaded.push(o));
  const b = batch("10c4", 0, 700, 3);
  const before = Date.now();
  await sink.write(b);
  const key = sink.keyOf(b);
  const retention = await minio.client().send(new GetObjectRetentionCommand({ Bucket: bucket, Key: key }));
  expect(retention.Retention?.Mode).toBe("GOVERNANCE");
  const until = retention.Retention!.RetainUntilDate!.getTime();
  expect(until).toBeGreaterThanOrEqual(before + 3 * 86_400_000 - 2_000);
  expect(until).toBeLessThanOrEqual(Date.now() + 3 * 86_400_000 + 2_000);
  const head = await minio
    .client()
    .send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: "ENABLED" }));
  expect(head.ObjectLockMode).toBe("GOVERNANCE");
  expect(head.ChecksumSHA256).toBe(Buffer.from(uploaded[0]!.sha256, "hex").toString("base64"));

  // The bucket is versioned (Object Lock turns it on): a replay must not keep a second locked copy.
  await sink.write(b);
  const versions = await minio.client().send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }));
  expect(versions.Versions?.length).toBe(1);
  expect(uploaded.map((o) => o.sha256)).toEqual([uploaded[0]!.sha256, uploaded[0]!.sha256]);
});

test("Object Lock asked for on a bucket without it: AUDITPIPE_ERR_SINK_NO_OBJECT_LOCK, a clear message", async () => {
  const bucket = await minio.freshBucket();
  const sink = makeSink(bucket);
  const error = await sink.write(batch("10c5", 0, 10)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SinkError);
  expect(error).toMatchObject({ code: SinkErrorCode.NO_OBJECT_LOCK, retryable: false });
  expect((error as SinkError).message).toMatch(/has no Object Lock configuration/);
  expect((error as SinkError).message).toMatch(/only be enabled when a bucket is created/);
  expect(sink.spoolFiles()).toBe(1);
});
