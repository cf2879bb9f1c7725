/**
 * What a sink stored, read back without our own code (node:zlib, the AWS SDK, JSON.parse): the
 * local-dir sink's objects on disk and the S3 sink's objects in a bucket, as shipped records.
 * An object holds entry lines (`"record":"entry"`), the outcome lines of entries shipped
 * `pending` before, and attempts: the `*Records` oracles give the entries, `*Lines` every line.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, zstdDecompressSync } from "node:zlib";
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";

/** The fields the oracles key records by; the rest of a shipped record comes along untyped. */
export interface ShippedKeyFields {
  session_id: string;
  session_line: number;
}

/** A data object's lines: NDJSON, gzip or zstd by the key's extension. */
function objectLines<T>(body: Buffer, key: string): T[] {
  const text = (key.endsWith(".zst") ? zstdDecompressSync(body) : gunzipSync(body)).toString("utf8");
  const records: T[] = [];
  for (const line of text.split("\n")) if (line) records.push(JSON.parse(line) as T);
  return records;
}

const isEntry = (line: unknown): boolean => (line as { record?: unknown }).record === "entry";

/**
 * Every shipped record under a local-dir sink, object by object (duplicates kept). Types come from
 * the directory listing, not a stat per name: a running sink renames its temp files away between
 * the two, and a stat of one that just went fails the poll (seen in CI).
 */
export function shippedRecords<T = ShippedKeyFields>(dir: string): T[] {
  return shippedLines<T>(dir).filter(isEntry);
}

/** Every line under a local-dir sink (entries, outcome lines, attempts), object by object. */
export function shippedLines<T = ShippedKeyFields>(dir: string): T[] {
  const records: T[] = [];
  if (!existsSync(dir)) return records;
  const walk = (d: string): void => {
    for (const dirent of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, dirent.name);
      if (dirent.isDirectory()) walk(path);
      else if (/\.ndjson\.(gz|zst)$/.test(dirent.name))
        records.push(...objectLines<T>(readFileSync(path), dirent.name));
    }
  };
  walk(dir);
  return records;
}

/** Every shipped record under a local-dir sink, as `session_id:session_line` keys (duplicates kept). */
export function shippedKeys(dir: string): string[] {
  return shippedRecords(dir).map((r) => `${r.session_id}:${r.session_line}`);
}

/** Every object in a bucket: key → stored bytes. */
export async function bucketContents(
  client: S3Client,
  bucket: string,
  prefix = "",
): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) {
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key! }));
      out.set(o.Key!, Buffer.from(await got.Body!.transformToByteArray()));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** Every shipped record in a bucket's data objects (manifests and other objects left out), duplicates kept. */
export async function s3Records<T = ShippedKeyFields>(
  client: S3Client,
  bucket: string,
  prefix = "",
): Promise<{ records: T[]; objects: number }> {
  const { records, objects } = await s3Lines<T>(client, bucket, prefix);
  return { records: records.filter(isEntry), objects };
}

/** Every line in a bucket's data objects (entries, outcome lines, attempts), duplicates kept. */
export async function s3Lines<T = ShippedKeyFields>(
  client: S3Client,
  bucket: string,
  prefix = "",
): Promise<{ records: T[]; objects: number }> {
  const records: T[] = [];
  let objects = 0;
  for (const [key, body] of await bucketContents(client, bucket, prefix)) {
    if (key.includes("/_manifests/") || !/\.ndjson\.(gz|zst)$/.test(key)) continue;
    objects++;
    records.push(...objectLines<T>(body, key));
  }
  return { records, objects };
}

/** Every shipped record in a bucket's data objects as `session_id:session_line` keys, and the object count. */
export async function s3Keys(
  client: S3Client,
  bucket: string,
  prefix = "",
): Promise<{ keys: string[]; objects: number }> {
  const { records, objects } = await s3Records(client, bucket, prefix);
  return { keys: records.map((r) => `${r.session_id}:${r.session_line}`), objects };
}

/** The keys that occur more than once (each repeat listed). */
export function duplicates(keys: string[]): string[] {
  const seen = new Set<string>();
  const repeats: string[] = [];
  for (const k of keys) {
    if (seen.has(k)) repeats.push(k);
    seen.add(k);
  }
  return repeats;
}
