import type { Batch, ShippedRecord, SourceRange } from "./types.ts";

/**
 * Between two records of a JSON array of shipped records: `},{"ts":`. JSON escapes every `"` inside
 * a string, so the sequence occurs only between records (each starts with its `ts` key), and
 * `}\n{"ts":` has the same length: the array becomes NDJSON in place.
 */
const BETWEEN = Buffer.from('},{"ts":');
const NEWLINE = 0x0a;

function perLine(records: ShippedRecord[]): Buffer {
  let text = "";
  for (const record of records) text += `${JSON.stringify(record)}\n`;
  return Buffer.from(text, "utf8");
}

/**
 * NDJSON: one record per line, each line ending in `\n`. One JSON.stringify over the whole batch
 * (a single string builder, no per-line string concatenation), turned into lines in place.
 */
export function encodeNdjson(records: ShippedRecord[]): Buffer {
  if (records.length === 0) return Buffer.alloc(0);
  const array = Buffer.from(JSON.stringify(records), "utf8");
  let lines = 1;
  for (let i = array.indexOf(BETWEEN, 1); i >= 0; i = array.indexOf(BETWEEN, i + BETWEEN.length)) {
    array[i + 1] = NEWLINE;
    lines++;
  }
  // A record built elsewhere with another key first: fall back to one stringify per line.
  if (lines !== records.length) return perLine(records);
  array[array.length - 1] = NEWLINE; // the closing `]`
  return array.subarray(1); // past the opening `[`
}

/** A batch of records built by the caller (the syslog listener, tests): encoded here. */
export function recordsBatch(range: SourceRange, records: ShippedRecord[], bytes: number): Batch {
  return {
    range,
    ndjson: encodeNdjson(records),
    entries: records.length,
    bytes,
    firstTs: records.find((r) => r.ts !== null)?.ts ?? null,
  };
}
