/**
 * Stable codes for input the parsers could not read. Every code is listed in docs/errors.md.
 * Parsers report these as MalformedRecord values; nothing here is thrown out of a stream.
 */
export const ParseErrorCode = {
  /** A quoted csvlog field or CSV payload that never closes before the record limit or end of input. */
  UNTERMINATED_QUOTE: "AUDITPIPE_ERR_UNTERMINATED_QUOTE",
  /** A record larger than `maxRecordBytes`. */
  RECORD_TOO_LARGE: "AUDITPIPE_ERR_RECORD_TOO_LARGE",
  /** Input ended (or the file was rotated away) in the middle of a record. */
  TRUNCATED_RECORD: "AUDITPIPE_ERR_TRUNCATED_RECORD",
  /** A csvlog line that is not CSV as PostgreSQL writes it: a quote inside an unquoted field, or text after a closing quote. */
  BAD_CSV: "AUDITPIPE_ERR_BAD_CSV",
  /** A csvlog record whose column count matches no PostgreSQL version (23, 24 or 26). */
  BAD_FIELD_COUNT: "AUDITPIPE_ERR_BAD_FIELD_COUNT",
  /** Bytes that are not UTF-8 where PostgreSQL writes UTF-8. */
  INVALID_UTF8: "AUDITPIPE_ERR_INVALID_UTF8",
  /** A jsonlog line that is not a JSON object with PostgreSQL's keys. */
  INVALID_JSON: "AUDITPIPE_ERR_INVALID_JSON",
  /** A stderr/syslog line that does not start with the configured log_line_prefix. */
  PREFIX_MISMATCH: "AUDITPIPE_ERR_PREFIX_MISMATCH",
  /**
   * A stderr/syslog line that the log_line_prefix values in effect around a reload read with
   * different fields, where neither its backend nor the time tells which one wrote it.
   */
  AMBIGUOUS_PREFIX: "AUDITPIPE_ERR_AMBIGUOUS_PREFIX",
  /** A syslog line that is neither RFC 3164 nor RFC 5424 as rsyslog writes them. */
  BAD_SYSLOG_LINE: "AUDITPIPE_ERR_BAD_SYSLOG_LINE",
  /** A syslog message whose `[n-m]` chunks did not all arrive. */
  SYSLOG_INCOMPLETE: "AUDITPIPE_ERR_SYSLOG_INCOMPLETE",
  /** A message starting `AUDIT: ` whose payload is not pgAudit's CSV. */
  BAD_AUDIT_PAYLOAD: "AUDITPIPE_ERR_BAD_AUDIT_PAYLOAD",
} as const;

export type ParseErrorCode = (typeof ParseErrorCode)[keyof typeof ParseErrorCode];
