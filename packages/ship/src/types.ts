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

/** One pgAudit entry as shipped: one NDJSON line. The design's shipped-record format. */
export interface ShippedRecord {
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
 * What a source hands a sink: the range's audit entries already encoded. Sources encode records as
 * they read them, a read's worth at a time, so the records die young instead of living in the heap
 * until their batch closes (which cost more in garbage collection than the encoding itself).
 */
export interface Batch {
  range: SourceRange;
  /** The entries as NDJSON in the shipped-record format, one line each, in source order; empty when the range held none. */
  ndjson: Buffer;
  /** How many entries (lines) `ndjson` holds. */
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
   */
  write(batch: Batch): Promise<void>;
  /** Flushes and releases resources; no write() after it. */
  close(): Promise<void>;
}
