import { createHash } from "node:crypto";
import { join } from "node:path";
import {
  loadOrCreateSigningKey,
  type Manifest,
  ManifestJournal,
  type VerifyReport,
  verifyArchive,
} from "@auditpipe/ship";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signManifest } from "../src/manifest/signing.ts";
import {
  buildArchive,
  getText,
  HOST,
  HOUR,
  listKeys,
  manualClock,
  putDataObject,
  sha256,
  stateDir,
} from "./_manifest.ts";

const BUCKET = "archive";
let minio: MinioServer;
/**
 * Four hours ending with the current one: the store stamps objects with the real time, and the
 * chain must cover that time for an unlisted object to count as "extra" rather than "pending".
 */
const base = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const closeThrough = base + 6 * HOUR; // hours up to base+4h (after now) are closed
let n = 0;

beforeAll(async () => {
  minio = await startMinio({ buckets: [BUCKET] });
});
afterAll(async () => {
  await minio?.stop();
});

/** A fresh archive under its own prefix, so every tampering starts from a clean one. */
async function archive(): Promise<{
  prefix: string;
  objects: Awaited<ReturnType<typeof buildArchive>>["objects"];
  manifests: string[];
}> {
  const prefix = `pg/archive-${++n}`;
  return { prefix, ...(await buildArchive(minio.client(), BUCKET, prefix, { base, closeThrough })) };
}

const verify = (
  prefix: string,
  extra: Partial<Parameters<typeof verifyArchive>[0]> = {},
): Promise<VerifyReport> => verifyArchive({ client: minio.client(), bucket: BUCKET, prefix, ...extra });

const kinds = (r: VerifyReport): string[] => r.findings.map((f) => f.kind);

async function getBytes(key: string): Promise<Uint8Array> {
  const out = await minio.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return out.Body!.transformToByteArray();
}

