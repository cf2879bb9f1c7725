import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import {
  compress,
  DEFAULT_COMPRESSION,
  loadOrCreateSigningKey,
  type Manifest,
  type ManifestSigningKey,
  recordsBatch,
  S3Archive,
  type VerifyReport,
  verifyArchive,
} from "@auditpipe/ship";
import { type MinioServer, startMinio, useAwsCredentials, waitUntil } from "@auditpipe/testkit";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getText, listKeys } from "./_manifest.ts";
import { record, tempDir } from "./_sink-suite.ts";

const HOST = "db-1";
const HOUR = 3_600_000;
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

/** The manifests below are named after the current hour: start a test with a minute of it left at least. */
async function awayFromTheHoursEnd(): Promise<void> {
  while (HOUR - (Date.now() % HOUR) < 60_000) await new Promise((r) => setTimeout(r, 500));
}

/** A batch of `range`; `statement` changes its bytes, not its key. */
function batchOf(start: number, statement = "SELECT 1") {
  const range = { sourceId: "f1", sourceName: "/var/log/postgresql/f1.csv", start, end: start + 100 };
  return recordsBatch(range, [record(start, "2026-11-27T10:00:00.000Z", statement)], 100);
}

async function archiveIn(bucket: string, key: ManifestSigningKey, state: string): Promise<S3Archive> {
  const archive = await S3Archive.open({
    bucket,
    prefix: "pg",
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: HOST,
    spoolDir: join(state, "spool"),
    manifestDir: join(state, "manifests"),
    signingKey: key,
    selfCheckIntervalMs: 0,
    version: "9.9.9-test",
    retry: { baseDelayMs: 50, maxDelayMs: 500, writeBudgetMs: 10_000 },
  });
  cleanup.push(() => archive.close());
  return archive;
}

async function fixture(): Promise<{ bucket: string; key: ManifestSigningKey; state: string }> {
  const state = tempDir("archive-chain");
  cleanup.push(async () => rmSync(state, { recursive: true, force: true }));
  const { key } = await loadOrCreateSigningKey(join(state, "manifest-key.pem"));
  return { bucket: await minio.freshBucket(), key, state };
}

const manifestsOf = async (bucket: string): Promise<Manifest[]> => {
  const keys = await listKeys(minio.client(), bucket, `pg/_manifests/${HOST}/`);
  const order = (k: string): number => Number(/\.(\d+)\.json$/.exec(k)?.[1] ?? 0);
  keys.sort((a, b) => order(a) - order(b));
  return Promise.all(keys.map(async (k) => JSON.parse(await getText(minio.client(), bucket, k)) as Manifest));
};

const verify = (bucket: string, key: ManifestSigningKey): Promise<VerifyReport> =>
  verifyArchive({
    client: minio.client(),
    bucket,
    prefix: "pg",
    trustedKeys: new Map([[key.keyId, key.publicKey]]),
  });

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

