/**
 * The S3 sink gives a batch's NDJSON back once it holds the compressed object (write()'s
 * `release`), before the spool or the store took it: a retry after the release must neither read that
 * memory (it holds a later batch by then) nor store the range twice. Real MinIO, taken down while
 * the uploads run.
 */
import { mkdirSync, rmSync } from "node:fs";
import {
  type Batch,
  Delivery,
  type DeliverySource,
  S3Sink,
  type S3SinkOptions,
  type Sink,
} from "@auditpipe/ship";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { batch, ndjsonLines, tempDir } from "./_sink-suite.ts";

let minio: MinioServer;
let restoreEnv: () => void;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  minio = await startMinio();
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
let down = false;
afterEach(async () => {
  if (down) await storeUp();
  for (const f of cleanup.splice(0)) await f();
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
});

async function storeDown(): Promise<void> {
  await minio.down();
  down = true;
}
async function storeUp(): Promise<void> {
  await minio.up();
  down = false;
}

async function makeSink(
  extra: Partial<S3SinkOptions> = {},
): Promise<{ sink: S3Sink; bucket: string; spoolDir: string }> {
  const bucket = await minio.freshBucket();
  const spoolDir = tempDir("s3-release-spool");
  const sink = new S3Sink({
    bucket,
    prefix: "audit",
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: "db-1",
    spoolDir,
    retry: { baseDelayMs: 50, maxDelayMs: 400, writeBudgetMs: 1_000 },
    timeouts: { connectMs: 500, requestMs: 1_000 },
    ...extra,
  });
  cleanup.push(async () => {
    await sink.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });
  return { sink, bucket, spoolDir };
}

/** What a later batch does to a released NDJSON's memory: other valid lines, so a re-read would show. */
function reuse(b: Batch): void {
  const other = batch("ffff", 9_000_000, 9_000_100, 50).ndjson;
  other.copy(b.ndjson, 0, 0, Math.min(other.length, b.ndjson.length));
}

/** Every batch in the store exactly once, with the records it was written with. */
async function expectStoredOnce(bucket: string, batches: ReturnType<typeof batch>[]): Promise<void> {
  const stored = await bucketContents(minio.client(), bucket);
  expect(stored.size).toBe(batches.length);
  const offsets: number[] = [];
  for (const [key, body] of stored)
    for (const line of await ndjsonLines(body, key)) offsets.push(JSON.parse(line).source.offset);
  const expected = batches.flatMap((b) => b.records.map((r) => r.source.offset));
  expect(offsets.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
}

const until = async (condition: () => boolean): Promise<void> => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
};

test("the NDJSON is released once compressed; with the store down, retries after the release store each range once", async () => {
  const { sink, bucket } = await makeSink();
  const batches = [batch("0a0b", 0, 1000, 40), batch("0a0b", 1000, 2000, 40)];
  await storeDown();
  for (const b of batches) {
    let released = 0;
    const write = sink.write(b, () => released++);
    const outcome = await write.then(
      () => "acknowledged",
      () => "rejected",
    );
    // Spooled and released, never acknowledged while the store is down.
    expect(released).toBeGreaterThan(0);
    expect(outcome).toBe("rejected");
    reuse(b);
  }
  expect(sink.spoolFiles()).toBe(2);
  // Still down: a retry of a released batch rejects again and stores nothing.
  await expect(sink.write(batches[0]!)).rejects.toThrow();
  await storeUp();
  // The background drain stores what is spooled; the retries then find their keys stored.
  await sink.flush();
  expect(sink.spoolFiles()).toBe(0);
  for (const b of batches) await sink.write(b);
  await expectStoredOnce(bucket, batches);
});

test("released before the spool took it, and the spool write fails: the retry spools the body it kept, stored once", async () => {
  const { sink, bucket, spoolDir } = await makeSink();
  await sink.start();
  const b = batch("0e0f", 0, 1000, 40);
  rmSync(spoolDir, { recursive: true, force: true }); // the spool's write fails (its directory is gone)
  let released = 0;
  await expect(sink.write(b, () => released++)).rejects.toThrow();
  expect(released).toBe(1); // compressed, not spooled
  reuse(b);
  mkdirSync(spoolDir);
  await sink.write(b);
  expect(sink.spoolFiles()).toBe(0);
  await expectStoredOnce(bucket, [b]);
});

test("Delivery recycles a batch's memory once it is compressed, before the acknowledgement, and the outage stores each range once", async () => {
  const { sink, bucket } = await makeSink();
  const batches = Array.from({ length: 6 }, (_, i) => batch("0c0d", i * 1000, i * 1000 + 1000, 30));
  const events: string[] = [];
  const acked: number[] = [];
  const recycled = new Set<Batch>();
  const source: DeliverySource = {
    name: "/var/log/postgresql/0c0d.csv",
    ready: [...batches],
    handingOver: async () => {},
    acknowledged: (end) => {
      acked.push(end);
      events.push(`acknowledged ${end}`);
    },
    recycle: (b) => {
      expect(recycled.has(b)).toBe(false); // once a batch
      recycled.add(b);
      events.push(`recycled ${b.range.end}`);
      reuse(b); // the memory holds a later batch from now on
    },
  };
  await storeDown();
  // Retries wait until the store is back and the sink's drain has stored what is spooled: each
  // then finds its key stored, not spooled, and has only the released memory to go by.
  let drained!: () => void;
  const gate = new Promise<void>((resolve) => {
    drained = resolve;
  });
  const tried = new Set<Batch>();
  const gated: Sink = {
    name: sink.name,
    write: async (b, release) => {
      if (tried.has(b)) await gate;
      tried.add(b);
      await sink.write(b, release);
    },
    close: () => sink.close(),
  };
  let failed = 0;
  const delivery = new Delivery({ sink: gated, maxInFlight: 3, observer: { sinkError: () => failed++ } });
  const queue = delivery.queue(source);
  const draining = queue.deliver(true);
  // Three in flight, each released while the store is down, then each write given up on (its
  // budget): nothing acknowledged, and Delivery's retries come after the release.
  await until(() => recycled.size === 3 && failed >= 3);
  expect(recycled.size).toBe(3);
  expect(acked).toEqual([]);
  await storeUp();
  await sink.flush();
  expect(sink.spoolFiles()).toBe(0);
  drained();
  await draining;
  expect(acked.at(-1)).toBe(6000);
  expect(recycled.size).toBe(6);
  // Every batch was recycled before the acknowledgement that covered it.
  for (const b of batches)
    expect(events.indexOf(`recycled ${b.range.end}`)).toBeLessThan(
      events.findIndex((e) => e.startsWith("acknowledged ") && Number(e.split(" ")[1]) >= b.range.end),
    );
  await expectStoredOnce(bucket, batches);
});
