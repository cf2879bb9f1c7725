import {
  createCsvlogParser,
  createJsonlogParser,
  type LogRecord,
  ParseErrorCode,
  parseAuditPayload,
} from "@auditpipe/parse";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, collectSamples, type Samples } from "./pg-samples.ts";

const enc = (s: string): Buffer => Buffer.from(s, "utf8");
const PG_LINE =
  '{"timestamp":"2024-05-01 12:00:00.123 UTC","user":"alice","dbname":"app","pid":4242,"remote_host":"10.0.0.1","remote_port":51234,"session_id":"6632.1","line_num":3,"ps":"SELECT","session_start":"2024-05-01 11:00:00 UTC","vxid":"3/7","txid":0,"error_severity":"LOG","state_code":"00000","message":"AUDIT: SESSION,1,1,READ,SELECT,,,\\"SELECT 1, \\"\\"x\\"\\"\\",<none>","func_name":"exec_simple_query","file_name":"postgres.c","file_line_num":1234,"application_name":"psql","backend_type":"client backend","leader_pid":77,"query_id":-9223372036854775808}\n';

describe("jsonlog on real pgaudit output", () => {
  let samples: Samples;
  let records: LogRecord[];

  beforeAll(async () => {
    samples = await collectSamples();
    const out = collect(createJsonlogParser, [samples.json]);
    expect(out.malformed).toEqual([]);
    records = out.records;
  });

  it("covers the file byte for byte", () => {
    expect(records.reduce((n, r) => n + r.size, 0)).toBe(samples.json.length);
    expect(records.map((r) => r.offset)).toEqual(
      records.map((_, i) => records.slice(0, i).reduce((n, r) => n + r.size, 0)),
    );
  });

  it("decodes the same audit entries and fields as the csvlog of the same server", () => {
    const csv = collect(createCsvlogParser, [samples.csv]).records;
    expect(records).toHaveLength(csv.length);
    const fields = (r: LogRecord) => ({
      ...r,
      offset: 0,
      size: 0,
      applicationName: r.applicationName || null,
    });
    expect(records.map(fields)).toEqual(csv.map(fields));
    const entries = records.map((r) => parseAuditPayload(r.message)).filter((e) => e !== undefined);
    expect(entries.length).toBeGreaterThan(15);
    expect(entries.find((e) => e.statement.startsWith("INSERT INTO t"))?.statement).toBe(
      `INSERT INTO t (v) VALUES ('a,b'), ('x"y'), (E'line1\\nline2\\ttab\\\\bs'), ('héllo ✓ 😀')`,
    );
  });
});