describe("verifyArchive", () => {
  it("finds nothing wrong with an untouched archive, replays and rewrites included", async () => {
    const { prefix, manifests, objects } = await archive();
    const report = await verify(prefix);
    expect(report.findings).toEqual([]);
    expect(report.ok).toBe(true);
    expect(manifests).toHaveLength(5); // hours 0..4; 2 and 4 without uploads
    expect(report.manifests).toBe(5);
    // 7 uploads, 5 distinct keys: a replay with the same bytes, a rewrite with new ones.
    expect(report.objects).toBe(5);
    expect(report.entries).toBe(15);
    expect(report.bytes).toBeGreaterThan(0);
    expect(report.pending).toEqual([]);
    expect(report.pendingVerifiableAfter).toBeNull();
    expect(report.chains).toEqual([
      expect.objectContaining({ host: HOST, manifests: 5, first: new Date(base).toISOString().slice(0, 13) }),
    ]);
    expect(report.range).toEqual({
      from: new Date(base).toISOString(),
      to: new Date(base + 5 * HOUR).toISOString(),
    });
    expect(objects).toHaveLength(7);
  });

  it("reports a deleted object as missing", async () => {
    const { prefix, objects } = await archive();
    const victim = objects[1]?.key ?? "";
    await minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: victim }));
    const report = await verify(prefix);
    expect(report.findings).toEqual([
      expect.objectContaining({
        kind: "missing",
        key: victim,
        manifest: expect.stringMatching(/_manifests\/db-1\//),
      }),
    ]);
    expect(report.counts.missing).toBe(1);
    expect(report.ok).toBe(false);
  });

  it("reports a modified object as altered", async () => {
    const { prefix, objects } = await archive();
    const victim = objects[3] as (typeof objects)[number];
    const got = await minio.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: victim.key }));
    const body = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
    body[body.length - 5] = (body[body.length - 5] ?? 0) ^ 1; // one bit in the stored bytes
    await minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: victim.key, Body: body }));
    const report = await verify(prefix);
    expect(kinds(report)).toEqual(["altered"]);
    expect(report.findings[0]).toMatchObject({
      key: victim.key,
      reason: expect.stringContaining(victim.sha256.slice(0, 12)),
    });
  });

  it("reports an object no manifest lists as extra", async () => {
    const { prefix } = await archive();
    const stray = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date(base).toISOString(),
      sourceId: "forged",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    const report = await verify(prefix);
    expect(report.findings).toEqual([expect.objectContaining({ kind: "extra", key: stray.key })]);
  });

  it("reports a compacted file no manifest lists as extra, like a landing object; a compaction record is bookkeeping, not judged", async () => {
    const { prefix } = await archive();
    const put = (key: string) =>
      minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: "x" }));
    const dt = new Date(base).toISOString().slice(0, 10);
    const forged = `${prefix}/parquet/dt=${dt}/hour=00/host=${HOST}/part-0.parquet`;
    await put(forged);
    await put(`${prefix}/_compaction/${HOST}/${dt}T00.json`);
    const stray = `${prefix}/parquetish/dt=${dt}/x.parquet`;
    await put(stray);
    const report = await verify(prefix);
    expect(report.findings.map((f) => `${f.kind} ${f.key}`)).toEqual([`extra ${forged}`, `extra ${stray}`]);
    expect(report.findings[0]?.reason).toMatch(/^a compacted file stored .* in no manifest$/);
  });

  it("reports a deleted manifest as a gap in the chain", async () => {
    const { prefix, manifests, objects } = await archive();
    const removed = manifests[1] ?? "";
    await minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: removed }));
    const report = await verify(prefix);
    // What only that manifest listed is listed nowhere now (extra), and the key it listed as
    // rewritten is checked against its older listing (altered): the chain break explains both.
    expect(report.findings).toEqual([
      expect.objectContaining({ kind: "altered", key: objects[4]?.key }),
      expect.objectContaining({ kind: "extra", key: objects[3]?.key }),
      expect.objectContaining({ kind: "gap", key: removed, manifest: manifests[2] }),
    ]);
  });

  it("reports swapped manifests as reordered and the chain after them as broken", async () => {
    const { prefix, manifests } = await archive();
    const [k0, k1] = [manifests[0] ?? "", manifests[1] ?? ""];
    const client = minio.client();
    const [t0, t1] = [await getText(client, BUCKET, k0), await getText(client, BUCKET, k1)];
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: k0, Body: t1 }));
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: k1, Body: t0 }));
    const report = await verify(prefix);
    expect(report.counts.reordered).toBeGreaterThanOrEqual(2);
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: "reordered", key: k0 }));
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: "reordered", key: k1 }));
    expect(report.findings).toContainEqual(
      expect.objectContaining({ kind: "broken-chain", key: k1, manifest: manifests[2] }),
    );
  });

  it("reports a manifest rewritten with a wrong previous: broken link, reordering, two manifests claiming one previous", async () => {
    const { prefix, manifests } = await archive();
    const client = minio.client();
    const [k0, k1, k2, k3] = manifests;
    // Hour 2 rewritten to skip hour 1 (say, to hide what hour 1 lists), with a valid hash of hour 0.
    const m2 = JSON.parse(await getText(client, BUCKET, k2 ?? "")) as Manifest;
    m2.previous = { key: k0 ?? "", sha256: sha256(await getText(client, BUCKET, k0 ?? "")) };
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: k2, Body: `${JSON.stringify(m2, null, 2)}\n` }),
    );
    let report = await verify(prefix);
    expect(report.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: "reordered",
          key: k2,
          reason: expect.stringContaining(`before it is ${k1}`),
        }),
        expect.objectContaining({ kind: "fork", key: k0, reason: expect.stringContaining(`${k1}, ${k2}`) }),
        expect.objectContaining({ kind: "broken-chain", key: k2, manifest: k3 }),
      ]),
    );

    // A previous with the right key and a wrong hash.
    m2.previous = { key: k1 ?? "", sha256: "0".repeat(64) };
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: k2, Body: `${JSON.stringify(m2, null, 2)}\n` }),
    );
    report = await verify(prefix);
    expect(report.findings).toContainEqual(
      expect.objectContaining({ kind: "broken-chain", key: k1, manifest: k2 }),
    );
  });

  it("limits the check to --from/--to, still checking the link into the first hour", async () => {
    const { prefix, manifests } = await archive();
    const client = minio.client();
    const report = await verify(prefix, { from: new Date(base + HOUR + 1), to: new Date(base + 3 * HOUR) });
    expect(report.findings).toEqual([]);
    expect(report.manifests).toBe(3);
    expect(report.range).toEqual({
      from: new Date(base + HOUR).toISOString(),
      to: new Date(base + 4 * HOUR).toISOString(),
    });
    // Hour 0 is out of range, but the first verified hour links to its bytes.
    const t0 = await getText(client, BUCKET, manifests[0] ?? "");
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: manifests[0], Body: `${t0}\n` }));
    const after = await verify(prefix, { from: new Date(base + HOUR), to: new Date(base + 3 * HOUR) });
    expect(after.findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[0], manifest: manifests[1] }),
    ]);
  });

  it("calls objects stored after the last closed manifest pending, not extra", async () => {
    const prefix = `pg/archive-${++n}`;
    // Closed only up to the hour before the current one: uploads of this hour are not listed yet.
    await buildArchive(minio.client(), BUCKET, prefix, { base, closeThrough: Date.now() });
    const fresh = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date().toISOString(),
      sourceId: "f3",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    const report = await verify(prefix);
    expect(report.findings).toEqual([]);
    expect(report.pending).toContain(fresh.key);
    // …and when they become verifiable: their hour's manifest, due 5 minutes after it ends.
    const stored = (
      await minio.client().send(new HeadObjectCommand({ Bucket: BUCKET, Key: fresh.key }))
    ).LastModified!.getTime();
    expect(report.pendingVerifiableAfter).toBe(
      new Date(Math.floor(stored / HOUR) * HOUR + HOUR + 5 * 60_000).toISOString(),
    );
  });

  it("reports a listed object rewritten, swapped or re-uploaded with other bytes after the chain's end as altered at once, never pending", async () => {
    const prefix = `pg/archive-${++n}`;
    // The chain open and up to date (a running sidecar): its newest manifest lists d and the replay.
    const { objects } = await buildArchive(minio.client(), BUCKET, prefix, {
      base,
      closeThrough: Date.now(),
    });
    // a and the rewritten e (salted): different bytes.
    const [a, b] = [objects[0], objects[4]];
    const [aBytes, bBytes] = await Promise.all([a!.key, b!.key].map((k) => getBytes(k)));
    // Swapped: each now holds the other's bytes; both stored now, after the newest manifest.
    await minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: a!.key, Body: bBytes }));
    await minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: b!.key, Body: aBytes }));
    const report = await verify(prefix);
    // d, uploaded in the current hour, is in no manifest yet: pending; a and b are listed: never.
    expect(report.pending).toEqual([objects[5]?.key]);
    expect(kinds(report)).toEqual(["altered", "altered"]);
    expect(report.findings.map((f) => f.key).sort()).toEqual([a!.key, b!.key].sort());
    expect(report.ok).toBe(false);
  });

  it("reports a host whose chain is open and silent past the limit as gone, with what it left unverified", async () => {
    const prefix = `pg/archive-${++n}`;
    const { objects } = await buildArchive(minio.client(), BUCKET, prefix, {
      base,
      closeThrough: Date.now(),
    });
    const after = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date().toISOString(),
      sourceId: "late",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    const running = await verify(prefix);
    expect(running.findings).toEqual([]);
    // d (uploaded in the current hour, in no manifest yet) and the late one wait for the next manifest.
    const unlisted = [objects[5]?.key, after.key].sort();
    expect(running.pending).toEqual(unlisted);
    expect(running.chains).toEqual([expect.objectContaining({ state: "open", pending: 2 })]);
    // Three hours later, nothing more: no close record, no manifest since.
    const later = await verify(prefix, { now: () => new Date(Date.now() + 3 * HOUR) });
    expect(later.pending).toEqual([]);
    expect(later.findings).toEqual([expect.objectContaining({ kind: "gone", objects: unlisted })]);
    expect(later.findings[0]?.reason).toMatch(
      /no close record .* 2 object\(s\) stored after it are unverified/,
    );
    expect(later.chains).toEqual([expect.objectContaining({ state: "gone" })]);
    expect(later.ok).toBe(false);
  });

  it("reports an object the sidecar's self-check disowned as extra at once, while its hour is still open", async () => {
    const prefix = `pg/archive-${++n}`;
    const clock = manualClock(Date.now());
    const journal = await ManifestJournal.open({
      client: minio.client(),
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: clock.now,
      selfCheckIntervalMs: 0,
    });
    await journal.openChain();
    const own = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date().toISOString(),
      sourceId: "f1",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    await journal.record(own);
    const planted = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date().toISOString(),
      sourceId: "forged",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    expect((await verify(prefix)).pending.sort()).toEqual([own.key, planted.key].sort());
    const found = await journal.checkOwnUploads();
    expect(found).toEqual([expect.objectContaining({ kind: "foreign", key: planted.key })]);
    // Signed into the chain there and then: a partial manifest naming it.
    const report = await verify(prefix);
    expect(report.findings).toEqual([expect.objectContaining({ kind: "extra", key: planted.key })]);
    expect(report.findings[0]?.reason).toMatch(/self-check found it was not written by it/);
    expect(report.pending).toEqual([]);
    await journal.close();
  });

  it("reports an empty archive, and an unknown host, as nothing to verify yet, not as clean", async () => {
    const report = await verify("pg/nothing-here");
    expect(report.findings).toEqual([]);
    expect(report.ok).toBe(false);
    expect(report.nothingToVerify).toEqual({
      reason: expect.stringContaining("nothing stored under the prefix yet"),
      objects: 0,
      verifiableAfter: null,
    });
    const { prefix } = await archive();
    const other = await verify(prefix, { host: "db-2" });
    expect(other.ok).toBe(false);
    expect(other.nothingToVerify?.reason).toContain("host db-2");
  });

  it("after a first shipment says when the archive becomes verifiable; once that is past, no manifest is a gap", async () => {
    const client = minio.client();
    const prefix = `pg/first-${++n}`;
    const o = await putDataObject(client, BUCKET, {
      prefix,
      entryTs: new Date().toISOString(),
      sourceId: "f1",
      start: 0,
      end: 100,
      lines: 2,
      uploadedAt: Date.now(),
    });
    const report = await verify(prefix);
    expect(report.findings).toEqual([]);
    expect(report.ok).toBe(false);
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: o.key }));
    const stored = head.LastModified?.getTime() ?? 0;
    const due = Math.floor(stored / HOUR) * HOUR + HOUR + 5 * 60_000;
    expect(report.nothingToVerify).toEqual({
      reason: expect.stringContaining("1 object(s) stored under the prefix"),
      objects: 1,
      verifiableAfter: new Date(due).toISOString(),
    });
    expect(report.nothingToVerify?.reason).toContain(new Date(due).toISOString());
    // Two hours later with still no manifest: removed, or never written. A finding, not "pending".
    const later = await verify(prefix, { now: () => new Date(due + 2 * HOUR) });
    expect(later.nothingToVerify).toBeNull();
    expect(later.findings).toEqual([
      expect.objectContaining({ kind: "gap", reason: expect.stringContaining("manifests removed") }),
    ]);
  });
});

