import { createHash } from "node:crypto";
import type { GetObjectCommandOutput, S3Client } from "@aws-sdk/client-s3";
import { s3Sdk } from "../_aws-sdk.ts";

/** A manifest is read whole; anything larger than this is not one of ours. */
export const MAX_MANIFEST_BYTES: number = 64 * 1024 * 1024;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function status(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** The object does not exist (GET/HEAD). */
export function isNotFound(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name;
  return name === "NoSuchKey" || name === "NotFound" || status(error) === 404;
}

/** A conditional write lost: the key exists already (`If-None-Match: *`). */
export function isPreconditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "PreconditionFailed" || status(error) === 412;
}

/**
 * Stores `body` only if the key does not exist yet (`If-None-Match: *`, honoured by S3 and MinIO
 * since 2024), with its SHA-256 in `x-amz-checksum-sha256` so the store rejects a body damaged on
 * the way. Resolves true when written, false when the key was already there.
 */
export async function putIfAbsent(
  client: S3Client,
  bucket: string,
  key: string,
  body: Uint8Array,
): Promise<boolean> {
  const { PutObjectCommand } = await s3Sdk();
  try {
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: body,
        ContentType: "application/json",
        ContentLength: body.byteLength,
        ChecksumSHA256: Buffer.from(createHash("sha256").update(body).digest()).toString("base64"),
        IfNoneMatch: "*",
      }),
    );
    return true;
  } catch (error) {
    if (isPreconditionFailed(error)) return false;
    throw error;
  }
}

/** The whole body of a small object (a manifest), or null when it does not exist. */
export async function getBytes(client: S3Client, bucket: string, key: string): Promise<Uint8Array | null> {
  const { GetObjectCommand } = await s3Sdk();
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    if ((out.ContentLength ?? 0) > MAX_MANIFEST_BYTES)
      throw new Error(`${key}: ${out.ContentLength} bytes, more than a manifest can be`);
    if (!out.Body) return new Uint8Array();
    return await out.Body.transformToByteArray();
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** SHA-256 and size of an object, read as a stream (memory stays flat), or null when it is gone. */
export async function hashObject(
  client: S3Client,
  bucket: string,
  key: string,
  versionId?: string,
): Promise<{
  sha256: string;
  size: number;
  lastModified: Date | undefined;
  /** The version read (the latest, unless one was asked for); undefined on an unversioned bucket. */
  versionId: string | undefined;
} | null> {
  const { GetObjectCommand } = await s3Sdk();
  let out: GetObjectCommandOutput;
  try {
    out = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, ...(versionId ? { VersionId: versionId } : {}) }),
    );
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
  const hash = createHash("sha256");
  let size = 0;
  const body = out.Body as AsyncIterable<Uint8Array> | undefined;
  if (body) {
    for await (const chunk of body) {
      hash.update(chunk);
      size += chunk.byteLength;
    }
  }
  return {
    sha256: hash.digest("hex"),
    size,
    lastModified: out.LastModified,
    versionId: out.VersionId === "null" ? undefined : out.VersionId,
  };
}

export interface ListedObject {
  key: string;
  size: number;
  lastModified: Date;
  /** Changes whenever the object is written with other bytes. */
  etag: string;
}

/** Every object under `prefix` (all pages), in key order. */
export async function listObjects(client: S3Client, bucket: string, prefix: string): Promise<ListedObject[]> {
  const { ListObjectsV2Command } = await s3Sdk();
  const objects: ListedObject[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        ...(prefix === "" ? {} : { Prefix: prefix }),
        ...(token === undefined ? {} : { ContinuationToken: token }),
      }),
    );
    for (const o of page.Contents ?? []) {
      if (o.Key === undefined) continue;
      objects.push({
        key: o.Key,
        size: o.Size ?? 0,
        lastModified: o.LastModified ?? new Date(0),
        etag: o.ETag ?? "",
      });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return objects;
}
