/**
 * Stable codes for what compaction could not do. Every code is listed in docs/errors.md
 * ("Compaction"). A failed host-hour leaves the archive as it was: its landing objects stay, and
 * the next run compacts it again.
 */
export const CompactErrorCode = {
  /** The archive argument is not a directory or an s3://bucket/prefix URL. */
  ARCHIVE: "AUDITPIPE_ERR_COMPACT_ARCHIVE",
  /** The store could not be listed, read or written. */
  STORE: "AUDITPIPE_ERR_COMPACT_STORE",
  /** A landing object could not be read as shipped NDJSON (damaged, or not ours). */
  INPUT: "AUDITPIPE_ERR_COMPACT_INPUT",
  /** The Parquet file read back does not hold what was written (rows, order or digest). */
  READBACK: "AUDITPIPE_ERR_COMPACT_READBACK",
  /** The sidecar's compaction child ended without its report (killed, out of memory, could not start). */
  CHILD: "AUDITPIPE_ERR_COMPACT_CHILD",
  /** The sidecar did not sign a rebuilt file's new hash into its chain: the stored file is not overwritten. */
  ANNOUNCE: "AUDITPIPE_ERR_COMPACT_ANNOUNCE",
} as const;

export type CompactErrorCode = (typeof CompactErrorCode)[keyof typeof CompactErrorCode];

export class CompactError extends Error {
  override name = "CompactError";
  readonly code: CompactErrorCode;

  constructor(code: CompactErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
