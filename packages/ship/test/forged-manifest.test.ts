import { createHash, generateKeyPairSync } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  loadOrCreateSigningKey,
  type Manifest,
  ManifestErrorCode,
  ManifestJournal,
  type ManifestSigningKey,
  parsePublicKeys,
  S3Sink,
  type UploadedObject,
  verifyArchive,
} from "@auditpipe/ship";
import { type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getText, HOST, HOUR, manualClock, stateDir } from "./_manifest.ts";
import { batch, tempDir } from "./_sink-suite.ts";

/**
 * Issue 16 item 1, performed as reported: with only the bucket's credentials, after an hour's
 * manifest closed, overwrite one object, add an invented one, and PUT the next hour's manifest
 * chaining to the real previous one and listing both under their new hashes. Before signatures
 * verify said clean and the sidecar adopted the forgery; now verify fails and the sidecar refuses.
 */
const PLAIN = "plain";
const LOCKED = "locked";
const MIN = 60_000;
let minio: MinioServer;
let restoreEnv: () => void;

beforeAll(async () => {
  minio = await startMinio({ buckets: [PLAIN], lockedBuckets: [LOCKED] });
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
});

const sha256 = (b: Uint8Array | string): string => createHash("sha256").update(b).digest("hex");

async function signingKey(): Promise<{ key: ManifestSigningKey; publicPem: string }> {
  const path = join(stateDir(), "manifest-key.pem");
  const { key } = await loadOrCreateSigningKey(path);
  return { key, publicPem: key.publicKey.export({ type: "spki", format: "pem" }) as string };
}

/** Waits, if need be, until the hour has more than `ms` left: the test's uploads must share one hour. */
async function awayFromHourEnd(ms: number): Promise<void> {
  while (HOUR - (Date.now() % HOUR) < ms) await new Promise((r) => setTimeout(r, 100));
}

/**
 * The sidecar's side: an S3 sink whose uploads its journal records (and the test sees), on a
 * clock the test moves; uploads are stamped with the real time, in the journal's current hour.
 */
async function sidecar(bucket: string, prefix: string, key: ManifestSigningKey, objectLock: boolean) {
  await awayFromHourEnd(30_000);
  const clock = manualClock(Date.now());
  const client = minio.client();
  const journal = await ManifestJournal.open({
    client,
    bucket,
    prefix,
    host: HOST,
    stateDir: stateDir(),
    now: clock.now,
    signingKey: key,
    selfCheckIntervalMs: 0,
  });
  const recorded: UploadedObject[] = [];
  const spoolDir = tempDir("forged-spool");
  const sink = new S3Sink({
    bucket,
    prefix,
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: HOST,
    spoolDir,
    ...(objectLock ? { objectLock: { mode: "GOVERNANCE" as const, days: 1 } } : {}),
    retry: { baseDelayMs: 50, maxDelayMs: 200, writeBudgetMs: 2_000 },
    onUploaded: (o) => {
      recorded.push(o);
      return journal.record(o);
    },
  });
  const stop = async (): Promise<void> => {
    await sink.close();
    await journal.close().catch(() => undefined); // a conflict stays a conflict
    rmSync(spoolDir, { recursive: true, force: true });
  };
  return { journal, sink, clock, stop, recorded, hour: Math.floor(clock.now().getTime() / HOUR) * HOUR };
}