describe("jsonlog", () => {
  it("maps PostgreSQL's keys, joins host:port and func, file:line, keeps 64-bit query_id digits", () => {
    const { records, malformed } = collect(createJsonlogParser, [enc(PG_LINE)]);
    expect(malformed).toEqual([]);
    expect(records[0]).toEqual({
      offset: 0,
      size: Buffer.byteLength(PG_LINE),
      timestamp: "2024-05-01 12:00:00.123 UTC",
      user: "alice",
      database: "app",
      pid: 4242,
      remoteHost: "10.0.0.1:51234",
      sessionId: "6632.1",
      sessionLine: 3,
      commandTag: "SELECT",
      sessionStart: "2024-05-01 11:00:00 UTC",
      virtualTransactionId: "3/7",
      transactionId: "0",
      severity: "LOG",
      sqlState: "00000",
      message: 'AUDIT: SESSION,1,1,READ,SELECT,,,"SELECT 1, ""x""",<none>',
      detail: null,
      hint: null,
      internalQuery: null,
      internalPosition: null,
      context: null,
      query: null,
      queryPosition: null,
      location: "exec_simple_query, postgres.c:1234",
      applicationName: "psql",
      backendType: "client backend",
      leaderPid: 77,
      queryId: "-9223372036854775808",
    });
  });

  it("decodes escapes, \\u surrogate pairs and raw UTF-8 like JSON.parse", () => {
    const message = 'tab\there "q" back\\slash nl\nctl\u0001 é ✓ 😀 \ud83d\ude00';
    const line = `{"timestamp":"t","error_severity":"LOG","message":${JSON.stringify(message).replace("😀", "\\ud83d\\ude00")}}\n`;
    const { records } = collect(createJsonlogParser, [enc(line)]);
    expect(records[0]?.message).toBe(message);
  });

  it("accepts any valid JSON layout (whitespace, key order, unknown keys) through JSON.parse", () => {
    const line =
      '{ "message" : "m", "extra": {"a": [1, true]}, "timestamp": "t", "pid": 5, "query_id": 12345678901234567890 }\r\n';
    const { records, malformed } = collect(createJsonlogParser, [enc(line)]);
    expect(malformed).toEqual([]);
    expect(records[0]).toMatchObject({
      message: "m",
      timestamp: "t",
      pid: 5,
      queryId: "12345678901234567890",
    });
  });

  it("keeps a line that is not UTF-8 (SQL_ASCII), its bytes escaped and the record flagged", () => {
    // Hand-made: a Latin-1 "é" (0xe9) inside a string, beside a JSON escape, an escaped backslash
    // and valid UTF-8, as PostgreSQL's jsonlog writes a SQL_ASCII database's statement.
    const bad = Buffer.concat([
      enc('{"timestamp":"2024-05-01 12:00:00.000 UTC","user":"caf'),
      Buffer.from([0xe9]),
      enc(String.raw`","message":"a\\b \"q\" \n ü `),
      Buffer.from([0xff]),
      enc('","pid":7}\n'),
    ]);
    const good = enc(`${String.raw`{"timestamp":"t","message":"a\\b"}`}\n`);
    for (const step of [bad.length, 3, 1]) {
      const input = Buffer.concat([bad, good]);
      const chunks: Buffer[] = [];
      for (let i = 0; i < input.length; i += step) chunks.push(input.subarray(i, i + step));
      const { records, malformed } = collect(createJsonlogParser, chunks);
      expect(malformed).toEqual([]);
      expect(records.map((r) => [r.user, r.message, r.pid, r.invalidUtf8, r.size])).toEqual([
        ["caf\\xe9", 'a\\\\b "q" \n ü \\xff', 7, true, bad.length],
        [null, "a\\b", null, undefined, good.length],
      ]);
    }
  });

  it("reports invalid JSON (with or without bytes that are not UTF-8), truncation and over-long lines, and goes on", () => {
    const good = '{"timestamp":"t","message":"ok"}\n';
    const parts = [
      enc(`{"timestamp":"t","message":"bad\\x"}\n`),
      enc(good),
      enc("not json\n"),
      Buffer.from([0x7b, 0xff, 0x7d, 0x0a]),
      enc(`{"timestamp":"t","message":"${"y".repeat(300)}"}\n`),
      enc(good),
      enc('{"timestamp":"t","mess'),
    ];
    const input = Buffer.concat(parts);
    const at = (k: number) => parts.slice(0, k).reduce((n, p) => n + p.length, 0);
    for (const step of [input.length, 7]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < input.length; i += step) chunks.push(input.subarray(i, i + step));
      const { records, malformed } = collect(createJsonlogParser, chunks, { maxRecordBytes: 200 });
      expect(records.map((r) => [r.message, r.offset])).toEqual([
        ["ok", at(1)],
        ["ok", at(5)],
      ]);
      expect(malformed.map((m) => m.code)).toEqual([
        ParseErrorCode.INVALID_JSON,
        ParseErrorCode.INVALID_JSON,
        ParseErrorCode.INVALID_JSON, // not UTF-8, and not JSON once its byte is escaped either
        ParseErrorCode.RECORD_TOO_LARGE,
        ParseErrorCode.TRUNCATED_RECORD,
      ]);
      expect(malformed.map((m) => [m.offset, m.size])).toEqual(
        [0, 2, 3, 4, 6].map((k) => [at(k), parts[k]!.length]),
      );
    }
  });
});
