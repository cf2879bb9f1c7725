import { SinkError, SinkErrorCode } from "../../errors.ts";
import { VerifyError, VerifyErrorCode } from "../../manifest/errors.ts";

/** Where the sink writes, for messages: never credentials. */
export interface Target {
  bucket: string;
  endpoint: string | undefined;
  region: string | undefined;
  spoolDir: string;
}

/** Network-level failures: the store may answer next time. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENOTFOUND", // DNS can come back
  "EAI_AGAIN",
  "TimeoutError",
  "RequestTimeout",
  "AbortError",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/** Store answers that say "later". */
const THROTTLE_OR_TRANSIENT = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "TooManyRequests",
  "RequestThrottled",
  "ServiceUnavailable",
  "InternalError",
  "RequestTimeTooSkewed", // the SDK corrects its clock offset from the answer
  "XMinioServerNotInitialized",
  "XMinioStorageFull",
  "OperationAborted",
]);

const BAD_CREDENTIALS = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
  "TokenRefreshRequired",
  "InvalidClientTokenId",
  "AuthorizationHeaderMalformed",
  "CredentialsProviderError",
]);

const ACCESS_DENIED = new Set([
  "AccessDenied",
  "AllAccessDisabled",
  "AccountProblem",
  "KMS.AccessDeniedException",
]);

interface SdkLikeError {
  name?: unknown;
  code?: unknown;
  Code?: unknown;
  message?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number; requestId?: string; extendedRequestId?: string };
}

function where(t: Pick<Target, "bucket" | "endpoint" | "region">): string {
  return t.endpoint
    ? `bucket "${t.bucket}" at ${t.endpoint}`
    : `bucket "${t.bucket}" in ${t.region ?? "the default region"}`;
}

const CHAIN =
  "credentials come from the AWS SDK's default chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), " +
  "AWS_PROFILE with the shared config and credentials files, web identity (IRSA), or container/instance metadata";

/** The store's or the network's code for an error, whatever layer threw it. */
export function storeCodeOf(error: unknown): string {
  const e = (error ?? {}) as SdkLikeError;
  for (const c of [e.Code, e.code, e.name]) if (typeof c === "string" && c !== "Error" && c !== "") return c;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (cause && cause !== error) return storeCodeOf(cause);
  return "unknown";
}

/** What kind of failure an S3 request met: the one classification the sink and verify share. */
export type S3FailureKind =
  | "no-bucket"
  | "bad-credentials"
  | "access-denied"
  | "no-object-lock"
  | "transient"
  | "rejected";

export interface S3Failure {
  kind: S3FailureKind;
  /** The store's or the network's code (`NoSuchBucket`, `ECONNREFUSED`…). */
  storeCode: string;
  httpStatus: number | undefined;
  requestId: string | undefined;
}

/** Classifies an SDK or network error. Messages are composed from this, never copied from the SDK. */
export function s3Failure(error: unknown): S3Failure {
  const e = (error ?? {}) as SdkLikeError;
  const storeCode = storeCodeOf(error);
  const httpStatus = e.$metadata?.httpStatusCode;
  const requestId = e.$metadata?.requestId;
  const rawMessage = typeof e.message === "string" ? e.message : "";
  const kind = ((): S3FailureKind => {
    if (storeCode === "NoSuchBucket" || storeCode === "InvalidBucketName") return "no-bucket";
    if (
      BAD_CREDENTIALS.has(storeCode) ||
      /could not load credentials|credential.*(missing|not found)/i.test(rawMessage)
    )
      return "bad-credentials";
    if (ACCESS_DENIED.has(storeCode) || httpStatus === 403) return "access-denied";
    if (
      /object ?lock/i.test(rawMessage) ||
      (storeCode === "InvalidRequest" && /lock|retention/i.test(rawMessage))
    )
      return "no-object-lock";
    const transient =
      NETWORK_CODES.has(storeCode) ||
      THROTTLE_OR_TRANSIENT.has(storeCode) ||
      e.$retryable !== undefined ||
      httpStatus === undefined ||
      httpStatus === 429 ||
      httpStatus >= 500;
    return transient ? "transient" : "rejected";
  })();
  return { kind, storeCode, httpStatus, requestId };
}

/**
 * A failure of the store or the network as a SinkError with a stable code, `retryable` saying
 * whether the same request can succeed later unchanged, and a message a person can act on. The
 * message is composed here, never copied from the SDK (whose text may quote a key id or a header).
 */
