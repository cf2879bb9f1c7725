/**
 * Stable codes for what the command line itself refuses or cannot read. Every code is listed in
 * docs/errors.md ("Command line").
 */
export const CliErrorCode = {
  /** A flag, environment variable or config key whose value is not what it takes (exit 2). */
  BAD_FLAG: "AUDITPIPE_ERR_BAD_FLAG",
  /** Any other usage error: an unknown flag, a missing argument, flags that exclude each other (exit 2). */
  USAGE: "AUDITPIPE_ERR_USAGE",
  /** A gzip input that ends before its end (a file cut short, or copied while being written). */
  TRUNCATED_GZIP: "AUDITPIPE_ERR_TRUNCATED_GZIP",
  /** A gzip input whose compressed bytes are damaged. */
  BAD_GZIP: "AUDITPIPE_ERR_BAD_GZIP",
} as const;

export type CliErrorCode = (typeof CliErrorCode)[keyof typeof CliErrorCode];
