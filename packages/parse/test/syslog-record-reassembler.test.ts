import {
  createSyslogParser,
  createSyslogRecordReassembler,
  type LogRecord,
  type MalformedRecord,
  ParseErrorCode,
} from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

// Hand-made RFC 5424 lines in rsyslog's file layout; pid 7 logs a two-chunk message, pid 8 one chunk.
const LINES = [
  "<134>1 2026-11-23T07:40:38.525577+00:00 h postgres 7 - -  [1-1] 2026-11-23 07:40:38.525 UTC [7] LOG:  AUDIT: SESSION,1,1,READ,SELECT,,,\"SELECT 'a",
  "<134>1 2026-11-23T07:40:38.525577+00:00 h postgres 8 - -  [4-1] 2026-11-23 07:40:38.526 UTC [8] LOG:  hello",
  "<134>1 2026-11-23T07:40:38.525577+00:00 h postgres 7 - -  [1-2] #011b' AS x\",<not logged>",
];

function collect() {
  const records: LogRecord[] = [];
  const malformed: MalformedRecord[] = [];
  return {
    records,
    malformed,
    sink: { record: (r: LogRecord) => records.push(r), malformed: (e: MalformedRecord) => malformed.push(e) },
  };
}

describe("createSyslogRecordReassembler", () => {
  it("makes the same records as createSyslogParser from the same lines, one message at a time", () => {
    const file = collect();
    const parser = createSyslogParser(file.sink);
    parser.push(Buffer.from(`${LINES.join("\n")}\n`));
    parser.end();
    const net = collect();
    const r = createSyslogRecordReassembler(net.sink);
    for (const line of LINES) r.push(line);
    r.end();
    expect(net.malformed).toEqual([]);
    expect(net.records).toHaveLength(2);
    expect(net.records).toEqual(file.records);
    // The tab PostgreSQL puts after a newline inside a message (#011 on the wire) is not the statement's.
    expect(net.records.find((x) => x.pid === 7)?.message).toBe(
      "AUDIT: SESSION,1,1,READ,SELECT,,,\"SELECT 'a\nb' AS x\",<not logged>",
    );
  });

  it("sweep() completes only messages that got no chunk since the previous sweep", () => {
    const net = collect();
    const r = createSyslogRecordReassembler(net.sink);
    r.push(LINES[0]!);
    r.push(LINES[1]!);
    r.sweep(); // both were touched: nothing completes
    expect(net.records).toHaveLength(0);
    r.push(LINES[2]!); // pid 7 goes on
    r.sweep(); // pid 8 idle for a whole period
    expect(net.records.map((x) => x.pid)).toEqual([8]);
    r.sweep();
    expect(net.records.map((x) => x.pid)).toEqual([8, 7]);
    expect(r.stats.messages).toBe(2);
    r.end();
    expect(net.records).toHaveLength(2);
  });

  it("sweep() reports a message whose first chunk never came as incomplete", () => {
    const net = collect();
    const r = createSyslogRecordReassembler(net.sink);
    r.push(LINES[2]!);
    r.sweep();
    r.sweep();
    expect(net.records).toEqual([]);
    expect(net.malformed.map((m) => m.code)).toEqual([ParseErrorCode.SYSLOG_INCOMPLETE]);
    expect(r.stats.incompleteMessages).toBe(1);
  });
});