/**
 * Eight closed hours starting two hours before the current one, one upload listed in each. The
 * store stamps every object with the real time, before the sixth hour (index 5): verified from
 * there, nothing the older hours list is stored within the verified hours.
 */
async function hourlyArchive(): Promise<{ prefix: string; start: number; manifests: string[] }> {
  const client = minio.client();
  const prefix = `pg/archive-${++n}`;
  const start = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
  const clock = manualClock(start);
  const journal = await ManifestJournal.open({
    client,
    bucket: BUCKET,
    prefix,
    host: HOST,
    stateDir: stateDir(),
    now: clock.now,
  });
  for (let h = 0; h < 8; h++) {
    const entryTs = new Date(start + h * HOUR).toISOString();
    const uploadedAt = start + h * HOUR + 10 * 60_000;
    const o = { prefix, entryTs, sourceId: "f1", start: h * 100, end: h * 100 + 100, lines: 2, uploadedAt };
    await journal.record(await putDataObject(client, BUCKET, o));
  }
  clock.set(start + 8 * HOUR + 6 * 60_000);
  await journal.close();
  return { prefix, start, manifests: await listKeys(client, BUCKET, `${prefix}/_manifests/`) };
}

const counting: S3Client[] = [];
afterAll(() => {
  for (const client of counting) client.destroy();
});