describe("S3Archive: the chain's open and close records", () => {
  it("with the store down at start-up, takes coverage events and spools batches at once; journals both once the chain opens", async () => {
    await awayFromTheHoursEnd();
    const { bucket, key, state } = await fixture();
    await minio.down();
    let archive: S3Archive;
    let writing: Promise<void>;
    const start = {
      kind: "server",
      event: "start",
      at: "2026-11-27T10:00:00.000Z",
      sourceName: "f1.csv",
      offset: 0,
    } as const;
    try {
      archive = await archiveIn(bucket, key, state);
      // Durable without the store: a source waiting on it would otherwise never reach the spool.
      await archive.recordCoverage(start);
      writing = archive.sink.write(batchOf(0));
      writing.catch(() => undefined);
      // Spooled, and /readyz says why it waits: the store's reason, once (not the chain's again).
      const waiting = /^sink s3 (retrying|failing): AUDITPIPE_ERR_SINK_UNREACHABLE/;
      await waitUntil(
        () => archive.sink.spoolFiles() === 1 && waiting.test(archive.problems().join("\n")),
        10_000,
        () => `spooled: ${archive.sink.spoolFiles()}; problems: ${archive.problems().join("; ")}`,
      );
      expect(archive.problems()).toHaveLength(1);
    } finally {
      await minio.up();
    }
    await archive.sink.flush();
    await archive.close();
    const manifests = await manifestsOf(bucket);
    expect(manifests.map((m) => m.chain)).toEqual(["open", "close"]);
    const { kind: _k, ...server } = start;
    expect(manifests.flatMap((m) => m.coverage?.serverEvents ?? [])).toEqual([server]);
    expect(manifests.flatMap((m) => m.objects.map((o) => o.range.start))).toEqual([0]);
    expect((await verify(bucket, key)).findings).toEqual([]);
  });

  it("signs an open record before the first upload and a close record at close(); what is stored under its keys after a close, or between two runs, is extra", async () => {
    await awayFromTheHoursEnd();
    const { bucket, key, state } = await fixture();
    let archive = await archiveIn(bucket, key, state);
    await archive.sink.write(batchOf(0));
    await archive.close();

    const [opened, closed] = await manifestsOf(bucket);
    expect(opened).toMatchObject({ version: 2, chain: "open", partial: true, objects: [], previous: null });
    expect(opened?.run).toMatchObject({ version: "9.9.9-test" });
    expect(closed).toMatchObject({ chain: "close", partial: true, sequence: 1, run: opened?.run });
    expect(closed?.objects.map((o) => o.range.start)).toEqual([0]);
    const clean = await verify(bucket, key);
    expect(clean.findings).toEqual([]);
    expect(clean.chains).toEqual([expect.objectContaining({ host: HOST, state: "closed", pending: 0 })]);

    // With only the bucket's credentials, an object under the stopped host's keys: extra at once.
    const planted = (closed?.objects[0]?.key ?? "").replace(
      /[^/]+$/,
      "f9-0000000000000000-0000000000000001.ndjson.gz",
    );
    await minio.client().send(new PutObjectCommand({ Bucket: bucket, Key: planted, Body: "{}\n" }));
    const stopped = await verify(bucket, key);
    expect(stopped.ok).toBe(false);
    expect(stopped.pending).toEqual([]);
    expect(stopped.findings).toEqual([expect.objectContaining({ kind: "extra", key: planted })]);
    expect(stopped.findings[0]?.reason).toMatch(/after host db-1's chain was closed by a clean stop/);

    // A restart reopens the chain with a signed record first; the planted object stays extra.
    archive = await archiveIn(bucket, key, state);
    await archive.sink.write(batchOf(100));
    const running = await verify(bucket, key);
    expect(running.findings).toEqual([expect.objectContaining({ kind: "extra", key: planted })]);
    expect(running.chains).toEqual([expect.objectContaining({ state: "open", pending: 1 })]);
    await archive.close();
    const all = await manifestsOf(bucket);
    expect(all.map((m) => m.chain)).toEqual(["open", "close", "open", "close"]);
    expect(all[2]?.objects).toEqual([]);
    expect(all[2]?.run?.id).not.toBe(opened?.run?.id);
    const after = await verify(bucket, key);
    expect(after.findings).toEqual([expect.objectContaining({ kind: "extra", key: planted })]);
    expect(after.objects).toBe(2);
  });

  it("signs a rewrite's new hash into the chain before the key is overwritten; then only the new bytes pass", async () => {
    await awayFromTheHoursEnd();
    const { bucket, key, state } = await fixture();
    const archive = await archiveIn(bucket, key, state);
    const first = batchOf(0, "SELECT 'pending'");
    await archive.sink.write(first);
    // The same range encoded otherwise (an upgrade, an outcome decided later): same key, other bytes.
    await archive.sink.write(batchOf(0, "SELECT 'decided'"));
    await archive.close();

    const all = await manifestsOf(bucket);
    const listings = all.flatMap((m) => m.objects);
    const [stored, announced, rewritten] = listings;
    expect(listings).toHaveLength(3);
    expect(announced).toMatchObject({ key: stored?.key, supersedes: stored?.sha256 });
    expect(announced?.sha256).not.toBe(stored?.sha256);
    expect(rewritten).toMatchObject({ key: stored?.key, sha256: announced?.sha256 });
    expect(rewritten?.supersedes).toBeUndefined();
    // The announcement is a manifest of its own, signed before the overwrite was sent.
    const announcing = all.findIndex((m) => m.objects.some((o) => o.supersedes));
    const listingRewrite = all.findIndex((m) =>
      m.objects.some((o) => o.sha256 === rewritten?.sha256 && !o.supersedes),
    );
    expect(all[announcing]).toMatchObject({ partial: true });
    expect(announcing).toBeLessThan(listingRewrite);
    expect((await verify(bucket, key)).findings).toEqual([]);

    // The old bytes put back: the newest listing is the upload, which takes only the new ones.
    const old = await compress(first.ndjson, DEFAULT_COMPRESSION);
    expect(sha256(old)).toBe(stored?.sha256);
    await minio.client().send(new PutObjectCommand({ Bucket: bucket, Key: stored?.key, Body: old }));
    expect((await verify(bucket, key)).findings).toEqual([
      expect.objectContaining({ kind: "altered", key: stored?.key }),
    ]);
  });

  it("takes the bytes a rewrite replaces while its announcement is the newest listing, and nothing else", async () => {
    await awayFromTheHoursEnd();
    const { bucket, key, state } = await fixture();
    const archive = await archiveIn(bucket, key, state);
    const b = batchOf(0);
    await archive.sink.write(b);
    const target = archive.sink.keyOf(b);
    const body = await compress(b.ndjson, DEFAULT_COMPRESSION);
    // Announced, the overwrite not sent yet (the sidecar stopped or died in between).
    await archive.journal()?.announceRewrite({
      key: target,
      sha256: "e".repeat(64),
      size: 10,
      entries: 1,
      range: b.range,
      contentEncoding: DEFAULT_COMPRESSION,
      uploadedAt: new Date().toISOString(),
      supersedes: sha256(body),
    });
    await archive.close();
    expect((await verify(bucket, key)).findings).toEqual([]);
    await minio.client().send(new PutObjectCommand({ Bucket: bucket, Key: target, Body: "forged\n" }));
    expect((await verify(bucket, key)).findings).toEqual([
      expect.objectContaining({ kind: "altered", key: target }),
    ]);
  });
});
