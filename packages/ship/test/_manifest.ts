import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ManifestJournal, type UploadedObject } from "@auditpipe/ship";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";

export const HOUR = 3_600_000;
export const HOST = "db-1";

/** A clock the test moves by hand. */
export function manualClock(start: number): { now: () => Date; set: (ms: number) => void } {
  let t = start;
  return { now: () => new Date(t), set: (ms) => (t = ms) };
}

export function stateDir(): string {
  return mkdtempSync(join(tmpdir(), "auditpipe-manifest-"));
}

const pad = (n: number): string => String(n).padStart(16, "0");

/**
 * Uploads a gzip NDJSON object under the sink's key layout, as the S3 sink would, and returns
 * what the sink would report to onUploaded.
 */
export async function putDataObject(
  client: S3Client,
  bucket: string,
  o: {
    prefix: string;
    entryTs: string;
    sourceId: string;
    start: number;
    end: number;
    lines: number;
    uploadedAt: number;
    salt?: string;
  },
): Promise<UploadedObject> {
  const lines = Array.from({ length: o.lines }, (_, i) =>
    JSON.stringify({ ts: o.entryTs, statement_id: i + 1, statement: `SELECT ${i}`, salt: o.salt ?? "" }),
  );
  const body = gzipSync(`${lines.join("\n")}\n`);
  const key = `${o.prefix}/dt=${o.entryTs.slice(0, 10)}/hour=${o.entryTs.slice(11, 13)}/${HOST}/${o.sourceId}-${pad(o.start)}-${pad(o.end)}.ndjson.gz`;
  await client.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: body,
      ContentEncoding: "gzip",
      ContentType: "application/x-ndjson",
    }),
  );
  return {
    key,
    sha256: createHash("sha256").update(body).digest("hex"),
    size: body.length,
    entries: o.lines,
    range: {
      sourceId: o.sourceId,
      sourceName: `/var/log/postgresql/${o.sourceId}.csv`,
      start: o.start,
      end: o.end,
    },
    contentEncoding: "gzip",
    uploadedAt: new Date(o.uploadedAt).toISOString(),
  };
}

export async function getText(client: S3Client, bucket: string, key: string): Promise<string> {
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await out.Body?.transformToString()) ?? "";
}

export async function listKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key ?? "");
}

export const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * A small archive as the sidecar leaves it: four closed hours starting at `base` (the third
 * without uploads), a replay of one key with the same bytes and a rewrite of another with new
 * bytes, then the clock moved on so the hours up to the current real one are closed too (the
 * store stamps objects with the real time; the chain must cover it for "extra" to apply).
 */
export async function buildArchive(
  client: S3Client,
  bucket: string,
  prefix: string,
  options: { base: number; closeThrough?: number },
): Promise<{ objects: UploadedObject[]; manifests: string[] }> {
  const { base } = options;
  const clock = manualClock(base);
  const journal = await ManifestJournal.open({
    client,
    bucket,
    prefix,
    host: HOST,
    stateDir: stateDir(),
    now: clock.now,
  });
  const entryTs = new Date(base - 2 * HOUR).toISOString();
  const put = (
    sourceId: string,
    start: number,
    end: number,
    uploadedAt: number,
    salt?: string,
  ): Promise<UploadedObject> =>
    putDataObject(client, bucket, { prefix, entryTs, sourceId, start, end, lines: 3, uploadedAt, salt });
  const a = await put("f1", 0, 1000, base + 10 * 60_000);
  const b = await put("f1", 1000, 2000, base + 50 * 60_000);
  const e1 = await put("f2", 0, 500, base + 55 * 60_000);
  for (const o of [a, b, e1]) await journal.record(o);
  const c = await put("f1", 2000, 3000, base + HOUR + 30 * 60_000);
  const e2 = await put("f2", 0, 500, base + HOUR + 40 * 60_000, "recompressed"); // same key, new bytes
  for (const o of [c, e2]) await journal.record(o);
  const d = await put("f1", 3000, 4000, base + 3 * HOUR + 5 * 60_000);
  const replay = await put("f1", 0, 1000, base + 3 * HOUR + 6 * 60_000); // same key, same bytes
  for (const o of [d, replay]) await journal.record(o);
  clock.set(options.closeThrough ?? base + 4 * HOUR + 6 * 60_000);
  await journal.close();
  return {
    objects: [a, b, e1, c, e2, d, replay],
    manifests: await listKeys(client, bucket, `${prefix}/_manifests/`),
  };
}