/** A client of its own (the testkit's is shared) that counts its GetObject calls by key. */
function countingClient(): { client: S3Client; gets: (keys: readonly string[]) => number[] } {
  const { endpoint, region, accessKeyId, secretAccessKey } = minio;
  const client = new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  counting.push(client);
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "GetObjectCommand") {
        const key = (args.input as { Key?: string }).Key ?? "";
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return next(args);
    },
    { step: "initialize", name: "countGetObject" },
  );
  return { client, gets: (keys) => keys.map((k) => counts.get(k) ?? 0) };
}

const put = (key: string | undefined, body: string): Promise<unknown> =>
  minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
const remove = (key: string | undefined): Promise<unknown> =>
  minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));

describe("verifyArchive --to", () => {
  it("checks the link out of the last verified hour: the next manifest vouches for it", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    const client = minio.client();
    const range = { from: new Date(start + 3 * HOUR), to: new Date(start + 5 * HOUR) };
    expect((await verify(prefix, range)).findings).toEqual([]);
    // Hour 5's object replaced and its manifest rewritten to match, its own link left intact:
    // only hour 6, after the range, still names the bytes hour 5's manifest had.
    const m5 = JSON.parse(await getText(client, BUCKET, manifests[5] ?? "")) as Manifest;
    const object = m5.objects[0]!;
    const forged = Buffer.from("forged\n");
    await put(object.key, forged.toString());
    const sha256 = createHash("sha256").update(forged).digest("hex");
    const objects = [{ ...object, sha256, size: forged.length }];
    await put(manifests[5], `${JSON.stringify({ ...m5, objects }, null, 2)}\n`);
    expect((await verify(prefix, range)).findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[5], manifest: manifests[6] }),
    ]);
    // Hour 6 gone: nothing vouches for hour 5 any more, and the range says so; hour 7's own gap
    // is outside it.
    await remove(manifests[6]);
    expect((await verify(prefix, range)).findings).toEqual([
      expect.objectContaining({ kind: "gap", key: manifests[6], manifest: manifests[7] }),
    ]);
  });
});