describe.each([
  { bucket: PLAIN, objectLock: false },
  { bucket: LOCKED, objectLock: true },
])("a forged next-hour manifest (Object Lock: $objectLock)", ({ bucket, objectLock }) => {
  it("fails verify with the public key, and the sidecar refuses to adopt it", async () => {
    const client = minio.client();
    const prefix = `pg/forged-${objectLock ? "locked" : "plain"}`;
    const { key, publicPem } = await signingKey();
    const s = await sidecar(bucket, prefix, key, objectLock);
    await s.sink.write(batch("f1", 0, 300, 3));
    await s.sink.write(batch("f2", 0, 300, 3));
    const [a, b] = s.recorded as [UploadedObject, UploadedObject];
    if (objectLock)
      expect(a.versionId).toEqual(expect.any(String)); // the sink recorded the version
    else expect(a.versionId).toBeUndefined();

    // Hour "13" (the current hour) closes: a signed manifest.
    s.clock.set(s.hour + HOUR + 6 * MIN);
    await s.journal.closeDue();
    const real = s.journal.chainHead!;
    const realText = await getText(client, bucket, real.key);
    const realManifest = JSON.parse(realText) as Manifest;
    expect(realManifest.keyId).toBe(key.keyId);
    expect(realManifest.signature).toEqual(expect.any(String));
    expect(realManifest.objects.map((o) => o.versionId)).toEqual([a.versionId, b.versionId]);

    // The attack, with the bucket's credentials only.
    const altered = gzipSync('{"statement":"SELECT forged"}\n');
    const overwrite = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: a.key, Body: altered, ContentEncoding: "gzip" }),
    );
    const inventedKey = a.key.replace(/[^/]+$/, "f9-0000000000000000-0000000000000300.ndjson.gz");
    const invented = gzipSync('{"statement":"SELECT invented"}\n');
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: inventedKey, Body: invented }));
    const at = new Date().toISOString();
    const { versionId: _real, ...base } = a;
    const listing = (k: string, body: Uint8Array, versionId: string | undefined): UploadedObject => ({
      ...base,
      key: k,
      sha256: sha256(body),
      size: body.length,
      uploadedAt: at,
      ...(versionId ? { versionId } : {}),
    });
    const nextHour = s.hour + HOUR;
    const forged: Manifest = {
      version: 2,
      host: HOST,
      hour: new Date(nextHour).toISOString().slice(0, 13),
      created: new Date(nextHour + HOUR + 5 * MIN).toISOString(),
      previous: { key: real.key, sha256: sha256(realText) },
      objects: [listing(a.key, altered, overwrite.VersionId), listing(inventedKey, invented, undefined)],
      totals: { objects: 2, entries: 2, bytes: altered.length + invented.length },
    };
    const forgedKey = real.key.replace(real.hour, forged.hour);
    const forgedText = `${JSON.stringify(forged, null, 2)}\n`;
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: forgedKey, Body: forgedText }));

    // As reported: without a trusted key the forgery reads clean.
    const unchecked = await verifyArchive({ client, bucket, prefix });
    expect(unchecked.findings).toEqual([]);
    expect(unchecked.signatures).toBe("not checked");

    // With the sidecar's public key: the forged manifest is unsigned, and what it lists counts for nothing.
    const report = await verifyArchive({
      client,
      bucket,
      prefix,
      trustedKeys: parsePublicKeys(publicPem, "key"),
    });
    expect(report.ok).toBe(false);
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: "unsigned", key: forgedKey }));
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: "extra", key: inventedKey }));
    if (objectLock)
      expect(report.findings).toContainEqual(
        expect.objectContaining({
          kind: "overwritten",
          key: a.key,
          reason: expect.stringContaining("the stored version is intact"),
        }),
      );
    else expect(report.findings).toContainEqual(expect.objectContaining({ kind: "altered", key: a.key }));

    // A forgery signed with another key is no better.
    const other = generateKeyPairSync("ed25519");
    const otherKey = parsePublicKeys(other.publicKey.export({ type: "spki", format: "pem" }) as string, "k");
    const wrong = await verifyArchive({ client, bucket, prefix, trustedKeys: otherKey });
    expect(wrong.findings).toContainEqual(
      expect.objectContaining({
        kind: "bad-signature",
        key: real.key,
        reason: expect.stringContaining("not a trusted key"),
      }),
    );

    // The self-check sees the overwrite and the manifest for an hour it has not closed, at once.
    const found = await s.journal.checkOwnUploads();
    expect(found).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "altered", key: a.key }),
        expect.objectContaining({ kind: "manifest", key: forgedKey }),
      ]),
    );
    expect(s.journal.health().selfCheck).toEqual(found);

    // The sidecar closes the next hour: the forgery is in its place; a conflict, never adopted.
    s.clock.set(nextHour + HOUR + 6 * MIN);
    await expect(s.journal.closeDue()).rejects.toMatchObject({ code: ManifestErrorCode.CONFLICT });
    expect(s.journal.health().conflict).toEqual({
      key: forgedKey,
      reason: expect.stringContaining("not continued from"),
    });
    expect(s.journal.chainHead?.key).toBe(real.key);
    // A restart with a lost state dir does not continue from the forgery either.
    const fresh = await ManifestJournal.open({
      client,
      bucket,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: s.clock.now,
      signingKey: key,
    });
    expect(fresh.chainHead?.key).toBe(real.key);
    await fresh.close().catch(() => undefined);
    await s.stop();
  });
});

describe("the sidecar's self-check of its open hour", () => {
  it("flags an object planted under its keys, one overwritten and one deleted, before any manifest", async () => {
    const client = minio.client();
    const prefix = "pg/live";
    const { key } = await signingKey();
    const s = await sidecar(PLAIN, prefix, key, false);
    await s.sink.write(batch("f1", 0, 300, 3));
    await s.sink.write(batch("f2", 0, 300, 3));
    await s.sink.write(batch("f3", 0, 300, 3));
    const [a, b, c] = s.recorded as [UploadedObject, UploadedObject, UploadedObject];
    expect(await s.journal.checkOwnUploads()).toEqual([]); // its own uploads: clean
    expect(s.journal.health().selfCheck).toEqual([]);

    const planted = a.key.replace(/[^/]+$/, "f9-0000000000000000-0000000000000300.ndjson.gz");
    await client.send(new PutObjectCommand({ Bucket: PLAIN, Key: planted, Body: gzipSync("{}\n") }));
    await client.send(new PutObjectCommand({ Bucket: PLAIN, Key: b.key, Body: gzipSync("{}\n") }));
    await client.send(new DeleteObjectCommand({ Bucket: PLAIN, Key: c.key }));
    const found = await s.journal.checkOwnUploads();
    expect(found.map((f) => [f.kind, f.key]).sort()).toEqual(
      [
        ["altered", b.key],
        ["foreign", planted],
        ["missing", c.key],
      ].sort(),
    );
    expect(s.journal.health().selfCheck).toEqual(found);
    await s.stop();
  });
});
