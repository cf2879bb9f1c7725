/**
 * The encode stage: audit entries → NDJSON lines in the shipped-record format, redacted first
 * when `--redact` asks (redact/). Metering has seen the original entry before it comes here.
 */
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { NdjsonWriter } from "./ndjson-writer.ts";
import { type RedactionMode, redactRecord } from "./redact/record.ts";
import { toShippedRecord } from "./shipped-record.ts";
import type { Batch, ShippedRecord, SourceRange } from "./types.ts";

/**
 * Appends one entry's line to `writer`: straight from the entry when nothing is redacted (no
 * ShippedRecord object is built), through redactRecord otherwise. `offset` is the record's byte
 * offset in its source.
 */
export function encodeEntry(
  writer: NdjsonWriter,
  entry: AuditEntry,
  record: LogRecord,
  sourceName: string,
  offset: number,
  redact: RedactionMode | undefined,
): void {
  if (redact) writer.addRecord(redactRecord(toShippedRecord(entry, record, sourceName, offset), redact));
  else writer.addEntry(entry, record, sourceName, offset);
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