describe("verifyArchive --from", () => {
  it("downloads no manifest older than the first verified hour's predecessor", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    expect(manifests).toHaveLength(8);
    const from = new Date(start + 5 * HOUR + 1);
    let counter = countingClient();
    const report = await verify(prefix, { client: counter.client, from });
    expect(report.findings).toEqual([]);
    expect(report.manifests).toBe(3);
    // Hour 4 is what hour 5 links to; hours 0-3 are listed and never read.
    expect(counter.gets(manifests)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);

    // An old manifest made unreadable: a full verify reports it (and what only it listed), a
    // ranged one does not read it.
    await put(manifests[1], "not a manifest");
    const full = await verify(prefix);
    expect(full.findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[1], manifest: manifests[1] }),
      expect.objectContaining({ kind: "broken-chain", key: manifests[1], manifest: manifests[2] }),
      expect.objectContaining({ kind: "extra" }),
    ]);
    counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([]);
    expect(counter.gets(manifests)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });

  it("still reports a rewritten verified manifest, a removed one and an object gone", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    const client = minio.client();
    const from = new Date(start + 5 * HOUR);
    // Hour 6 rewritten to hide its object; hour 7 names the old bytes.
    const m6 = JSON.parse(await getText(client, BUCKET, manifests[6] ?? "")) as Manifest;
    const m5 = JSON.parse(await getText(client, BUCKET, manifests[5] ?? "")) as Manifest;
    await put(manifests[6], `${JSON.stringify({ ...m6, objects: [] }, null, 2)}\n`);
    await remove(m5.objects[0]?.key);
    const counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[6], manifest: manifests[7] }),
      expect.objectContaining({ kind: "missing", key: m5.objects[0]?.key, manifest: manifests[5] }),
    ]);
    expect(counter.gets(manifests.slice(0, 4))).toEqual([0, 0, 0, 0]);

    await remove(manifests[6]);
    expect((await verify(prefix, { from })).findings).toEqual([
      expect.objectContaining({ kind: "gap", key: manifests[6], manifest: manifests[7] }),
      expect.objectContaining({ kind: "missing", key: m5.objects[0]?.key }),
    ]);
  });

  it("still checks the link into the first verified hour: the predecessor rewritten or removed", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    const from = new Date(start + 5 * HOUR);
    const t4 = await getText(minio.client(), BUCKET, manifests[4] ?? "");
    await put(manifests[4], `${t4}\n`);
    let counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[4], manifest: manifests[5] }),
    ]);
    expect(counter.gets(manifests.slice(0, 4))).toEqual([0, 0, 0, 0]);

    // Without hour 4, hour 3 is the predecessor: read, and hour 5's link to hour 4 is a gap.
    await remove(manifests[4]);
    counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([
      expect.objectContaining({ kind: "gap", key: manifests[4], manifest: manifests[5] }),
    ]);
    expect(counter.gets(manifests.slice(0, 4))).toEqual([0, 0, 0, 1]);
  });

  it("still reports a later manifest that forks from the chain into the verified hours", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    const client = minio.client();
    // Hour 7 rewritten to follow hour 4, as if hours 5 and 6 had never been.
    const m7 = JSON.parse(await getText(client, BUCKET, manifests[7] ?? "")) as Manifest;
    m7.previous = {
      key: manifests[4] ?? "",
      sha256: sha256(await getText(client, BUCKET, manifests[4] ?? "")),
    };
    await put(manifests[7], `${JSON.stringify(m7, null, 2)}\n`);
    const fork = expect.objectContaining({
      kind: "fork",
      key: manifests[4],
      reason: expect.stringContaining(`${manifests[5]}, ${manifests[7]}`),
    });
    // Hour 5 alone verified: hour 7 is after the range, and still read.
    const only5 = await verify(prefix, { from: new Date(start + 5 * HOUR), to: new Date(start + 5 * HOUR) });
    expect(only5.findings).toEqual([fork]);
    const counter = countingClient();
    const onward = await verify(prefix, { client: counter.client, from: new Date(start + 5 * HOUR) });
    expect(onward.findings).toEqual([
      fork,
      expect.objectContaining({
        kind: "reordered",
        key: manifests[7],
        reason: expect.stringContaining(manifests[6] ?? ""),
      }),
    ]);
    expect(counter.gets(manifests.slice(0, 4))).toEqual([0, 0, 0, 0]);
  });

  it("reads the older manifests when a verified one links into them, and reports what a full verify does", async () => {
    const { prefix, start, manifests } = await hourlyArchive();
    const client = minio.client();
    // Hour 5 rewritten to follow hour 2: hour 3 claims hour 2 too, and hour 3 was not read.
    const m5 = JSON.parse(await getText(client, BUCKET, manifests[5] ?? "")) as Manifest;
    m5.previous = {
      key: manifests[2] ?? "",
      sha256: sha256(await getText(client, BUCKET, manifests[2] ?? "")),
    };
    await put(manifests[5], `${JSON.stringify(m5, null, 2)}\n`);
    const ranged = await verify(prefix, { from: new Date(start + 5 * HOUR) });
    expect(ranged.findings).toEqual([
      expect.objectContaining({ kind: "broken-chain", key: manifests[5], manifest: manifests[6] }),
      expect.objectContaining({
        kind: "fork",
        key: manifests[2],
        reason: expect.stringContaining(`${manifests[3]}, ${manifests[5]}`),
      }),
      expect.objectContaining({ kind: "reordered", key: manifests[5] }),
    ]);
    expect(ranged.findings).toEqual((await verify(prefix)).findings);
  });

  it("reads the older manifests before calling an object extra", async () => {
    // The store stamped everything with the current hour: an object only hour 0 lists is stored
    // within hours 2-4, yet it is listed, as a full verify sees.
    const { prefix, manifests } = await archive();
    const from = new Date(base + 2 * HOUR);
    let counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([]);
    expect(counter.gets(manifests.slice(0, 1))).toEqual([1]);

    const stray = await putDataObject(minio.client(), BUCKET, {
      prefix,
      entryTs: new Date(base).toISOString(),
      sourceId: "forged",
      start: 0,
      end: 10,
      lines: 1,
      uploadedAt: Date.now(),
    });
    counter = countingClient();
    expect((await verify(prefix, { client: counter.client, from })).findings).toEqual([
      expect.objectContaining({ kind: "extra", key: stray.key }),
    ]);
  });

  it("checks the compacted files a manifest lists by SHA-256, and verifies a chain begun in version 1", async () => {
    const client = minio.client();
    const prefix = `pg/archive-${++n}`;
    const { key } = await loadOrCreateSigningKey(join(stateDir(), "manifest-key.pem"));
    const trustedKeys = new Map([[key.keyId, key.publicKey]]);
    // Hour 0 written by an auditpipe of manifest version 1 (signed under the v1 domain)…
    const first = await putDataObject(client, BUCKET, {
      prefix,
      entryTs: new Date(base).toISOString(),
      sourceId: "f1",
      start: 0,
      end: 10,
      lines: 2,
      uploadedAt: base + 60_000,
    });
    const v1: Manifest = {
      version: 1,
      host: HOST,
      hour: new Date(base).toISOString().slice(0, 13),
      created: new Date(base + HOUR + 5 * 60_000).toISOString(),
      previous: null,
      objects: [first],
      totals: { objects: 1, entries: first.entries, bytes: first.size },
      keyId: key.keyId,
    };
    v1.signature = signManifest(v1, key);
    const v1Key = `${prefix}/_manifests/${HOST}/${v1.hour}.json`;
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: v1Key, Body: `${JSON.stringify(v1, null, 2)}\n` }),
    );
    // …continued by this version (no state dir: it takes up the newest manifest its key signed),
    // which records a compacted file in the next hour.
    const clock = manualClock(base + HOUR + 10 * 60_000);
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: clock.now,
      signingKey: key,
    });
    expect(journal.chainHead?.key).toBe(v1Key);
    const parquet = Buffer.from("PAR1 not really parquet PAR1");
    const parquetKey = `${prefix}/compacted/dt=${v1.hour.slice(0, 10)}/hour=${v1.hour.slice(11)}/${HOST}.parquet`;
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: parquetKey, Body: parquet }));
    await journal.recordCompaction({
      key: parquetKey,
      sha256: createHash("sha256").update(parquet).digest("hex"),
      size: parquet.length,
      rows: first.entries,
      sources: [{ key: first.key, sha256: first.sha256 }],
      hour: v1.hour,
    });
    clock.set(closeThrough);
    await journal.close();

    const clean = await verify(prefix, { trustedKeys });
    expect(clean.findings).toEqual([]);
    expect(clean.manifests).toBe(5); // hour 0 (version 1), hours 1-4 (version 2)
    expect(clean.objects).toBe(2); // the landing object and the compacted file, each hashed
    expect(clean.entries).toBe(first.entries); // a compacted file's rows are not counted again

    // The caller's deeper check (verify's rows rebuild) gets the listed file, whole, and its
    // findings are reported with the manifest that listed the file.
    const checked: string[] = [];
    const withRows = await verify(prefix, {
      trustedKeys,
      checkCompacted: async (file) => {
        checked.push(`${file.key} ${file.sources.map((s) => s.key).join(",")} ${file.hour}`);
        return [{ kind: "altered", key: file.key, reason: "rows differ (from the test's check)" }];
      },
    });
    expect(checked).toEqual([`${parquetKey} ${first.key} ${v1.hour}`]);
    expect(withRows.findings).toEqual([
      expect.objectContaining({
        kind: "altered",
        key: parquetKey,
        manifest: expect.stringMatching(/_manifests\//),
        reason: "rows differ (from the test's check)",
      }),
    ]);
    expect(withRows.ok).toBe(false);

    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: parquetKey, Body: Buffer.from("PAR1 other PAR1") }),
    );
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([
      expect.objectContaining({ kind: "altered", key: parquetKey }),
    ]);
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: parquetKey }));
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([
      expect.objectContaining({ kind: "missing", key: parquetKey }),
    ]);
  });

  it("takes either file while a compacted file's rebuild is announced (announceCompaction), only the new one once it is listed", async () => {
    const client = minio.client();
    const prefix = `pg/archive-${++n}`;
    const { key } = await loadOrCreateSigningKey(join(stateDir(), "manifest-key.pem"));
    const trustedKeys = new Map([[key.keyId, key.publicKey]]);
    const clock = manualClock(base + 10 * 60_000);
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: clock.now,
      signingKey: key,
    });
    const landing = await putDataObject(client, BUCKET, {
      prefix,
      entryTs: new Date(base).toISOString(),
      sourceId: "f1",
      start: 0,
      end: 10,
      lines: 2,
      uploadedAt: base + 60_000,
    });
    await journal.record(landing);
    const hour = new Date(base).toISOString().slice(0, 13);
    const parquetKey = `${prefix}/parquet/dt=${hour.slice(0, 10)}/hour=${hour.slice(11)}/host=${HOST}/part-0.parquet`;
    const file = (body: Buffer) => ({
      key: parquetKey,
      sha256: createHash("sha256").update(body).digest("hex"),
      size: body.length,
      rows: 2,
      sources: [{ key: landing.key, sha256: landing.sha256 }],
      hour,
    });
    const store = (body: Buffer) =>
      client.send(new PutObjectCommand({ Bucket: BUCKET, Key: parquetKey, Body: body }));
    const old = Buffer.from("PAR1 first compaction PAR1");
    const rebuilt = Buffer.from("PAR1 the hour compacted anew PAR1");
    await store(old);
    await journal.recordCompaction(file(old));
    clock.set(base + HOUR + 10 * 60_000);
    await journal.closeDue();

    // Announced: signed into a manifest at once, before the store holds the new file.
    clock.set(base + 2 * HOUR + 10 * 60_000);
    await expect(journal.announceCompaction({ ...file(rebuilt), supersedes: "no" })).rejects.toThrow(
      TypeError,
    );
    await journal.announceCompaction({ ...file(rebuilt), supersedes: file(old).sha256 });
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([]);
    await store(rebuilt);
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([]);
    await store(Buffer.from("PAR1 neither PAR1"));
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([
      expect.objectContaining({ kind: "altered", key: parquetKey }),
    ]);

    // The new file's own listing ends the announcement: the old bytes put back are altered.
    await store(rebuilt);
    await journal.recordCompaction(file(rebuilt));
    clock.set(closeThrough);
    await journal.close();
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([]);
    await store(old);
    expect((await verify(prefix, { trustedKeys })).findings).toEqual([
      expect.objectContaining({ kind: "altered", key: parquetKey }),
    ]);
  });
});

