/**
 * Our csvlog splitter against csv-parse, the general CSV library, as the oracle: same records,
 * same field values (null only for an empty unquoted field), same byte offsets.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createCsvlogParser, type LogRecord } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { collect, collectSamples } from "./pg-samples.ts";

type Row = { record: (string | null)[]; info: { bytes: number } };

const INT_COLUMNS = new Set([3, 6, 17, 20, 24]);

/** csv-parse's view of a csvlog file, as LogRecords built by a mapping of the test's own. */
function oracle(input: Buffer): LogRecord[] {
  const rows = parse(input, {
    relax_column_count: true,
    record_delimiter: "\n",
    info: true,
    cast: (value, context) => (value === "" && !context.quoting ? null : value),
  }) as unknown as Row[];
  let offset = 0;
  return rows.map(({ record: f, info }) => {
    const v = (k: number): string | null => f[k] ?? null;
    const n = (k: number): number | null => (f[k] == null ? null : Number(f[k]));
    const r: LogRecord = {
      offset,
      size: info.bytes - offset,
      timestamp: v(0),
      user: v(1),
      database: v(2),
      pid: n(3),
      remoteHost: v(4),
      sessionId: v(5),
      sessionLine: n(6),
      commandTag: v(7),
      sessionStart: v(8),
      virtualTransactionId: v(9),
      transactionId: v(10),
      severity: v(11) ?? "",
      sqlState: v(12),
      message: v(13) ?? "",
      detail: v(14),
      hint: v(15),
      internalQuery: v(16),
      internalPosition: n(17),
      context: v(18),
      query: v(19),
      queryPosition: n(20),
      location: v(21),
      applicationName: v(22),
      backendType: v(23),
      leaderPid: n(24),
      queryId: v(25),
    };
    offset = info.bytes;
    return r;
  });
}

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
    const expected = oracle(csv);
    expect(expected.length).toBeGreaterThan(20);
    expect(ours(csv)).toEqual(expected);
  });

  const casesDir = join(repoRoot(), "fixtures", "cases");
  const fixtureFiles = readdirSync(casesDir).flatMap((name) =>
    ["postgresql.csv", "postgresql.csv.gz"].map((f) => join(casesDir, name, f)).filter((f) => existsSync(f)),
  );
  it("has the committed csvlog fixtures to compare on (fixtures/cases/*/postgresql.csv*)", () => {
    // A missing fixture directory must fail here, not quietly leave the next test with no rows.
    expect(fixtureFiles.length).toBeGreaterThanOrEqual(5);
  });
  it.each(fixtureFiles)("agrees on fixture %s", (file) => {
    const raw = readFileSync(file);
    const csv = file.endsWith(".gz") ? gunzipSync(raw) : raw;
    const expected = oracle(csv);
    expect(expected.length).toBeGreaterThan(0);
    expect(ours(csv)).toEqual(expected);
  });

  it("agrees on generated records with every kind of quoting", () => {
    fc.assert(
      fc.property(fc.array(csvRecord, { minLength: 1, maxLength: 20 }), (records) => {
        const input = Buffer.from(records.join(""), "utf8");
        expect(ours(input)).toEqual(oracle(input));
      }),
      { numRuns: 300 },
    );
  });
});
