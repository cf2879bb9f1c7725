import { REDACTED_VALUE, redactParameter, redactRecord, type ShippedRecord } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";

const record: ShippedRecord = {
  record: "entry",
  ts: "2026-01-01T00:00:00.000Z",
  user: "app_user",
  database: "postgres",
  pid: 42,
  session_id: "s",
  session_line: 7,
  application_name: null,
  remote_host: null,
  audit_type: "SESSION",
  statement_id: 3,
  substatement_id: 1,
  class: "WRITE",
  command: "UPDATE",
  object_type: "TABLE",
  object_name: "public.account",
  statement: "UPDATE account SET email = 'bob@example.com' WHERE name = $1",
  parameter: ["a,b", null, "<long param suppressed>"],
  rows: null,
  outcome: "pending",
  sqlstate: null,
  source: { file: "/log/postgresql.csv", offset: 100 },
};

describe("redactParameter", () => {
  it("replaces values, keeps NULLs and pgAudit's markers", () => {
    expect(redactParameter(["hunter2", null, "", "<long param suppressed>"])).toEqual([
      REDACTED_VALUE,
      null,
      REDACTED_VALUE,
      "<long param suppressed>",
    ]);
    expect(redactParameter("<not logged>")).toBe("<not logged>");
    expect(redactParameter("<none>")).toBe("<none>");
    expect(redactParameter([])).toEqual([]);
  });
});

describe("redactRecord", () => {
  it("redacts what the mode asks and marks it, leaving the input untouched", () => {
    const before = structuredClone(record);
    const out = redactRecord(record, { literals: true, parameters: true });
    expect(out).toEqual({
      ...record,
      statement: "UPDATE account SET email = $2 WHERE name = $1",
      parameter: [REDACTED_VALUE, null, "<long param suppressed>"],
      redacted: ["statement", "parameter"],
    });
    expect(record).toEqual(before);
    expect(out).not.toBe(record);
  });

  it("one mode at a time", () => {
    expect(redactRecord(record, { literals: true, parameters: false })).toEqual({
      ...record,
      statement: "UPDATE account SET email = $2 WHERE name = $1",
      redacted: ["statement"],
    });
    expect(redactRecord(record, { literals: false, parameters: true })).toEqual({
      ...record,
      parameter: [REDACTED_VALUE, null, "<long param suppressed>"],
      redacted: ["parameter"],
    });
  });

  it("off: an unmarked copy", () => {
    const out = redactRecord(record, { literals: false, parameters: false });
    expect(out).toEqual(record);
    expect("redacted" in out).toBe(false);
  });

  it("marks a statement that went through redaction even when it had no constant", () => {
    const out = redactRecord(
      { ...record, statement: "SELECT count(*) FROM t" },
      { literals: true, parameters: false },
    );
    expect(out.redacted).toEqual(["statement"]);
  });

  it("does not mark pgAudit markers, which hold nothing to redact", () => {
    const out = redactRecord(
      { ...record, statement: "<previously logged>", parameter: "<previously logged>" },
      { literals: true, parameters: true },
    );
    expect(out.statement).toBe("<previously logged>");
    expect(out.parameter).toBe("<previously logged>");
    expect("redacted" in out).toBe(false);
  });
});