/**
 * An archive whose landing objects were compacted: two landing objects of hour 0, a compacted file
 * recorded in hour 1 and again (the hour compacted anew, other bytes, the same key) in hour 3 with
 * a third object; the bucket holds the second file. `forged`: an object under the host's keys
 * that no manifest lists is among the second compaction's sources.
 */
async function compactedArchive(options: { forged?: boolean } = {}): Promise<{
  prefix: string;
  landing: Awaited<ReturnType<typeof putDataObject>>[];
  parquetKey: string;
  first: Buffer;
  second: Buffer;
  forged?: string;
}> {
  const client = minio.client();
  const prefix = `pg/archive-${++n}`;
  const clock = manualClock(base + 10 * 60_000);
  const journal = await ManifestJournal.open({
    client,
    bucket: BUCKET,
    prefix,
    host: HOST,
    stateDir: stateDir(),
    now: clock.now,
  });
  const entryTs = new Date(base - 2 * HOUR).toISOString();
  const put = (sourceId: string, start: number, uploadedAt: number) =>
    putDataObject(client, BUCKET, {
      prefix,
      entryTs,
      sourceId,
      start,
      end: start + 100,
      lines: 2,
      uploadedAt,
    });
  const landing = [await put("f1", 0, base + 10 * 60_000), await put("f1", 100, base + 20 * 60_000)];
  for (const o of landing) await journal.record(o as (typeof landing)[number]);
  const dt = entryTs.slice(0, 10);
  const hour = entryTs.slice(0, 13);
  const parquetKey = `${prefix}/parquet/dt=${dt}/hour=${hour.slice(11)}/host=${HOST}/part-0.parquet`;
  const record = async (body: Buffer, sources: { key: string; sha256: string }[]): Promise<void> => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: parquetKey, Body: body }));
    await journal.recordCompaction({
      key: parquetKey,
      sha256: createHash("sha256").update(body).digest("hex"),
      size: body.length,
      rows: 2 * sources.length,
      sources,
      hour,
    });
  };
  const first = Buffer.from("PAR1 first compaction PAR1");
  clock.set(base + HOUR + 20 * 60_000);
  await record(first, landing);
  clock.set(base + 3 * HOUR + 10 * 60_000);
  const late = await put("f1", 200, base + 3 * HOUR + 10 * 60_000);
  await journal.record(late);
  landing.push(late);
  let forged: string | undefined;
  const sources = landing.map((o) => ({ key: o.key, sha256: o.sha256 }));
  if (options.forged) {
    const o = await put("forged", 0, Date.now());
    forged = o.key;
    sources.push({ key: o.key, sha256: o.sha256 });
  }
  const second = Buffer.from("PAR1 second compaction PAR1");
  await record(second, sources);
  clock.set(closeThrough);
  await journal.close();
  return { prefix, landing, parquetKey, first, second, ...(forged ? { forged } : {}) };
}

