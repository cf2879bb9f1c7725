import { createHash } from "node:crypto";
import type { PutObjectCommandInput, S3Client } from "@aws-sdk/client-s3";
import { s3Sdk } from "../../_aws-sdk.ts";
import type { SpoolEntryMeta } from "../../_spool.ts";
import { MULTIPART_PART_BYTES, MULTIPART_QUEUE_SIZE, type ResolvedS3SinkOptions } from "./config.ts";

/** The NDJSON media type (the body's type once Content-Encoding is undone). */
const CONTENT_TYPE = "application/x-ndjson";
/** User metadata key holding the body's SHA-256 (hex): multipart objects have no whole-object SHA-256 checksum. */
export const SHA256_METADATA = "sha256";
/** An attempt may take this long per MiB of body on top of the request timeout (1 MiB/s floor). */
const MS_PER_MIB = 1_000;

/** How long one upload attempt may take before it is aborted and retried. */
export function attemptDeadlineMs(o: ResolvedS3SinkOptions, size: number): number {
  return o.timeouts.connectMs + o.timeouts.requestMs + Math.ceil(size / (1 << 20)) * MS_PER_MIB;
}

function lockParams(o: ResolvedS3SinkOptions, now: Date): Partial<PutObjectCommandInput> {
  if (!o.objectLock) return {};
  return {
    ObjectLockMode: o.objectLock.mode,
    ObjectLockRetainUntilDate: new Date(now.getTime() + o.objectLock.days * 86_400_000),
  };
}

/**
 * Uploads one body. Up to the multipart threshold: one PutObject with Content-MD5 and
 * x-amz-checksum-sha256 (precomputed, so the SDK computes nothing and the store verifies both).
 * Above it: lib-storage's multipart Upload, each part with a SHA-256 checksum the SDK computes.
 * Resolves to the version the store gave the object (versioned buckets), else undefined.
 */
export async function putObject(
  client: S3Client,
  o: ResolvedS3SinkOptions,
  meta: SpoolEntryMeta,
  body: Buffer,
  signal: AbortSignal,
): Promise<string | undefined> {
  const common = {
    Bucket: o.bucket,
    Key: meta.key,
    ContentType: CONTENT_TYPE,
    ContentEncoding: meta.contentEncoding,
    Metadata: { [SHA256_METADATA]: meta.sha256 },
    ...lockParams(o, new Date()),
  };
  if (body.length <= o.multipartThresholdBytes) {
    const { PutObjectCommand } = await s3Sdk();
    const out = await client.send(
      new PutObjectCommand({
        ...common,
        Body: body,
        ContentLength: body.length,
        ContentMD5: createHash("md5").update(body).digest("base64"),
        ChecksumAlgorithm: "SHA256",
        ChecksumSHA256: Buffer.from(meta.sha256, "hex").toString("base64"),
      }),
      { abortSignal: signal },
    );
    return versionOf(out.VersionId);
  }
  const { Upload } = await import("@aws-sdk/lib-storage");
  const upload = new Upload({
    client,
    params: { ...common, Body: body, ChecksumAlgorithm: "SHA256" },
    partSize: MULTIPART_PART_BYTES,
    queueSize: MULTIPART_QUEUE_SIZE,
    leavePartsOnError: false, // aborts the multipart upload, so no orphan parts are billed
  });
  const abort = (): void => void upload.abort().catch(() => undefined);
  signal.addEventListener("abort", abort, { once: true });
  try {
    return versionOf((await upload.done()).VersionId);
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

/** An unversioned bucket answers no version, or the literal "null". */
function versionOf(id: string | undefined): string | undefined {
  return id === undefined || id === "null" ? undefined : id;
}

/**
 * Whether the key already holds this exact body (its SHA-256 metadata matches): then the version
 * holding it (or null on an unversioned bucket), else false. Used with Object Lock, where the
 * bucket is versioned: writing the key again would keep a second, locked copy.
 */
export async function storedWithSha(
  client: S3Client,
  o: ResolvedS3SinkOptions,
  key: string,
  sha256: string,
  signal: AbortSignal,
): Promise<{ versionId: string | undefined } | false> {
  const { HeadObjectCommand } = await s3Sdk();
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: key }), {
      abortSignal: signal,
    });
    return head.Metadata?.[SHA256_METADATA] === sha256 ? { versionId: versionOf(head.VersionId) } : false;
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    // 404: not stored yet. 403: a write-only role without s3:GetObject; upload as if not stored.
    if (status === 404 || status === 403) return false;
    throw error;
  }
}
