import {
  REDACTED_VALUE,
  redactAttempt,
  redactParameter,
  redactRecord,
  type ShippedRecord,
  toShippedAttempt,
} from "@auditpipe/ship";
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

describe("redactAttempt", () => {
  const attempt = toShippedAttempt(
    {
      offset: 0,
      size: 100,
      timestamp: "2026-11-27 14:04:12.345 UTC",
      user: "mallory",
      database: "postgres",
      pid: 4242,
      remoteHost: null,
      sessionId: "6b098e1f.3d7c",
      sessionLine: 5,
      commandTag: null,
      sessionStart: null,
      virtualTransactionId: "3/7",
      transactionId: null,
      severity: "ERROR",
      sqlState: "22P02",
      message: 'invalid input syntax for type integer: "4111 1111 1111 1111"',
      detail: null,
      hint: null,
      internalQuery: null,
      internalPosition: null,
      context: null,
      query: "SELECT * FROM cards WHERE number = '4111 1111 1111 1111'",
      queryPosition: null,
      location: null,
      applicationName: null,
      backendType: null,
      leaderPid: null,
      queryId: null,
    },
    "/log/postgresql.csv",
    900,
  );

  it("redacts the statement's constants and every double-quoted value of the message, and says so", () => {
    const r = redactAttempt(attempt);
    expect(r.statement).toBe("SELECT * FROM cards WHERE number = $1");
    expect(r.message).toBe('invalid input syntax for type integer: "<redacted>"');
    expect(r.redacted).toEqual(["statement", "message"]);
    expect(JSON.stringify(r)).not.toContain("4111");
    expect(attempt.statement).toContain("4111"); // the input is not modified
  });

  it("keeps a failed login's null statement, and redacts quoted names in the message too", () => {
    const r = redactAttempt({
      ...attempt,
      statement: null,
      message: 'password authentication failed for user "mallory"',
    });
    expect(r.statement).toBeNull();
    expect(r.message).toBe('password authentication failed for user "<redacted>"');
  });
});
