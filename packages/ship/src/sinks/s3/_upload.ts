import { createHash } from "node:crypto";
import type { PutObjectCommandInput, S3Client } from "@aws-sdk/client-s3";
import { s3Sdk } from "../../_aws-sdk.ts";
import type { SpoolEntryMeta } from "../../_spool.ts";
import { isPreconditionFailed } from "../../manifest/_s3.ts";
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

/** The key holds an object already: a conditional PUT (`If-None-Match: *`) did not write. */
export const KEY_EXISTS = "exists";

/**
 * Uploads one body. Up to the multipart threshold: one PutObject with x-amz-checksum-sha256 and
 * the signed payload's SHA-256 (precomputed, so the SDK computes nothing and the store verifies
 * it), Content-MD5 too with an Object Lock retention (the header stores have long required for
 * one; S3 takes x-amz-sdk-checksum-algorithm instead, which every PUT sends), and with `ifAbsent`
 * only if the key holds nothing yet (`If-None-Match: *`, honoured by S3 and
 * MinIO): then KEY_EXISTS when it does. Above the threshold: lib-storage's multipart Upload, each
 * part with a SHA-256 checksum the SDK computes, never conditional (the caller looks first).
 * Resolves to the version the store gave the object (versioned buckets), else undefined.
 */
export async function putObject(
  client: S3Client,
  o: ResolvedS3SinkOptions,
  meta: SpoolEntryMeta,
  body: Buffer,
  signal: AbortSignal,
  ifAbsent = false,
): Promise<{ versionId: string | undefined } | typeof KEY_EXISTS> {
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
    const command = new PutObjectCommand({
      ...common,
      Body: body,
      ContentLength: body.length,
      // MD5 of every body was ~0.5 ms of the main thread a 20,000-entry batch.
      ...(o.objectLock ? { ContentMD5: createHash("md5").update(body).digest("base64") } : {}),
      ChecksumAlgorithm: "SHA256",
      ChecksumSHA256: Buffer.from(meta.sha256, "hex").toString("base64"),
      ...(ifAbsent ? { IfNoneMatch: "*" } : {}),
    });
    command.middlewareStack.add(payloadSha256(meta.sha256), PAYLOAD_SHA256_STEP);
    try {
      const out = await client.send(command, { abortSignal: signal });
      return { versionId: versionOf(out.VersionId) };
    } catch (error) {
      if (ifAbsent && isPreconditionFailed(error)) return KEY_EXISTS;
      throw error;
    }
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
    return { versionId: versionOf((await upload.done()).VersionId) };
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

/** SigV4's header for the SHA-256 (hex) of the payload it signs. */
const CONTENT_SHA256_HEADER = "x-amz-content-sha256";
const PAYLOAD_SHA256_STEP = { step: "build", name: "auditpipePayloadSha256" } as const;

/**
 * Gives SigV4 the body's SHA-256 the spool already holds: the signer takes a request's
 * x-amz-content-sha256 as is, and otherwise hashed the whole body again on the main thread
 * for every PUT (~0.5 ms a 10,000-entry batch).
 */
function payloadSha256(sha256: string) {
  return <A extends { request: unknown }, R>(next: (args: A) => Promise<R>) =>
    (args: A): Promise<R> => {
      const headers = (args.request as { headers?: Record<string, string> }).headers;
      if (headers) headers[CONTENT_SHA256_HEADER] = sha256;
      return next(args);
    };
}

/** An unversioned bucket answers no version, or the literal "null". */
function versionOf(id: string | undefined): string | undefined {
  return id === undefined || id === "null" ? undefined : id;
}

/**
 * What the key holds now: the SHA-256 its metadata names (undefined for an object this sink did
 * not write) and its version, or null when it holds nothing, or when the role may not read it
 * (403: a write-only role without s3:GetObject uploads as if nothing were there).
 */
export async function storedObject(
  client: S3Client,
  o: ResolvedS3SinkOptions,
  key: string,
  signal: AbortSignal,
): Promise<{ sha256: string | undefined; versionId: string | undefined } | null> {
  const { HeadObjectCommand } = await s3Sdk();
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: key }), {
      abortSignal: signal,
    });
    return { sha256: head.Metadata?.[SHA256_METADATA], versionId: versionOf(head.VersionId) };
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404 || status === 403) return null;
    throw error;
  }
}