export function classifyS3Error(error: unknown, target: Target): SinkError {
  if (error instanceof SinkError) return error;
  const { kind, storeCode, httpStatus, requestId } = s3Failure(error);
  const details = { storeCode, httpStatus, requestId };
  const keep = `; the batch stays in the spool (${target.spoolDir}) and is uploaded once this is fixed`;

  if (kind === "no-bucket")
    return new SinkError(
      SinkErrorCode.NO_BUCKET,
      `S3 ${where(target)} does not exist (${storeCode}): create it or correct the bucket name${keep}`,
      { ...details, retryable: false },
    );
  if (kind === "bad-credentials")
    return new SinkError(
      SinkErrorCode.BAD_CREDENTIALS,
      `S3 rejected the credentials for ${where(target)} (${storeCode === "unknown" ? "no credentials found" : storeCode}): ` +
        `the access key is unknown, the secret does not match, the session token expired, or none were found; ${CHAIN}${keep}`,
      { ...details, retryable: false },
    );
  if (kind === "access-denied")
    return new SinkError(
      SinkErrorCode.ACCESS_DENIED,
      `S3 denied writing to ${where(target)} (${storeCode}): the credentials are valid but lack s3:PutObject ` +
        `(and s3:PutObjectRetention with Object Lock) on this bucket and prefix, or a bucket policy or KMS key refuses it${keep}`,
      { ...details, retryable: false },
    );
  if (kind === "no-object-lock")
    return new SinkError(
      SinkErrorCode.NO_OBJECT_LOCK,
      `S3 ${where(target)} has no Object Lock configuration (${storeCode}), so objects cannot be written with a retention: ` +
        `Object Lock can only be enabled when a bucket is created (create one with Object Lock enabled, or drop the object-lock options)${keep}`,
      { ...details, retryable: false },
    );
  if (kind === "transient")
    return new SinkError(
      SinkErrorCode.UNREACHABLE,
      `S3 ${where(target)} did not take the object (${storeCode}${httpStatus ? `, HTTP ${httpStatus}` : ""}): ` +
        "the store is unreachable, slow or overloaded; retrying with backoff",
      { ...details, retryable: true },
    );
  return new SinkError(
    SinkErrorCode.REJECTED,
    `S3 ${where(target)} refused the object (${storeCode}, HTTP ${httpStatus})${keep}`,
    { ...details, retryable: false },
  );
}

/**
 * A failure reading the archive (`verify`) as a VerifyError: its code, the bucket and endpoint
 * (or region) it was reading, what was expected and what to do. Never the SDK's own text.
 */
export function classifyS3ReadError(
  error: unknown,
  target: Pick<Target, "bucket" | "endpoint" | "region">,
): VerifyError {
  if (error instanceof VerifyError) return error;
  const { kind, storeCode, httpStatus, requestId } = s3Failure(error);
  const at = where(target);
  const said = `${storeCode}${httpStatus ? `, HTTP ${httpStatus}` : ""}`;
  const fail = (code: VerifyErrorCode, text: string): VerifyError =>
    new VerifyError(code, `${code}: ${text}`, storeCode);
  switch (kind) {
    case "no-bucket":
      return fail(
        VerifyErrorCode.NO_BUCKET,
        `${at} does not exist (${said}): check the bucket in the archive URL (s3://BUCKET/prefix), ` +
          `and --s3-endpoint (or --s3-region) if the archive is not on AWS`,
      );
    case "bad-credentials":
      return fail(
        VerifyErrorCode.BAD_CREDENTIALS,
        `no credentials to read ${at}, or the store rejected them (${storeCode === "unknown" ? "none found" : said}): ${CHAIN}`,
      );
    case "access-denied":
      return fail(
        VerifyErrorCode.ACCESS_DENIED,
        `the credentials may not read ${at} (${said}): verify needs s3:ListBucket on the bucket and s3:GetObject ` +
          "on the prefix, and s3:GetObjectVersion on a versioned (Object Lock) bucket",
      );
    case "transient":
      return fail(
        VerifyErrorCode.UNREACHABLE,
        `${at} did not answer (${said}): is the endpoint right and the store up? Nothing was verified; run it again`,
      );
    default:
      return fail(
        VerifyErrorCode.REJECTED,
        `${at} refused a read (${said}${requestId ? `, request id ${requestId}` : ""}); nothing was verified`,
      );
  }
}