describe("verifyArchive: compacted files", () => {
  const del = (key: string) => minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
  const put = (key: string, body: Buffer) =>
    minio.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const described = (r: VerifyReport): string[] => r.findings.map((f) => `${f.kind} ${f.key}`);

  it("checks a file compacted anew against its newest listing: the earlier bytes put back are altered", async () => {
    const { prefix, parquetKey, first } = await compactedArchive();
    const clean = await verify(prefix);
    expect(clean.findings).toEqual([]);
    expect(clean.dropped).toEqual([]);
    await put(parquetKey, first);
    expect(described(await verify(prefix))).toEqual([`altered ${parquetKey}`]);
  });

  it("takes landing objects dropped after compaction for retention while the file that names them is intact; both gone are missing", async () => {
    const { prefix, landing, parquetKey, second } = await compactedArchive();
    for (const o of landing) await del(o.key);
    const dropped = await verify(prefix);
    expect(dropped.findings).toEqual([]);
    expect(dropped.ok).toBe(true);
    expect(dropped.dropped).toEqual(
      landing
        .map((o) => ({ key: o.key, into: parquetKey, manifest: expect.stringMatching(/_manifests\//) }))
        .sort((a, b) => a.key.localeCompare(b.key)),
    );
    expect(dropped.entries).toBe(6); // their entries still count: the file holds them

    await put(parquetKey, Buffer.from("PAR1 forged rows PAR1"));
    const altered = await verify(prefix);
    expect(described(altered)).toEqual([
      `altered ${parquetKey}`,
      ...landing.map((o) => `missing ${o.key}`).sort(),
    ]);
    expect(altered.dropped).toEqual([]);

    await del(parquetKey);
    expect(described(await verify(prefix))).toEqual(
      [parquetKey, ...landing.map((o) => o.key)].sort().map((k) => `missing ${k}`),
    );
    await put(parquetKey, second);
    expect((await verify(prefix)).findings).toEqual([]);
  });

  it("reports a compacted source no manifest lists as shipped as extra, even once it is dropped", async () => {
    const { prefix, forged } = await compactedArchive({ forged: true });
    const present = await verify(prefix);
    expect(described(present)).toEqual([`extra ${forged}`]);
    await del(forged ?? "");
    const gone = await verify(prefix);
    expect(described(gone)).toEqual([`extra ${forged}`]);
    expect(gone.findings[0]?.reason).toMatch(
      /^a source of the compacted file .*no manifest lists it as shipped/,
    );
  });
});
