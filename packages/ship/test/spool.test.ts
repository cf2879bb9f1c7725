import { createHash } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { S3Sink, SinkErrorCode } from "@auditpipe/ship";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Spool, type SpoolEntryMeta } from "../src/_spool.ts";
import { batch, tempDir } from "./_sink-suite.ts";

function meta(key: string, body: Buffer): SpoolEntryMeta {
  return {
    key,
    sha256: createHash("sha256").update(body).digest("hex"),
    size: body.length,
    entries: 1,
    range: { sourceId: "s", sourceName: "s.csv", start: 0, end: 10 },
    contentEncoding: "gzip",
  };
}

const tick = (ms = 50): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("Spool", () => {
  test("put is durable and named after the key; the same key again reuses the file", async () => {
    const dir = tempDir("spool");
    const spool = await Spool.open(dir, 1 << 20);
    const body = Buffer.from("hello");
    const a = await spool.put(meta("p/dt=2024-01-01/hour=00/h/s-1-2.ndjson.gz", body), body);
    const again = await spool.put(
      meta("p/dt=2024-01-01/hour=00/h/s-1-2.ndjson.gz", Buffer.from("other")),
      Buffer.from("other"),
    );
    expect(again.path).toBe(a.path);
    expect(readdirSync(dir)).toEqual([expect.stringMatching(/^[0-9a-f]{16}-s-1-2\.ndjson\.gz\.spool$/)]);
    expect((await spool.read(a)).toString()).toBe("hello");
    expect(spool.files()).toBe(1);
    expect(spool.bytes()).toBe(a.diskBytes);
  });

  test("reopened, it lists what it held oldest first, drops temp files and sets damaged files aside", async () => {
    const dir = tempDir("spool");
    const first = await Spool.open(dir, 1 << 20);
    for (const k of ["k/b", "k/a", "k/c"]) {
      await first.put(meta(k, Buffer.from(k)), Buffer.from(k));
      await tick(5);
    }
    writeFileSync(join(dir, "0000-x.ndjson.gz.spool.tmp-1-abcd"), "half written");
    writeFileSync(join(dir, "0000-y.ndjson.gz.spool"), "not a spool file");
    const warnings: string[] = [];
    const reopened = await Spool.open(dir, 1 << 20, { warn: (_o, m) => void warnings.push(m) });
    expect(reopened.list().map((e) => e.key)).toEqual(["k/b", "k/a", "k/c"]);
    expect(readdirSync(dir).filter((n) => n.includes(".tmp-"))).toEqual([]);
    expect(readdirSync(dir)).toContain("0000-y.ndjson.gz.spool.corrupt");
    expect(warnings).toHaveLength(1);
    expect(reopened.bytes()).toBe(first.bytes());
  });

  test("a body that no longer matches its SHA-256 is set aside, not uploaded", async () => {
    const dir = tempDir("spool");
    const spool = await Spool.open(dir, 1 << 20);
    const entry = await spool.put(meta("k/z", Buffer.from("abc")), Buffer.from("abc"));
    const file = readdirSync(dir)[0]!;
    const { readFileSync } = await import("node:fs");
    const content = readFileSync(join(dir, file));
    content[content.length - 1] = 0x58; // flip the last body byte
    writeFileSync(join(dir, file), content);
    await expect(spool.read(entry)).rejects.toMatchObject({ code: SinkErrorCode.SPOOL });
    expect(spool.files()).toBe(0);
    expect(readdirSync(dir)).toEqual([`${file}.corrupt`]);
  });

  test("full: put waits until a remove frees room (one object always fits in an empty spool)", async () => {
    const dir = tempDir("spool");
    const body = Buffer.alloc(600, 1);
    const spool = await Spool.open(dir, 1000);
    await spool.put(meta("k/1", body), body); // over half the limit
    let second = false;
    const waiting = spool.put(meta("k/2", body), body).then(() => {
      second = true;
    });
    await tick(200);
    expect(second).toBe(false);
    expect(spool.files()).toBe(1);
    await spool.remove("k/1");
    await waiting;
    expect(spool.list().map((e) => e.key)).toEqual(["k/2"]);
    // Larger than the whole limit, but the spool is empty once k/2 goes: it fits then.
    const big = Buffer.alloc(5000, 2);
    const large = spool.put(meta("k/big", big), big);
    await tick(100);
    expect(spool.get("k/big")).toBeUndefined();
    await spool.remove("k/2");
    await large;
    expect(spool.files()).toBe(1);
  });
});

describe("S3Sink spool", () => {
  let minio: MinioServer;
  let restoreEnv: () => void;
  beforeAll(async () => {
    minio = await startMinio();
    restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
  });
  afterAll(async () => {
    restoreEnv?.();
    await minio?.stop();
  });

  test("spool full while the store is down: write() waits (the reader stops), nothing is lost", async () => {
    const bucket = await minio.freshBucket();
    const spoolDir = tempDir("s3-spool");
    const sink = new S3Sink({
      bucket,
      endpoint: minio.endpoint,
      forcePathStyle: true,
      host: "db-1",
      spoolDir,
      spoolMaxBytes: 1_500, // about two small objects
      retry: { baseDelayMs: 50, maxDelayMs: 300, writeBudgetMs: 60_000 },
      timeouts: { connectMs: 500, requestMs: 2_000 },
    });
    try {
      await minio.down();
      const batches = [0, 1, 2, 3, 4].map((i) => batch("fe", i * 10, i * 10 + 10, 3));
      const acked: number[] = [];
      const writes = batches.map((b, i) => sink.write(b).then(() => void acked.push(i)));
      await tick(1_500);
      expect(acked).toEqual([]);
      expect(sink.spoolBytes()).toBeLessThanOrEqual(1_500);
      expect(sink.spoolFiles()).toBeGreaterThan(0);
      expect(sink.spoolFiles()).toBeLessThan(batches.length); // the rest wait for room
      expect(sink.health().state).toBe("retrying");
      await minio.up();
      await Promise.all(writes);
      expect(acked.sort()).toEqual([0, 1, 2, 3, 4]);
      expect(sink.spoolFiles()).toBe(0);
      const stored = await bucketContents(minio.client(), bucket);
      expect(stored.size).toBe(5);
      expect(sink.health().state).toBe("ok");
    } finally {
      await sink.close();
    }
  });
});
