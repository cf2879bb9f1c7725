import { type Manifest, type VerifyReport, verifyArchive } from "@auditpipe/ship";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildArchive, getText, HOST, HOUR, putDataObject, sha256 } from "./_manifest.ts";

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
  });

  it("reports an archive without manifests, and an unknown host, as unverifiable", async () => {
    const report = await verify("pg/nothing-here");
    expect(report.findings).toEqual([
      expect.objectContaining({ kind: "gap", reason: expect.stringContaining("no manifest") }),
    ]);
    const { prefix } = await archive();
    const other = await verify(prefix, { host: "db-2" });
    expect(other.findings).toEqual([
      expect.objectContaining({ kind: "gap", key: `${prefix}/_manifests/db-2/` }),
    ]);
  });
});
