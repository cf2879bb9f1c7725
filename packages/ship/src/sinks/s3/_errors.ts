import { SinkError, SinkErrorCode } from "../../errors.ts";

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

function where(t: Target): string {
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

/**
 * A failure of the store or the network as a SinkError with a stable code, `retryable` saying
 * whether the same request can succeed later unchanged, and a message a person can act on. The
 * message is composed here, never copied from the SDK (whose text may quote a key id or a header).
 */
export function classifyS3Error(error: unknown, target: Target): SinkError {
  if (error instanceof SinkError) return error;
  const e = (error ?? {}) as SdkLikeError;
  const storeCode = storeCodeOf(error);
  const httpStatus = e.$metadata?.httpStatusCode;
  const details = { storeCode, httpStatus, requestId: e.$metadata?.requestId };
  const rawMessage = typeof e.message === "string" ? e.message : "";
  const keep = `; the batch stays in the spool (${target.spoolDir}) and is uploaded once this is fixed`;

  if (storeCode === "NoSuchBucket" || storeCode === "InvalidBucketName")
    return new SinkError(
      SinkErrorCode.NO_BUCKET,
      `S3 ${where(target)} does not exist (${storeCode}): create it or correct the bucket name${keep}`,
      { ...details, retryable: false },
    );
  if (
    BAD_CREDENTIALS.has(storeCode) ||
    /could not load credentials|credential.*(missing|not found)/i.test(rawMessage)
  )
    return new SinkError(
      SinkErrorCode.BAD_CREDENTIALS,
      `S3 rejected the credentials for ${where(target)} (${storeCode === "unknown" ? "no credentials found" : storeCode}): ` +
        `the access key is unknown, the secret does not match, the session token expired, or none were found; ${CHAIN}${keep}`,
      { ...details, retryable: false },
    );
  if (ACCESS_DENIED.has(storeCode) || (httpStatus === 403 && !BAD_CREDENTIALS.has(storeCode)))
    return new SinkError(
      SinkErrorCode.ACCESS_DENIED,
      `S3 denied writing to ${where(target)} (${storeCode}): the credentials are valid but lack s3:PutObject ` +
        `(and s3:PutObjectRetention with Object Lock) on this bucket and prefix, or a bucket policy or KMS key refuses it${keep}`,
      { ...details, retryable: false },
    );
  if (
    /object ?lock/i.test(rawMessage) ||
    (storeCode === "InvalidRequest" && /lock|retention/i.test(rawMessage))
  )
    return new SinkError(
      SinkErrorCode.NO_OBJECT_LOCK,
      `S3 ${where(target)} has no Object Lock configuration (${storeCode}), so objects cannot be written with a retention: ` +
        `Object Lock can only be enabled when a bucket is created (create one with Object Lock enabled, or drop the object-lock options)${keep}`,
      { ...details, retryable: false },
    );
  const transient =
    NETWORK_CODES.has(storeCode) ||
    THROTTLE_OR_TRANSIENT.has(storeCode) ||
    e.$retryable !== undefined ||
    httpStatus === undefined ||
    httpStatus === 429 ||
    httpStatus >= 500;
  if (transient)
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
