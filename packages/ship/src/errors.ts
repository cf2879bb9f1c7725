/**
 * Stable codes for what a sink could not do. Every code is listed in docs/errors.md ("Sinks").
 * A sink rejects write() with a SinkError; the source keeps the range and writes it again later,
 * so none of these loses data. Messages say what to do and never carry a secret or record text.
 */
export const SinkErrorCode = {
  /** A required option is missing or invalid (thrown by the constructor). */
  CONFIG: "AUDITPIPE_ERR_SINK_CONFIG",
  /** The bucket does not exist (or its name is invalid). */
  NO_BUCKET: "AUDITPIPE_ERR_SINK_NO_BUCKET",
  /** The credentials are valid but not allowed to write there (bucket policy, IAM, KMS). */
  ACCESS_DENIED: "AUDITPIPE_ERR_SINK_ACCESS_DENIED",
  /** No credentials were found, or the store rejected them (unknown key, bad secret, expired token). */
  BAD_CREDENTIALS: "AUDITPIPE_ERR_SINK_BAD_CREDENTIALS",
  /** Object Lock was asked for, but the bucket was not created with Object Lock enabled. */
  NO_OBJECT_LOCK: "AUDITPIPE_ERR_SINK_NO_OBJECT_LOCK",
  /** The store did not answer, or kept failing (network, timeouts, 5xx, throttling) until the retry budget ran out. */
  UNREACHABLE: "AUDITPIPE_ERR_SINK_UNREACHABLE",
  /** The store refused the request for another reason that retrying will not fix. */
  REJECTED: "AUDITPIPE_ERR_SINK_REJECTED",
  /** The spool directory could not be written or read (disk full, permissions). */
  SPOOL: "AUDITPIPE_ERR_SINK_SPOOL",
  /** The `onUploaded` hook threw after the object was stored, or `onRewrite` before a rewrite. */
  HOOK_FAILED: "AUDITPIPE_ERR_SINK_HOOK_FAILED",
  /** The archive's manifest chain is not open yet (its journal cannot be opened): uploads wait. */
  NOT_OPEN: "AUDITPIPE_ERR_SINK_NOT_OPEN",
  /** write() after close(), or a write cut short by close(). */
  CLOSED: "AUDITPIPE_ERR_SINK_CLOSED",
} as const;

export type SinkErrorCode = (typeof SinkErrorCode)[keyof typeof SinkErrorCode];

/**
 * Each code in a few words, with no bucket, endpoint or path: for answers anyone may read (the
 * unauthenticated `/readyz`), where the full message (which names them) must not go.
 */
const SINK_ERROR_REASONS: Record<SinkErrorCode, string> = {
  AUDITPIPE_ERR_SINK_CONFIG: "a sink option is missing or invalid",
  AUDITPIPE_ERR_SINK_NO_BUCKET: "the bucket does not exist",
  AUDITPIPE_ERR_SINK_ACCESS_DENIED: "the credentials may not write there",
  AUDITPIPE_ERR_SINK_BAD_CREDENTIALS: "no credentials, or the store rejected them",
  AUDITPIPE_ERR_SINK_NO_OBJECT_LOCK: "the bucket has no Object Lock",
  AUDITPIPE_ERR_SINK_UNREACHABLE: "the store does not answer or keeps failing",
  AUDITPIPE_ERR_SINK_REJECTED: "the store refused the request",
  AUDITPIPE_ERR_SINK_SPOOL: "the spool directory cannot be written or read",
  AUDITPIPE_ERR_SINK_HOOK_FAILED: "the upload hook failed",
  AUDITPIPE_ERR_SINK_NOT_OPEN: "the manifest chain is not open yet",
  AUDITPIPE_ERR_SINK_CLOSED: "the sink is closed",
};

/** The reason for a sink error code, without locations; an unknown code is returned as is. */
export function sinkErrorReason(code: string): string {
  return (SINK_ERROR_REASONS as Record<string, string>)[code] ?? code;
}

/** What the store said, for logs and support: never request headers, never credentials. */
export interface SinkErrorDetails {
  /** Whether writing again later can succeed without anyone changing anything. */
  retryable?: boolean;
  /** The store's error code (`NoSuchBucket`, `SlowDown`, ...) or the network error code. */
  storeCode?: string;
  httpStatus?: number;
  /** The store's request id, to quote to its support. */
  requestId?: string;
}

/** A sink failure as a value: `code` is stable, `message` is for people. */
export class SinkError extends Error {
  override readonly name: string = "SinkError";
  readonly code: SinkErrorCode;
  readonly retryable: boolean;
  readonly storeCode: string | undefined;
  readonly httpStatus: number | undefined;
  readonly requestId: string | undefined;

  constructor(code: SinkErrorCode, message: string, details: SinkErrorDetails = {}) {
    super(message);
    this.code = code;
    this.retryable = details.retryable ?? false;
    this.storeCode = details.storeCode;
    this.httpStatus = details.httpStatus;
    this.requestId = details.requestId;
  }
}

export function isSinkError(error: unknown): error is SinkError {
  return error instanceof SinkError;
}
