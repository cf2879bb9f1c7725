/**
 * Stable codes for what a query could not do. Every code is listed in docs/errors.md ("Query").
 */
export const QueryErrorCode = {
  /** The archive's files could not be read as the audit view (damaged, or not ours). */
  ARCHIVE: "AUDITPIPE_ERR_QUERY_ARCHIVE",
  /** The SQL is not one read-only SELECT (a COPY, an ATTACH, a SET, several statements…). */
  NOT_READ_ONLY: "AUDITPIPE_ERR_QUERY_NOT_READ_ONLY",
  /** The engine refused or failed the query (syntax, a missing column, a file outside the archive). */
  FAILED: "AUDITPIPE_ERR_QUERY_FAILED",
} as const;

export type QueryErrorCode = (typeof QueryErrorCode)[keyof typeof QueryErrorCode];

export class QueryError extends Error {
  override name = "QueryError";
  readonly code: QueryErrorCode;

  constructor(code: QueryErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
