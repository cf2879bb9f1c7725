/**
 * ParserOptions.decodeAuditEntries: csvlog decodes an ASCII record's pgAudit entry where its text
 * lies and gives it with the record. Whatever it gives must be what decodeAuditEntry gives of the
 * record's message, and what it does not give (escaped or non-ASCII text, payloads that are not
 * pgAudit's) is left for the sink to decode and report, at every chunking.
 */
import {
  type AuditEntry,
  createCsvlogParser,
  decodeAuditEntry,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

/** A PostgreSQL 14+ record (26 columns) with `message` csv-quoted (or as is, `quoted` false). */
function line26(n: number, message: string, quoted = true): string {
  const field = quoted ? `"${message.replaceAll('"', '""')}"` : message;
  return `2024-05-01 12:00:00.${String(n).padStart(3, "0")} UTC,"alice","app",4242,"10.0.0.1:5432",6632.1,${n},"SELECT",2024-05-01 11:00:00 UTC,3/7,0,LOG,00000,${field},,,,,,,,,"psql","client backend",,-123456789012345678\n`;
}

const MESSAGES: { message: string; given: boolean; quoted?: boolean }[] = [
  { message: "AUDIT: SESSION,1,1,READ,SELECT,,,select 1,<not logged>", given: true },
  { message: "AUDIT: SESSION,2,1,READ,SELECT,TABLE,public.t,select * from t,<not logged>,5", given: true },
  { message: "AUDIT: OBJECT,3,2,WRITE,INSERT,TABLE,public.t,insert into t values ($1),", given: true },
  { message: "AUDIT: SESSION,4,1,WRITE,UPDATE,TABLE,public.t,update t set v = 1,<none>,", given: false },
  { message: "AUDIT: SESSION,5,1,READ,SELECT,,,select $1,a,b,7", given: false },
  { message: "AUDIT: SESSION,6,1,READ,SELECT,,,,,", given: false },
  { message: "AUDIT: SESSION,123456789012345,1,READ,SELECT,,,select 1,<not logged>", given: true },
  { message: "AUDIT: SESSION,1234567890123456,1,READ,SELECT,,,select 1,<not logged>", given: false },
  { message: "AUDIT: SESSION,x,1,READ,SELECT,,,select 1,<not logged>", given: false },
  { message: "AUDIT: SESSION,7", given: false },
  { message: "AUDIT: ", given: false },
  { message: "AUDIT:", given: false },
  { message: "AUDIT: SESSION,8,1,READ,SELECT,,,select 1,<not logged>,12,13", given: false },
  { message: "AUDIT: SESSION,9,1,READ,SELECT,,,\"select 'a,b'\",<not logged>", given: false },
  { message: 'AUDIT: SESSION,10,1,READ,SELECT,,,"select ""x"" from t",<not logged>', given: false },
  { message: "AUDIT: SESSION,11,1,READ,SELECT,,,select 'é',<not logged>", given: false },
  { message: "AUDIT: SESSION,12,1,MISC,BEGIN,,,BEGIN,<not logged>", given: true },
  { message: "AUDIT:SESSION", given: false, quoted: false },
  { message: "connection authorized: user=alice database=app", given: false },
  { message: "", given: false, quoted: false },
];

interface Seen {
  record: LogRecord;
  entry: AuditEntry | undefined;
}

function read(input: Buffer, step: number): Seen[] {
  const seen: Seen[] = [];
  const parser = createCsvlogParser(
    {
      record: (record, entry) => seen.push({ record, entry }),
      malformed: (m) => expect.fail(`malformed: ${m.reason}`),
    },
    { omitUntalliedFields: true, decodeAuditEntries: true },
  );
  for (let i = 0; i < input.length; i += step) parser.push(input.subarray(i, i + step));
  parser.end();
  return seen;
}

describe("csvlog decodeAuditEntries", () => {
  const input = Buffer.from(MESSAGES.map((m, i) => line26(i, m.message, m.quoted)).join(""), "utf8");

  it("gives the entry decodeAuditEntry gives, where it gives one, at every chunking", () => {
    for (const step of [input.length, 977, 13, 1]) {
      const seen = read(input, step);
      expect(seen).toHaveLength(MESSAGES.length);
      seen.forEach(({ record, entry }, i) => {
        const reported: MalformedRecord[] = [];
        const decoded = decodeAuditEntry(record, (m) => reported.push(m));
        expect(record.message, `record ${i}`).toBe(MESSAGES[i]!.message);
        expect(entry !== undefined, `record ${i} given`).toBe(MESSAGES[i]!.given);
        if (entry !== undefined) {
          expect(entry, `record ${i}`).toEqual(decoded);
          expect(reported).toEqual([]);
        }
      });
    }
  });

  it("leaves bad payloads for the sink to report", () => {
    const bad = read(input, input.length).filter(({ record }) => {
      const reported: MalformedRecord[] = [];
      decodeAuditEntry(record, (m) => reported.push(m));
      return reported.length > 0;
    });
    // Fewer than 9 fields, more than 10, a bad counter, a bad ROWS: none given.
    expect(bad.length).toBeGreaterThanOrEqual(6);
    for (const { entry } of bad) expect(entry).toBeUndefined();
  });

  it("agrees with decodeAuditEntry on generated payloads, fields of every shape, chunked anywhere", () => {
    const field = fc.oneof(
      {
        weight: 12,
        arbitrary: fc.constantFrom(
          "",
          "SESSION",
          "READ",
          "SELECT",
          "1",
          "42",
          "007",
          "x",
          "<not logged>",
          "<none>",
        ),
      },
      fc.string({ unit: fc.constantFrom("a", "1", ",", '"', " ", "<", "é", "\n"), maxLength: 8 }),
      fc
        .string({ unit: fc.constantFrom("a", ",", '"'), maxLength: 6 })
        .map((v) => `"${v.replaceAll('"', '""')}"`),
      fc.nat().map(String),
    );
    const counter = fc.oneof({ weight: 6, arbitrary: fc.nat().map(String) }, field);
    // pgAudit's nine fields (two counters among them), then up to two more: mostly well formed.
    const message = fc
      .tuple(
        field,
        counter,
        counter,
        fc.array(field, { minLength: 6, maxLength: 6 }),
        fc.array(counter, { maxLength: 2 }),
      )
      .map(([type, id, sub, rest, extra]) => `AUDIT: ${[type, id, sub, ...rest, ...extra].join(",")}`);
    let given = 0;
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 64 }),
        (messages, step) => {
          const input = Buffer.from(messages.map((m, i) => line26(i, m)).join(""), "utf8");
          const seen = read(input, step);
          expect(seen).toHaveLength(messages.length);
          for (const { record, entry } of seen) {
            if (entry === undefined) continue;
            given++;
            const reported: MalformedRecord[] = [];
            expect(entry).toEqual(decodeAuditEntry(record, (m) => reported.push(m)));
            expect(reported).toEqual([]);
          }
        },
      ),
      { numRuns: 300, seed: 24 },
    );
    expect(given).toBeGreaterThan(100);
  });
});
