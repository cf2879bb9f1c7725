import { hostname } from "node:os";
import { type Compression, DEFAULT_COMPRESSION } from "../../compression.ts";
import { SinkError, SinkErrorCode } from "../../errors.ts";
import type { SourceRange } from "../../types.ts";
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, resolveS3Region } from "./client.ts";

export const S3_SINK_NAME = "s3";

/** 1 GiB: room for hours of moderate load while the store is down, on a small volume. */
export const DEFAULT_SPOOL_MAX_BYTES: number = 1 << 30;
/** Bodies above this go up as a multipart upload (lib-storage), in parts of MULTIPART_PART_BYTES. */
export const DEFAULT_MULTIPART_THRESHOLD: number = 16 << 20;
/** S3 refuses parts under 5 MiB (except the last). */
export const MIN_PART_BYTES: number = 5 << 20;
/** Parts of a multipart upload; 8 MiB keeps memory and a retried part small. */
export const MULTIPART_PART_BYTES: number = 8 << 20;
/** Parts uploaded at once in a multipart upload. */
export const MULTIPART_QUEUE_SIZE = 4;
/** S3 keys are at most 1024 bytes; a host name segment has no reason to be long. */
const MAX_HOST_LENGTH = 63;

/** Object Lock applied to every object (the bucket must have been created with Object Lock). */
export interface ObjectLockOptions {
  /** GOVERNANCE: privileged users may shorten it; COMPLIANCE: nobody can, not even root. */
  mode: "GOVERNANCE" | "COMPLIANCE";
  /** Retention in days from the upload. */
  days: number;
}

/** What onUploaded is told once the store acknowledged an object. */
export interface UploadedObject {
  /** The object key, prefix included. */
  key: string;
  /** SHA-256 (hex) of the stored body, the compressed bytes. */
  sha256: string;
  /** Stored bytes. */
  size: number;
  /** Shipped records (NDJSON lines) in the object. */
  entries: number;
  /** The source range the object holds. */
  range: SourceRange;
  contentEncoding: Compression;
  /** When the store acknowledged it (ISO 8601). */
  uploadedAt: string;
  /** The version the store gave it, on a versioned bucket (Object Lock); absent otherwise. */
  versionId?: string;
  /**
   * Only on a rewrite's announcement (`onRewrite`): the SHA-256 of the bytes the key holds, which
   * this upload is about to replace. Never on what `onUploaded` reports.
   */
  supersedes?: string;
}

/**
 * A rewrite about to happen: the key holds other bytes this sink wrote (`supersedes`), and the
 * object (`sha256`) is about to replace them; `uploadedAt` is when this was found.
 */
export type RewrittenObject = UploadedObject & { supersedes: string };

/** The small logger interface the sink needs (pino fits). Never given a secret or record text. */
export interface SinkLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Retry timing; the defaults suit production, tests shorten them. */
export interface S3RetryOptions {
  /** First backoff; doubles per attempt, with jitter. Default 200 ms. */
  baseDelayMs?: number;
  /** Backoff cap. Default 30 s. */
  maxDelayMs?: number;
  /** write() rejects with AUDITPIPE_ERR_SINK_UNREACHABLE after retrying this long (the batch stays spooled and is uploaded in the background). Default 60 s. */
  writeBudgetMs?: number;
}

/** Client timeouts, so a hung store (SIGSTOP, a black-holed network) fails an attempt instead of hanging it. */
export interface S3TimeoutOptions {
  /** TCP connect. Default 5 s. */
  connectMs?: number;
  /** Socket inactivity during a request. Default 30 s. */
  requestMs?: number;
}

/**
 * S3Sink options. Credentials are not an option: they come from the AWS SDK's default chain
 * (environment, shared config/credentials files, web identity/IRSA, container and instance metadata).
 */
