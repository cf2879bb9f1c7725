/**
 * What a PUT of the S3 sink carries: the body's SHA-256 as x-amz-checksum-sha256 (with
 * x-amz-sdk-checksum-algorithm) and as the signed payload hash always, Content-MD5 only with an
 * Object Lock retention (docs/archive.md); a real MinIO stores each, and a bucket locked by its
 * default retention takes a PUT without Content-MD5.
 */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { GetObjectRetentionCommand, PutObjectLockConfigurationCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, test } from "vitest";
import { putObject } from "../src/sinks/s3/_upload.ts";
import { createS3Client } from "../src/sinks/s3/client.ts";
import { resolveS3SinkOptions } from "../src/sinks/s3/config.ts";
import { tempDir } from "./_sink-suite.ts";

let minio: MinioServer;
let restoreEnv: () => void;
const spool = tempDir("s3-put-headers");
beforeAll(async () => {
  minio = await startMinio();
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
  rmSync(spool, { recursive: true, force: true });
});

/** PUTs `body` through putObject, returning the checksum headers of the request sent. */
async function put(bucket: string, body: Buffer, objectLock?: { mode: "GOVERNANCE"; days: number }) {
  const client = await createS3Client({
    endpoint: minio.endpoint,
    region: minio.region,
    forcePathStyle: true,
  });
  const headers: Record<string, string> = {};
  client.middlewareStack.add(
    (next) => async (args) => {
      Object.assign(headers, (args.request as { headers: Record<string, string> }).headers);
      return next(args);
    },
    { step: "finalizeRequest", name: "captureHeaders" },
  );
  const o = resolveS3SinkOptions({ bucket, spoolDir: spool, ...(objectLock ? { objectLock } : {}) });
  const sha256 = createHash("sha256").update(body).digest("hex");
  const meta = {
    key: `k-${sha256.slice(0, 8)}`,
    sha256,
    size: body.length,
    entries: 1,
    range: { sourceId: "f", sourceName: "f", start: 0, end: body.length } as never,
    contentEncoding: "zstd" as const,
  };
  try {
    await putObject(client, o, meta, body, new AbortController().signal);
  } finally {
    client.destroy();
  }
  const pick = (name: string) => headers[name] ?? headers[name.toLowerCase()];
  return {
    key: meta.key,
    md5: pick("content-md5"),
    algorithm: pick("x-amz-sdk-checksum-algorithm"),
    sha256: pick("x-amz-checksum-sha256"),
    payload: pick("x-amz-content-sha256"),
    expected: { sha256, md5: createHash("md5").update(body).digest("base64") },
  };
}

test("without Object Lock: the SHA-256 twice, no Content-MD5", async () => {
  const sent = await put(await minio.freshBucket(), Buffer.from("one line\n".repeat(500)));
  expect(sent.md5).toBeUndefined();
  expect(sent.algorithm).toBe("SHA256");
  expect(sent.sha256).toBe(Buffer.from(sent.expected.sha256, "hex").toString("base64"));
  expect(sent.payload).toBe(sent.expected.sha256);
});

test("with an Object Lock retention: Content-MD5 too, and the object is retained", async () => {
  const bucket = await minio.freshBucket({ objectLock: true });
  const sent = await put(bucket, Buffer.from("a locked line\n".repeat(500)), { mode: "GOVERNANCE", days: 1 });
  expect(sent.md5).toBe(sent.expected.md5);
  expect(sent.algorithm).toBe("SHA256");
  const retention = await minio
    .client()
    .send(new GetObjectRetentionCommand({ Bucket: bucket, Key: sent.key }));
  expect(retention.Retention?.Mode).toBe("GOVERNANCE");
});

test("a bucket locked by its default retention takes a PUT without Content-MD5", async () => {
  const bucket = await minio.freshBucket({ objectLock: true });
  await minio.client().send(
    new PutObjectLockConfigurationCommand({
      Bucket: bucket,
      ObjectLockConfiguration: {
        ObjectLockEnabled: "Enabled",
        Rule: { DefaultRetention: { Mode: "GOVERNANCE", Days: 1 } },
      },
    }),
  );
  const sent = await put(bucket, Buffer.from("a line under default retention\n".repeat(500)));
  expect(sent.md5).toBeUndefined();
  const retention = await minio
    .client()
    .send(new GetObjectRetentionCommand({ Bucket: bucket, Key: sent.key }));
  expect(retention.Retention?.Mode).toBe("GOVERNANCE");
});
