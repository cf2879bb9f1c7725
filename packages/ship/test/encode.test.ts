/**
 * encodeNdjson against JSON.stringify per line, byte for byte: every audit entry of every committed
 * fixture (csvlog, jsonlog, stderr; as shipped and redacted), and random records with awkward strings
 * (quotes, backslashes, control characters, U+2028/2029, lone surrogates, emoji), awkward numbers
 * (-0, NaN, ±Infinity, huge, tiny) and nulls everywhere nulls are allowed.
 */
import { redactRecord, type ShippedRecord, toShippedRecord } from "@auditpipe/ship";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeNdjson } from "../src/encode.ts";
import { fixtureAuditEntries } from "./_fixture-entries.ts";

const viaStringify = (records: ShippedRecord[]): string =>
  records.map((r) => `${JSON.stringify(r)}\n`).join("");

function fixtureRecords(): ShippedRecord[] {
  return fixtureAuditEntries().map(({ entry, record, source }) =>
    toShippedRecord(entry, record, source, record.offset),
  );
}

describe("encodeNdjson", () => {
  it("writes every fixture record exactly as JSON.stringify does, shipped and redacted", () => {
    const records = fixtureRecords();
    expect(records.length).toBeGreaterThan(100);
    const redacted = records.flatMap((r) => [
      redactRecord(r, { literals: true, parameters: false }),
      redactRecord(r, { literals: false, parameters: true }),
      redactRecord(r, { literals: true, parameters: true }),
    ]);
    for (const set of [records, redacted]) expect(encodeNdjson(set).toString("utf8")).toBe(viaStringify(set));
  });

  it("writes random records with awkward strings and numbers exactly as JSON.stringify does", () => {
    const awkward = fc.oneof(
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.string({ unit: "grapheme", maxLength: 20 }),
      fc.string({
        // Listed one by one: spreading a string would pair the surrogates up again.
        unit: fc.constantFrom(
          ...['"', "\\", "\n", "\r", "\t", "\b", "\f", "\u0000", "\u0001", "\u001f", "\u007f"],
          ...["\u2028", "\u2029", "\ud800", "\udc00", "\udbff", "\udfff", "😀", "é", "世", " ", "a", "/"],
        ),
        maxLength: 30,
      }),
    );
    const text = fc.oneof(awkward, fc.string({ maxLength: 20 }));
    const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
    const number = fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constantFrom(-0, 0, Number.NaN, Infinity, -Infinity, 1e21, 1e-7, Number.MAX_SAFE_INTEGER),
    );
    const record: fc.Arbitrary<ShippedRecord> = fc
      .record({
        record: fc.constant("entry" as const),
        ts: orNull(text),
        user: orNull(text),
        database: orNull(text),
        pid: orNull(number),
        session_id: orNull(text),
        session_line: orNull(number),
        application_name: orNull(text),
        remote_host: orNull(text),
        audit_type: text,
        statement_id: number,
        substatement_id: number,
        class: text,
        command: text,
        object_type: text,
        object_name: text,
        statement: text,
        parameter: fc.oneof(text, fc.array(orNull(text), { maxLength: 6 })),
        rows: orNull(number),
        outcome: fc.constantFrom("succeeded", "failed", "rolled_back", "unknown", "pending") as fc.Arbitrary<
          ShippedRecord["outcome"]
        >,
        sqlstate: orNull(fc.constantFrom("23505", "42501", "P0001", "57014")),
        source: fc.record({ file: text, offset: number }),
      })
      .chain((r) =>
        fc
          .option(fc.subarray(["statement", "parameter"] as ("statement" | "parameter")[]), {
            nil: undefined,
          })
          .map((redacted) => (redacted === undefined ? r : { ...r, redacted })),
      );
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 5 }), (records) => {
        expect(encodeNdjson(records).toString("utf8")).toBe(viaStringify(records));
      }),
      { numRuns: 2000 },
    );
  });

  it("is empty for no records", () => {
    expect(encodeNdjson([]).length).toBe(0);
  });
});
