/** Stable codes for what stops the manifest journal. Listed in docs/archive.md#tamper-evidence. */
export const ManifestErrorCode = {
  /** A manifest for the hour is already in the bucket and does not continue this journal's chain. */
  CONFLICT: "AUDITPIPE_ERR_MANIFEST_CONFLICT",
  /** The chain head in the state dir is unreadable or belongs to another bucket, prefix or host. */
  STATE: "AUDITPIPE_ERR_MANIFEST_STATE",
  /** The manifest signing key (or a trusted public key file) cannot be read or is not Ed25519. */
  KEY: "AUDITPIPE_ERR_MANIFEST_KEY",
  /** record() or closeDue() after close(). */
  CLOSED: "AUDITPIPE_ERR_MANIFEST_CLOSED",
} as const;

export type ManifestErrorCode = (typeof ManifestErrorCode)[keyof typeof ManifestErrorCode];

export class ManifestError extends Error {
  override name = "ManifestError";
  readonly code: ManifestErrorCode;

  constructor(code: ManifestErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Stable codes for why `verifyArchive` (`auditpipe verify`) could not read the archive. Listed
 * in docs/errors.md; the message names the bucket and endpoint, what was expected and what to do.
 */
export const VerifyErrorCode = {
  /** The bucket does not exist (or its name is invalid) at that endpoint or region. */
  NO_BUCKET: "AUDITPIPE_ERR_VERIFY_NO_BUCKET",
  /** No credentials were found, or the store rejected them. */
  BAD_CREDENTIALS: "AUDITPIPE_ERR_VERIFY_BAD_CREDENTIALS",
  /** The credentials may not list or read the archive. */
  ACCESS_DENIED: "AUDITPIPE_ERR_VERIFY_ACCESS_DENIED",
  /** The store did not answer (network, timeouts, 5xx, throttling). */
  UNREACHABLE: "AUDITPIPE_ERR_VERIFY_UNREACHABLE",
  /** The store refused a request for another reason. */
  REJECTED: "AUDITPIPE_ERR_VERIFY_REJECTED",
} as const;

export type VerifyErrorCode = (typeof VerifyErrorCode)[keyof typeof VerifyErrorCode];

/** The archive could not be read: nothing was verified. */
export class VerifyError extends Error {
  override name = "VerifyError";
  readonly code: VerifyErrorCode;
  /** The store's or the network's code (`NoSuchBucket`, `ECONNREFUSED`…). */
  readonly storeCode: string;

  constructor(code: VerifyErrorCode, message: string, storeCode: string) {
    super(message);
    this.code = code;
    this.storeCode = storeCode;
  }
}
