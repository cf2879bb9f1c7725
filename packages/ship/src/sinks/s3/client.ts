/**
 * The one S3 client factory of auditpipe, with the one region rule: the sink, the manifest
 * journal and `verify` all build their client here, so they agree on where the archive is.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { s3Sdk } from "../../_aws-sdk.ts";

/** A TCP connect to the store that takes longer than this fails the attempt. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Socket inactivity during a request longer than this fails the attempt (a hung store). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Where the archive's bucket is and how to reach it. Credentials are never an option. */
export interface S3ClientOptions {
  /** Region; default by {@link resolveS3Region}. */
  region?: string | undefined;
  /** A custom endpoint (MinIO, Ceph, R2, GCS interop). */
  endpoint?: string | undefined;
  /** Path-style URLs (`endpoint/bucket/key`), which MinIO and most self-hosted stores need. */
  forcePathStyle?: boolean | undefined;
  /** TCP connect timeout; default 5 s. */
  connectTimeoutMs?: number | undefined;
  /** Socket inactivity timeout during a request; default 30 s. */
  requestTimeoutMs?: number | undefined;
  /**
   * Attempts per request: 1 where the caller retries with its own backoff (the sink: one policy,
   * one place, and its health sees every failure); default the SDK's own (3).
   */
  maxAttempts?: number | undefined;
}

/**
 * The region rule: the one given, else `AWS_REGION`, else `AWS_DEFAULT_REGION` (what the AWS CLI
 * reads), else `us-east-1` with a custom endpoint (MinIO's default; a custom store rarely cares),
 * else undefined: the SDK's own chain (a profile's `region`).
 */
export function resolveS3Region(
  region: string | undefined,
  endpoint: string | undefined,
): string | undefined {
  return (
    region ||
    process.env.AWS_REGION ||
    process.env.AWS_DEFAULT_REGION ||
    (endpoint !== undefined ? "us-east-1" : undefined)
  );
}

/**
 * An S3 client: credentials from the SDK's default chain (no option takes a secret), timeouts on
 * connect and socket inactivity so a hung store fails an attempt, and checksums only where we set
 * them: the SDK's default CRC32 "flexible checksums" (WHEN_SUPPORTED) send headers that several
 * S3-compatible stores reject, and we send our own SHA-256 on every PUT anyway (and MD5 with Object Lock).
 */
export async function createS3Client(o: S3ClientOptions): Promise<S3Client> {
  const { S3Client } = await s3Sdk();
  const region = resolveS3Region(o.region, o.endpoint);
  return new S3Client({
    ...(region ? { region } : {}),
    ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    forcePathStyle: o.forcePathStyle ?? false,
    ...(o.maxAttempts === undefined ? {} : { maxAttempts: o.maxAttempts }),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: {
      connectionTimeout: o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      requestTimeout: o.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      // Without it, smithy only warns when a request is past requestTimeout and keeps waiting.
      throwOnRequestTimeout: true,
    },
  });
}
