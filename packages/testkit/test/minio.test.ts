import { existsSync } from "node:fs";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import { GetObjectCommand, GetObjectLockConfigurationCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe("startMinio", () => {
  let minio: MinioServer;
  beforeAll(async () => {
    minio = await startMinio({ buckets: ["plain"], lockedBuckets: ["locked"] });
  });
  afterAll(() => minio?.stop());

  it("stores and returns an object", async () => {
    const s3 = minio.client();
    await s3.send(new PutObjectCommand({ Bucket: "plain", Key: "a/b.txt", Body: "hello minio" }));
    const got = await s3.send(new GetObjectCommand({ Bucket: "plain", Key: "a/b.txt" }));
    expect(await got.Body?.transformToString()).toBe("hello minio");
  });

  it("creates buckets with object lock on request", async () => {
    const lock = await minio.client().send(new GetObjectLockConfigurationCommand({ Bucket: "locked" }));
    expect(lock.ObjectLockConfiguration?.ObjectLockEnabled).toBe("Enabled");
    await expect(
      minio.client().send(new GetObjectLockConfigurationCommand({ Bucket: "plain" })),
    ).rejects.toThrow();
  });

  it("goes down and comes back with its data", async () => {
    await minio.down();
    await expect(fetch(`${minio.endpoint}/minio/health/live`)).rejects.toThrow();
    await minio.up();
    const got = await minio.client().send(new GetObjectCommand({ Bucket: "plain", Key: "a/b.txt" }));
    expect(await got.Body?.transformToString()).toBe("hello minio");
  });

  it("pauses and resumes", async () => {
    minio.pause();
    const stalled = await Promise.race([
      fetch(`${minio.endpoint}/minio/health/live`).then(() => "answered"),
      new Promise((r) => setTimeout(() => r("stalled"), 500)),
    ]);
    expect(stalled).toBe("stalled");
    minio.resume();
    const response = await fetch(`${minio.endpoint}/minio/health/live`);
    expect(response.ok).toBe(true);
  });

  it("removes its data on stop", async () => {
    const other = await startMinio();
    await other.stop();
    expect(existsSync(other.dataDir)).toBe(false);
  });
});
