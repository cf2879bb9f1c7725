/**
 * A PUT signs the body's SHA-256 the spool already computed (x-amz-content-sha256): the SDK's
 * signer hashes the request's canonical form and its signing key, not the body again.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { startMinio } from "@auditpipe/testkit";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { expect, test } from "vitest";
import { putObject } from "../src/sinks/s3/_upload.ts";
import { resolveS3SinkOptions } from "../src/sinks/s3/config.ts";

function bytesOf(data: ArrayBuffer | ArrayBufferView): Uint8Array {
  return data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Bytes the client's SHA-256 (and HMAC-SHA-256) were given, over every hash it made. */
let hashed = 0;
class CountingSha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash =
      secret === undefined
        ? createHash("sha256")
        : createHmac("sha256", typeof secret === "string" ? secret : bytesOf(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    const bytes = typeof data === "string" ? Buffer.from(data) : bytesOf(data);
    hashed += bytes.byteLength;
    this.hash.update(bytes);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

test("the body is not hashed again to sign its PUT, and the store accepts the signature", async () => {
  const minio = await startMinio();
  try {
    const bucket = await minio.freshBucket();
    const client = new S3Client({
      endpoint: minio.endpoint,
      region: minio.region,
      forcePathStyle: true,
      credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
      sha256: CountingSha256,
    });
    try {
      const body = randomBytes(1 << 20);
      const sha256 = createHash("sha256").update(body).digest("hex");
      const o = resolveS3SinkOptions({
        bucket,
        endpoint: minio.endpoint,
        forcePathStyle: true,
        spoolDir: "/nonexistent",
      });
      const meta = {
        key: "a/b.ndjson.zst",
        sha256,
        size: body.length,
        entries: 1,
        range: { sourceId: "f1", sourceName: "/var/log/postgresql/a.csv", start: 0, end: 1 },
        contentEncoding: "zstd" as const,
      };
      hashed = 0;
      await putObject(client, o, meta, body, new AbortController().signal);
      expect(hashed).toBeLessThan(body.length / 100);
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: meta.key }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    } finally {
      client.destroy();
    }
  } finally {
    await minio.stop();
  }
});
