/**
 * Our csvlog splitter against csv-parse, the general CSV library, as the oracle: same records,
 * same field values (null only for an empty unquoted field), same byte offsets. On a live server's
 * output and on generated records with every kind of quoting; the committed captures are in
 * parser-conformance.test.ts.
 */
import { createCsvlogParser, type LogRecord } from "@auditpipe/parse";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvParseRecords } from "./_csvlog-oracle.ts";
import { collect, collectSamples } from "./pg-samples.ts";

/** csvlog's integer columns (pid, session_line_num, internal_query_pos, query_pos, leader_pid). */
const INT_COLUMNS = new Set([3, 6, 17, 20, 24]);

function ours(input: Buffer): LogRecord[] {
  const { records, malformed } = collect(createCsvlogParser, [input]);
  expect(malformed).toEqual([]);
  return records;
}

/** PostgreSQL's csvlog quoting: strings always quoted (quotes doubled), null left empty. */
function csvLiteral(s: string | null): string {
  return s === null ? "" : `"${s.replaceAll('"', '""')}"`;
}

const text = fc.oneof(
  fc.constant(null),
  fc.string({
    unit: fc.constantFrom("a", "Z", " ", ",", '"', "\n", "\r", "\t", "\\", "é", "✓", "😀", "$", "'"),
  }),
  fc.string({ unit: "grapheme", maxLength: 30 }),
);
const int = fc.option(fc.integer({ min: -2147483648, max: 2147483647 }), { nil: null });
const csvRecord = fc
  .tuple(
    fc.constantFrom(23, 24, 26),
    fc.array(text, { minLength: 26, maxLength: 26 }),
    fc.array(int, { minLength: 26, maxLength: 26 }),
  )
  .map(([columns, texts, ints]) => {
    const fields: string[] = [];
    for (let k = 0; k < columns; k++) {
      if (k === 0) fields.push("2024-05-01 12:00:00.000 UTC");
      else if (INT_COLUMNS.has(k)) fields.push(ints[k] === null ? "" : String(ints[k]));
      else if (k === 25) fields.push(ints[k] === null ? "" : `${ints[k]}000`);
      else fields.push(csvLiteral(texts[k] ?? null));
    }
    return `${fields.join(",")}\n`;
  });

describe("csvlog splitter vs csv-parse", () => {
  it("agrees on a real pgaudit csvlog", async () => {
    const { csv } = await collectSamples();
    const expected = csvParseRecords(csv);
    expect(expected.length).toBeGreaterThan(20);
    expect(ours(csv)).toEqual(expected);
  });

  it("agrees on generated records with every kind of quoting", () => {
    fc.assert(
      fc.property(fc.array(csvRecord, { minLength: 1, maxLength: 20 }), (records) => {
        const input = Buffer.from(records.join(""), "utf8");
        expect(ours(input)).toEqual(csvParseRecords(input));
      }),
      { numRuns: 300 },
    );
  });
});
