/**
 * The sink contract: a source hands a sink batches, each covering one contiguous byte range of
 * one source, and forgets a range only once the sink acknowledged it (write() resolved).
 */

/** The byte range of one source that a batch covers, audit records or not. */
export interface SourceRange {
  /** Stable identity of the source (a file's fingerprint id, a syslog listener's id); safe in an object key. */
  sourceId: string;
  /** Where the bytes came from, for people: a file path or a listener URL. */
  sourceName: string;
  /** First byte offset covered (inclusive). */
  start: number;
  /** Offset just past the last byte covered (exclusive). */
  end: number;
}

/**
 * What became of an entry's statement (@auditpipe/outcome), or `pending` when its batch was cut
 * before the log said: a `{"record":"outcome"}` line in a later batch then gives it.
 */
export type ShippedOutcome = "succeeded" | "failed" | "rolled_back" | "unknown" | "pending";

/** One pgAudit entry as shipped: one NDJSON line. The design's shipped-record format. */
export interface ShippedRecord {
  /** The kind of line: an audit entry (see ShippedOutcomeLine, ShippedAttempt for the others). */
  record: "entry";
  /** The record's timestamp as ISO 8601 UTC, or null when the log did not carry one. */
  ts: string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  session_id: string | null;
  session_line: number | null;
  application_name: string | null;
  remote_host: string | null;
  audit_type: string;
  statement_id: number;
  substatement_id: number;
  class: string;
  command: string;
  object_type: string;
  object_name: string;
  statement: string;
  /** The values (null for SQL NULL), or pgAudit's marker (`<not logged>`, `<none>`, ...). */
  parameter: string | (string | null)[];
  rows: number | null;
  outcome: ShippedOutcome;
  /** The SQLSTATE of a `failed` statement where the log format carries it (csvlog, jsonlog, `%e`); else null. */
  sqlstate: string | null;
  /** Where the record is in its source: the file (or listener) and the record's byte offset. */
  source: { file: string; offset: number };
  /**
   * True when the logged record held bytes that are not UTF-8 (a SQL_ASCII database): in its text
   * fields each such byte is `\xNN` and each backslash `\\`. Absent otherwise. See docs/archive.md.
   */
  invalid_utf8?: true;
  /**
   * Fields that went through redaction (`--redact literals` → "statement", `--redact parameters`
   * → "parameter"); absent when the record is as PostgreSQL logged it. See docs/redaction.md.
   */
  redacted?: ("statement" | "parameter")[];
}

/**
 * The outcome of an entry shipped earlier as `pending`: identified by session_id and session_line
 * (csvlog, jsonlog, `%c` and `%l`) and by source (always; stderr and syslog without them).
 */
export interface ShippedOutcomeLine {
  record: "outcome";
  /** When the log settled it: the timestamp of the record that did, or null. */
  ts: string | null;
  session_id: string | null;
  session_line: number | null;
  source: { file: string; offset: number };
  outcome: Exclude<ShippedOutcome, "pending">;
  sqlstate: string | null;
}

/**
 * An ERROR or FATAL of no audited statement: a statement refused before pgAudit logged it, or a
 * failed login. `statement` and `message` are redacted under `--redact literals`.
 */
export interface ShippedAttempt {
  record: "attempt";
  ts: string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  session_id: string | null;
  session_line: number | null;
  application_name: string | null;
  remote_host: string | null;
  /** ERROR or FATAL (as printed). */
  severity: string;
  sqlstate: string | null;
  message: string;
  /** The STATEMENT of the error, or null (a failed login; log_min_error_statement above error). */
  statement: string | null;
  source: { file: string; offset: number };
  invalid_utf8?: true;
  redacted?: ("statement" | "message")[];
}

/**
 * What a source hands a sink: the range's audit entries already encoded. Sources encode records as
 * they read them, a read's worth at a time, so the records die young instead of living in the heap
 * until their batch closes (which cost more in garbage collection than the encoding itself).
 */
export interface Batch {
  range: SourceRange;
  /**
   * The entries as NDJSON in the shipped-record format, one line each, in source order, with the
   * outcome lines and attempts the range's records settled or held; empty when it held none.
   */
  ndjson: Buffer;
  /** How many entry lines (`"record":"entry"`) `ndjson` holds. */
  entries: number;
  /** On-disk bytes of the records in the range that carry audit entries. */
  bytes: number;
  /** The `ts` of the first entry that has one: the object's partition (see objectKey). */
  firstTs: string | null;
}

export interface Sink {
  /** For logs and metric labels: `local-dir`, `s3`. */
  readonly name: string;
  /**
   * Stores a batch durably. Resolving is the acknowledgement: the source may then forget the
   * range. Writing the same range again must not store its entries twice (keys derive from the
   * range). Rejects when the batch is not stored; the source keeps the range and retries.
   * Once it resolves, the source may reuse the memory of `batch.ndjson` for a later batch: a
   * sink that keeps the bytes after acknowledging them copies them.
   *
   * A sink that can finish the write without `batch.ndjson` before it resolves (S3: once it holds
   * the compressed object) calls `release`, perhaps more than once: the source may
   * reuse that memory from then on, and every later write() of the same batch (a retry) must
   * neither read it nor store it again, only acknowledge what the first one stored.
   */
  write(batch: Batch, release?: () => void): Promise<void>;
  /** Flushes and releases resources; no write() after it. */
  close(): Promise<void>;
}
