import { createParser, type LogFormat, type LogRecord } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

// Hand-made lines in the shape PostgreSQL writes them (this test is about holding, not content).
const STDERR = "2026-11-23 07:45:26.050 UTC [12412] LOG:  AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<none>\n";
const SYSLOG =
  "Nov 23 07:45:26 vm postgres[12412]: [3-1] 2026-11-23 07:45:26.050 UTC [12412] LOG:  AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<none>\n";

function collect(format: LogFormat) {
  const records: LogRecord[] = [];
  const parser = createParser(format, { record: (r) => records.push(r), malformed: () => {} });
  return { parser, records };
}

describe("idle()", () => {
  it.each([
    ["stderr", STDERR],
    ["syslog", SYSLOG],
  ] as const)(
    "%s: releases the record held for continuation lines once the writer is quiet",
    (format, line) => {
      const { parser, records } = collect(format);
      parser.push(Buffer.from(line));
      expect(records).toHaveLength(0); // a continuation line could still follow
      parser.idle?.();
      expect(records).toHaveLength(1);
      expect(records[0]?.message).toContain("AUDIT: SESSION,1,1,READ");
      parser.push(Buffer.from(line));
      parser.end();
      expect(records).toHaveLength(2);
      expect(records[1]?.offset).toBe(Buffer.byteLength(line));
    },
  );

  it("keeps holding while a line is incomplete", () => {
    const { parser, records } = collect("stderr");
    parser.push(Buffer.from(STDERR.slice(0, 30)));
    parser.idle?.();
    expect(records).toHaveLength(0);
    parser.push(Buffer.from(STDERR.slice(30)));
    parser.idle?.();
    expect(records).toHaveLength(1);
  });
});
