import { NdjsonWriter } from "./ndjson-writer.ts";
import type { Batch, ShippedRecord, SourceRange } from "./types.ts";

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
