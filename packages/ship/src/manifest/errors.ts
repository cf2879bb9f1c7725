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
