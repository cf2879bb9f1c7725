import { AuditPayloadError, ParseErrorCode, parseAuditPayload } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";
import { decodeAuditParameter } from "../src/audit-payload.ts";

// Payloads as pgaudit 1.7 printed them (copied from real csvlog/jsonlog messages).
describe("parseAuditPayload", () => {
  it("returns undefined for messages that are not pgAudit entries", () => {
    expect(parseAuditPayload("connection authorized: user=postgres")).toBeUndefined();
    expect(parseAuditPayload("AUDIT:SESSION,1,1,READ,SELECT,,,x,<none>")).toBeUndefined();
  });

  it("decodes every field, with ROWS after PARAMETER", () => {
    expect(
      parseAuditPayload(
        'AUDIT: SESSION,2,1,DDL,CREATE INDEX,INDEX,public.t_pkey,"CREATE TABLE t (id serial PRIMARY KEY, v text)",<none>,0',
      ),
    ).toEqual({
      auditType: "SESSION",
      statementId: 2,
      substatementId: 1,
      class: "DDL",
      command: "CREATE INDEX",
      objectType: "INDEX",
      objectName: "public.t_pkey",
      statement: "CREATE TABLE t (id serial PRIMARY KEY, v text)",
      parameter: "<none>",
      rows: 0,
    });
  });

  it("has rows null without log_rows, and keeps spaces in COMMAND, OBJECT_TYPE and OBJECT_NAME", () => {
    const e = parseAuditPayload(
      "AUDIT: OBJECT,7,3,DDL,ALTER TABLE,TABLE CONSTRAINT,t_pkey on public.t,ALTER TABLE t ADD PRIMARY KEY (id),<not logged>",
    );
    expect(e).toMatchObject({
      auditType: "OBJECT",
      command: "ALTER TABLE",
      objectType: "TABLE CONSTRAINT",
      objectName: "t_pkey on public.t",
      parameter: "<not logged>",
      rows: null,
    });
  });

  it("keeps ROWS after <not logged> PARAMETER and the statement markers distinct", () => {
    expect(parseAuditPayload("AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<not logged>,1")).toMatchObject({
      parameter: "<not logged>",
      rows: 1,
    });
    expect(
      parseAuditPayload(
        "AUDIT: SESSION,1,2,READ,SELECT,TABLE,public.t,<previously logged>,<previously logged>,5",
      ),
    ).toMatchObject({ statement: "<previously logged>", parameter: "<previously logged>", rows: 5 });
    expect(parseAuditPayload("AUDIT: SESSION,1,1,READ,SELECT,,,<not logged>,<not logged>")).toMatchObject({
      statement: "<not logged>",
      parameter: "<not logged>",
    });
  });

  it("unquotes the statement and decodes the doubly quoted PARAMETER", () => {
    const e = parseAuditPayload(
      'AUDIT: SESSION,4,1,READ,SELECT,,,"SELECT $1::text, $2::text, $3::text, $4::text, $5::int","""a,b"",""x""""y"",,,7",1',
    );
    expect(e?.statement).toBe("SELECT $1::text, $2::text, $3::text, $4::text, $5::int");
    expect(e?.parameter).toEqual(["a,b", 'x"y', null, null, "7"]);
  });

  it("keeps unknown classes and commands, pgAudit 17's stripped statements and <REDACTED> as printed", () => {
    expect(
      parseAuditPayload("AUDIT: SESSION,1,1,NEWCLASS,MERGE,,,MERGE INTO t USING s ON true,<none>"),
    ).toMatchObject({
      class: "NEWCLASS",
      command: "MERGE",
      statement: "MERGE INTO t USING s ON true",
    });
    expect(
      parseAuditPayload("AUDIT: SESSION,9,1,ROLE,CREATE ROLE,,,CREATE ROLE bob PASSWORD <REDACTED>,<none>,0")
        ?.statement,
    ).toBe("CREATE ROLE bob PASSWORD <REDACTED>");
  });

  it("keeps newlines and non-ASCII in quoted statements", () => {
    expect(parseAuditPayload("AUDIT: SESSION,1,1,READ,SELECT,,,\"SELECT\n'é, ✓'\",<none>")?.statement).toBe(
      "SELECT\n'é, ✓'",
    );
  });

  it.each([
    ["AUDIT: SESSION,x,1,READ,SELECT,,,SELECT 1,<none>", "STATEMENT_ID"],
    ["AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1", "fewer"],
    ['AUDIT: SESSION,1,1,READ,SELECT,,,"SELECT 1,<none>', "unterminated"],
    ['AUDIT: SESSION,1,1,READ,SELECT,,,"SELECT 1"x,<none>', "after a closing quote"],
    ["AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<none>,1,extra", "more than 10"],
    ["AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<none>,many", "ROWS"],
  ])("throws AuditPayloadError for %j", (message, why) => {
    let error: unknown;
    try {
      parseAuditPayload(message);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AuditPayloadError);
    expect((error as AuditPayloadError).code).toBe(ParseErrorCode.BAD_AUDIT_PAYLOAD);
    expect((error as AuditPayloadError).message).toContain(why);
    expect((error as AuditPayloadError).message).not.toContain("SELECT 1");
  });
});

describe("decodeAuditParameter", () => {
  it("returns markers as markers", () => {
    expect(decodeAuditParameter("<none>")).toBe("<none>");
    expect(decodeAuditParameter("<not logged>")).toBe("<not logged>");
    expect(decodeAuditParameter("<previously logged>")).toBe("<previously logged>");
  });

  it("splits values, each quoted only when needed, NULL (or '') as null", () => {
    expect(decodeAuditParameter('"a,b","x""y"')).toEqual(["a,b", 'x"y']);
    expect(decodeAuditParameter("1,,3")).toEqual(["1", null, "3"]);
    expect(decodeAuditParameter("")).toEqual([null]);
    expect(decodeAuditParameter(",")).toEqual([null, null]);
    expect(decodeAuditParameter('"line\nbreak"')).toEqual(["line\nbreak"]);
    expect(decodeAuditParameter("<long param suppressed>,2")).toEqual(["<long param suppressed>", "2"]);
  });
});
