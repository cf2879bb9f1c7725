import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createParser,
  decodeAuditEntry,
  type LogRecord,
  type MalformedRecord,
  ParseErrorCode,
  parseAuditPayload,
} from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { readMaybeGz } from "./_stderr-oracle.ts";

const CASE = join(repoRoot(), "fixtures/cases/session-all");

/** Every record of the real csvlog capture, in order. */
function fixtureRecords(): LogRecord[] {
  const records: LogRecord[] = [];
  const parser = createParser("csvlog", {
    record: (r) => records.push(r),
    malformed: (m) => {
      throw new Error(`fixture malformed at ${m.offset}: ${m.code}`);
    },
  });
  parser.push(readMaybeGz(join(CASE, "postgresql.csv.gz")));
  parser.end();
  return records;
}

describe("decodeAuditEntry, the one record → audit entry step", () => {
  it("decodes every entry of a real capture as parseAuditPayload does, and nothing else", () => {
    const { formats } = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8"));
    const expected = formats["postgresql.csv.gz"];
    const malformed: MalformedRecord[] = [];
    let entries = 0;
    for (const record of fixtureRecords()) {
      const entry = decodeAuditEntry(record, (m) => malformed.push(m));
      if (entry === undefined) continue;
      entries++;
      expect(entry).toEqual(parseAuditPayload(record.message));
    }
    expect(entries).toBe(expected.entries);
    expect(malformed).toEqual([]);
  });

  it("reports a bad payload as malformed with the record's offset and size, never its text, and skips it", () => {
    // Hand-made: a real record of the capture with its payload cut short (pgAudit never writes this).
    const real = fixtureRecords().find((r) => r.message.startsWith("AUDIT: SESSION") && r.offset > 0)!;
    const secret = "SELECT 'a secret'";
    const bad: LogRecord = { ...real, message: `AUDIT: SESSION,1,1,READ,SELECT,"${secret}` };
    const malformed: MalformedRecord[] = [];
    expect(decodeAuditEntry(bad, (m) => malformed.push(m))).toBeUndefined();
    expect(malformed).toEqual([
      {
        code: ParseErrorCode.BAD_AUDIT_PAYLOAD,
        reason: expect.any(String),
        offset: real.offset,
        size: real.size,
      },
    ]);
    expect(malformed[0]!.reason).not.toContain("secret");
  });

  it("gives undefined for a record that carries no audit entry, without reporting it", () => {
    const plain = fixtureRecords().find((r) => !r.message.startsWith("AUDIT: "))!;
    const malformed: MalformedRecord[] = [];
    expect(decodeAuditEntry(plain, (m) => malformed.push(m))).toBeUndefined();
    expect(malformed).toEqual([]);
  });
});
