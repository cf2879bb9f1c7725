/**
 * The encode stage: audit entries → NDJSON lines in the shipped-record format, redacted first
 * when `--redact` asks (redact/). Metering has seen the original entry before it comes here.
 */
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { isoTimestamp } from "./_iso-timestamp.ts";
import { NdjsonWriter } from "./ndjson-writer.ts";
import { type RedactionMode, redactAttempt, redactRecord } from "./redact/record.ts";
import { toShippedAttempt, toShippedRecord } from "./shipped-record.ts";
import type { Batch, ShippedOutcome, ShippedRecord, SourceRange } from "./types.ts";

/**
 * Appends one entry's line to `writer`: straight from the entry when nothing is redacted (no
 * ShippedRecord object is built), through redactRecord otherwise. `offset` is the record's byte
 * offset in its source. Returns the entry's mark: its outcome is set with writer.setOutcome
 * before the batch is taken, or it ships `pending`.
 */
export function encodeEntry(
  writer: NdjsonWriter,
  entry: AuditEntry,
  record: LogRecord,
  sourceName: string,
  offset: number,
  redact: RedactionMode | undefined,
): number {
  if (redact)
    return writer.addRecord(redactRecord(toShippedRecord(entry, record, sourceName, offset), redact), true);
  return writer.addEntry(entry, record, sourceName, offset);
}

/**
 * Appends the outcome line of an entry shipped `pending` earlier (identified by its session id
 * and line and its source); `decidedBy` is the record that settled it (its time is the line's).
 */
export function encodeOutcome(
  writer: NdjsonWriter,
  entry: { sessionId: string | null; sessionLine: number | null; file: string; offset: number },
  decidedBy: LogRecord | undefined,
  outcome: Exclude<ShippedOutcome, "pending">,
  sqlstate: string | null,
): void {
  writer.addOutcomeLine({
    record: "outcome",
    ts: decidedBy ? isoTimestamp(decidedBy.timestamp) : null,
    session_id: entry.sessionId,
    session_line: entry.sessionLine,
    source: { file: entry.file, offset: entry.offset },
    outcome,
    sqlstate,
  });
}

/** Appends the line of an ERROR/FATAL of no audited statement (an attempt), redacted as asked. */
export function encodeAttempt(
  writer: NdjsonWriter,
  record: LogRecord,
  sourceName: string,
  offset: number,
  redact: RedactionMode | undefined,
): void {
  const attempt = toShippedAttempt(record, sourceName, offset);
  writer.addAttempt(redact?.literals ? redactAttempt(attempt) : attempt);
}

/** NDJSON: one record per line, each line ending in `\n` (the lines JSON.stringify gives). */
export function encodeNdjson(records: readonly ShippedRecord[]): Buffer {
  const writer = new NdjsonWriter();
  for (const record of records) writer.addRecord(record);
  return writer.take().ndjson;
}

/** A batch of records built by the caller (the syslog listener, tests): encoded here. */
export function recordsBatch(range: SourceRange, records: readonly ShippedRecord[], bytes: number): Batch {
  const writer = new NdjsonWriter();
  for (const record of records) writer.addRecord(record);
  const { ndjson, entries, firstTs } = writer.take();
  return { range, ndjson, entries, bytes, firstTs };
}
