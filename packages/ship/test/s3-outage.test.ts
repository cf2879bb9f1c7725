import { rmSync } from "node:fs";
import { S3Sink, type S3SinkOptions, SinkErrorCode } from "@auditpipe/ship";
import type { UploadedObject } from "@auditpipe/ship/sinks/s3";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { batch, ndjsonLines, tempDir, writeUntilAcked } from "./_sink-suite.ts";

let minio: MinioServer;
let restoreEnv: () => void;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  minio = await startMinio();
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
afterEach(async () => {
  minio.resume();
  for (const f of cleanup.splice(0)) await f();
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function options(bucket: string, spoolDir: string, extra: Partial<S3SinkOptions> = {}): S3SinkOptions {
  return {
    bucket,
    prefix: "audit",
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: "db-1",
    spoolDir,
    retry: { baseDelayMs: 50, maxDelayMs: 400, writeBudgetMs: 2_000 },
    timeouts: { connectMs: 500, requestMs: 1_000 },
    ...extra,
  };
}

async function makeSink(
  extra: Partial<S3SinkOptions> = {},
): Promise<{ sink: S3Sink; bucket: string; spoolDir: string }> {
  const bucket = await minio.freshBucket();
  const spoolDir = tempDir("s3-spool");
  const sink = new S3Sink(options(bucket, spoolDir, extra));
  cleanup.push(async () => {
    await sink.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });
  return { sink, bucket, spoolDir };
}

/** Writes batches the way FileSource does: up to 3 in flight, each retried until acknowledged. */
async function feed(
  sink: S3Sink,
  batches: ReturnType<typeof batch>[],
  onProgress: (done: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < batches.length) {
      const b = batches[next++]!;
      await writeUntilAcked(sink, b, 100);
      await onProgress(++done);
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}

/** Every batch in the store exactly once: one object per range, every record once. */
async function expectStoredOnce(bucket: string, batches: ReturnType<typeof batch>[]): Promise<void> {
  const stored = await bucketContents(minio.client(), bucket);
  expect(stored.size).toBe(batches.length);
  const offsets: number[] = [];
  for (const [key, body] of stored)
    for (const line of await ndjsonLines(body, key)) offsets.push(JSON.parse(line).source.offset);
  const expected = batches.flatMap((b) => b.records.map((r) => r.source.offset));
  expect(offsets.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
}

test("the store goes down mid-run for a few seconds: every batch stored once, the spool drained", async () => {
  const { sink, bucket } = await makeSink();
  const batches = Array.from({ length: 30 }, (_, i) => batch("0a0b", i * 1000, i * 1000 + 1000, 4));
  let outage: Promise<void> | undefined;
  let sawSpooled = 0;
  await feed(sink, batches, async (done) => {
    if (done === 8 && !outage) {
      outage = (async () => {
        await minio.down();
        for (let i = 0; i < 30; i++) {
          await sleep(100);
          sawSpooled = Math.max(sawSpooled, sink.spoolFiles());
        }
        expect(sink.health().state).not.toBe("ok");
        await minio.up();
      })();
    }
  });
  await outage;
  await sink.flush();
  expect(sawSpooled).toBeGreaterThan(0); // the spool grew while the store was down
  expect(sink.spoolFiles()).toBe(0);
  expect(sink.spoolBytes()).toBe(0);
  expect(sink.health().state).toBe("ok");
  await expectStoredOnce(bucket, batches);
});

test("the store hangs (SIGSTOP) then resumes: attempts time out instead of hanging, then everything is stored", async () => {
  const { sink, bucket } = await makeSink();
  const batches = Array.from({ length: 6 }, (_, i) => batch("0c0d", i * 100, i * 100 + 100, 2));
  await sink.write(batches[0]!);
  minio.pause();
  const started = Date.now();
  const first = await sink.write(batches[1]!).then(
    () => "resolved",
    (e: { code?: string }) => e.code,
  );
  // Rejected within the write budget plus one attempt's deadline, not hung.
  expect(first).toBe(SinkErrorCode.UNREACHABLE);
  expect(Date.now() - started).toBeLessThan(8_000);
  expect(sink.spoolFiles()).toBe(1);
  const rest = feed(sink, batches.slice(1), async () => {});
  await sleep(1_500);
  minio.resume();
  await rest;
  await sink.flush();
  await expectStoredOnce(bucket, batches);
});

test("a process killed with a batch spooled: the next sink on the same spool uploads it at start", async () => {
  const bucket = await minio.freshBucket();
  const spoolDir = tempDir("s3-spool");
  cleanup.push(async () => rmSync(spoolDir, { recursive: true, force: true }));
  const b = batch("0e0f", 5000, 6000, 3);
  await minio.down();
  const dying = new S3Sink(
    options(bucket, spoolDir, { retry: { baseDelayMs: 50, maxDelayMs: 200, writeBudgetMs: 500 } }),
  );
  await expect(dying.write(b)).rejects.toMatchObject({ code: SinkErrorCode.UNREACHABLE });
  expect(dying.spoolFiles()).toBe(1);
  await dying.close(); // what survives a kill: the spool directory
  await minio.up();

  const uploaded: UploadedObject[] = [];
  const next = new S3Sink(options(bucket, spoolDir, { onUploaded: (o) => void uploaded.push(o) }));
  cleanup.push(() => next.close());
  await next.start();
  await next.flush();
  expect(uploaded.map((o) => o.key)).toEqual([next.keyOf(b)]);
  expect(next.spoolFiles()).toBe(0);
  await expectStoredOnce(bucket, [b]);
  // The source, which never got the acknowledgement, writes the range again: same object.
  await next.write(b);
  await expectStoredOnce(bucket, [b]);
});