export interface S3SinkOptions {
  /** Bucket name. Required. */
  bucket: string;
  /** Key prefix (no leading or trailing `/` needed); objects go under `<prefix>/dt=.../`. */
  prefix?: string;
  /** Region; default AWS_REGION, AWS_DEFAULT_REGION, `us-east-1` with a custom endpoint, else the SDK's chain (resolveS3Region). */
  region?: string;
  /** A custom endpoint (MinIO, Ceph, R2, GCS interop), e.g. `http://127.0.0.1:9000`. */
  endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`), which MinIO and most self-hosted stores need. */
  forcePathStyle?: boolean;
  /** The host segment of keys; default os.hostname(). Sanitised for a key. */
  host?: string;
  /** Body compression; default DEFAULT_COMPRESSION (zstd). */
  compression?: Compression;
  /** Directory of the durable spool. Required. */
  spoolDir: string;
  /** The spool holds at most this many bytes; then write() waits. Default 1 GiB. */
  spoolMaxBytes?: number;
  /** Object Lock retention for every object. */
  objectLock?: ObjectLockOptions;
  /** Bodies above this are uploaded multipart. Default 16 MiB, at least 5 MiB. */
  multipartThresholdBytes?: number;
  /**
   * Called after the store acknowledged an object and before write() resolves (and before the
   * spool file is deleted), so a manifest journal can record it durably first. May be called more
   * than once for a key (a retry after a crash): record by key. A throw fails the write.
   */
  onUploaded?: (object: UploadedObject) => void | Promise<void>;
  /**
   * Called before the sink overwrites a key that holds other bytes it wrote (a replay whose bytes
   * differ: after an upgrade, or an outcome decided later), so an archive can sign the new hash
   * into its chain first and the overwrite is never taken for tampering. A replay with the same
   * bytes is not sent again at all. A throw fails the attempt, which is retried.
   */
  onRewrite?: (object: RewrittenObject) => void | Promise<void>;
  /** Called at once for every failed upload attempt (metrics): write() may still succeed on a retry. */
  onAttemptFailed?: (error: SinkError) => void;
  /**
   * Uploads wait for this (an archive: its chain's signed open record). An attempt waits at most
   * the connect timeout, then fails with AUDITPIPE_ERR_SINK_NOT_OPEN and is retried.
   */
  ready?: () => Promise<void>;
  logger?: SinkLogger;
  retry?: S3RetryOptions;
  timeouts?: S3TimeoutOptions;
}

/** Options with defaults applied, checked. */
export interface ResolvedS3SinkOptions {
  bucket: string;
  prefix: string;
  region: string | undefined;
  endpoint: string | undefined;
  forcePathStyle: boolean;
  host: string;
  compression: Compression;
  spoolDir: string;
  spoolMaxBytes: number;
  objectLock: ObjectLockOptions | undefined;
  multipartThresholdBytes: number;
  retry: Required<S3RetryOptions>;
  timeouts: Required<S3TimeoutOptions>;
}

function configError(message: string): SinkError {
  return new SinkError(SinkErrorCode.CONFIG, `S3Sink: ${message}`);
}

/** A host name as one key segment: letters, digits, `.`, `_`, `-`; never empty. */
export function sanitizeHost(host: string): string {
  const clean = host
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[.-]+/, "")
    .slice(0, MAX_HOST_LENGTH);
  return clean === "" ? "unknown-host" : clean;
}

/** `/a//b/` → `a/b`: keys never start with `/` nor hold an empty segment. */
export function normalizePrefix(prefix: string | undefined): string {
  return (prefix ?? "")
    .split("/")
    .filter((s) => s !== "")
    .join("/");
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw configError(`\`${name}\` must be a positive number (got ${value})`);
  return value;
}

/** Checks options and fills defaults; throws AUDITPIPE_ERR_SINK_CONFIG naming the option. */
export function resolveS3SinkOptions(options: S3SinkOptions): ResolvedS3SinkOptions {
  if (!options || typeof options !== "object") throw configError("options are required");
  if (!options.bucket)
    throw configError("`bucket` is required (the S3 bucket name, as in s3://BUCKET/prefix)");
  if (!options.spoolDir)
    throw configError(
      "`spoolDir` is required (a directory on a persistent volume for batches not yet uploaded)",
    );
  const compression = options.compression ?? DEFAULT_COMPRESSION;
  if (compression !== "gzip" && compression !== "zstd")
    throw configError(`\`compression\` must be "gzip" or "zstd" (got ${JSON.stringify(compression)})`);
  const lock = options.objectLock;
  if (lock) {
    if (lock.mode !== "GOVERNANCE" && lock.mode !== "COMPLIANCE")
      throw configError(
        `\`objectLock.mode\` must be GOVERNANCE or COMPLIANCE (got ${JSON.stringify(lock.mode)})`,
      );
    if (!Number.isInteger(lock.days) || lock.days < 1)
      throw configError(`\`objectLock.days\` must be a whole number of days, at least 1 (got ${lock.days})`);
  }
  const threshold = positive(
    options.multipartThresholdBytes,
    DEFAULT_MULTIPART_THRESHOLD,
    "multipartThresholdBytes",
  );
  if (threshold < MIN_PART_BYTES)
    throw configError(`\`multipartThresholdBytes\` must be at least ${MIN_PART_BYTES} (5 MiB)`);
  if (options.endpoint !== undefined) {
    try {
      new URL(options.endpoint);
    } catch {
      throw configError(
        `\`endpoint\` must be a URL such as http://127.0.0.1:9000 (got ${JSON.stringify(options.endpoint)})`,
      );
    }
  }
  const region = resolveS3Region(options.region, options.endpoint);
  return {
    bucket: options.bucket,
    prefix: normalizePrefix(options.prefix),
    region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle ?? false,
    host: sanitizeHost(options.host ?? hostname()),
    compression,
    spoolDir: options.spoolDir,
    spoolMaxBytes: positive(options.spoolMaxBytes, DEFAULT_SPOOL_MAX_BYTES, "spoolMaxBytes"),
    objectLock: lock ? { mode: lock.mode, days: lock.days } : undefined,
    multipartThresholdBytes: threshold,
    retry: {
      baseDelayMs: positive(options.retry?.baseDelayMs, 200, "retry.baseDelayMs"),
      maxDelayMs: positive(options.retry?.maxDelayMs, 30_000, "retry.maxDelayMs"),
      writeBudgetMs: positive(options.retry?.writeBudgetMs, 60_000, "retry.writeBudgetMs"),
    },
    timeouts: {
      connectMs: positive(options.timeouts?.connectMs, DEFAULT_CONNECT_TIMEOUT_MS, "timeouts.connectMs"),
      requestMs: positive(options.timeouts?.requestMs, DEFAULT_REQUEST_TIMEOUT_MS, "timeouts.requestMs"),
    },
  };
}
