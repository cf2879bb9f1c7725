import { join } from "node:path";
import {
  createSyslogParser,
  createSyslogReassembler,
  type MalformedRecord,
  ParseErrorCode,
  type SyslogMessage,
} from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { collector, feed, readMaybeGz } from "./_stderr-oracle.ts";

const CASES = [
  "session-all",
  "read-write-once",
  "object-only",
  "ddl-role-object",
  "function-misc-nostatement",
];
const FILES = ["syslog-rfc3164.log.gz", "syslog-rfc5424.log.gz", "syslog-rsyslog-file.log.gz"];
/** The prefix fixtures/ captures were written with (fixtures/README.md). */
const FIXTURE_PREFIX = "%m [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ";
const fixture = (name: string, file: string): Buffer =>
  readMaybeGz(join(repoRoot(), "fixtures/cases", name, file));

function parseSyslog(data: Uint8Array, prefix: string, sizes?: number[]) {
  const c = collector();
  const parser = createSyslogParser(c.sink, { prefix });
  feed(parser, data, sizes);
  return { ...c, stats: parser.stats };
}

describe("syslog parser on real captures (fixtures/; their records are checked in parser-conformance.test.ts)", () => {
  for (const name of CASES) {
    for (const file of FILES) {
      it(`${name}/${file}: counts every line, one message per record, none foreign or incomplete`, () => {
        const data = fixture(name, file);
        const got = parseSyslog(data, FIXTURE_PREFIX);
        expect(got.malformed).toEqual([]);
        const lines = data.toString("utf8").split("\n").length - 1;
        expect(got.stats).toEqual({
          lines,
          foreignLines: 0,
          messages: got.records.length,
          incompleteMessages: 0,
        });
      });
    }
  }

  it("reassembles messages PostgreSQL split into [n-m] chunks", () => {
    const got = parseSyslog(fixture("session-all", "syslog-rfc3164.log.gz"), FIXTURE_PREFIX);
    expect(got.records.some((r) => Buffer.byteLength(r.message) > 900)).toBe(true);
  });
});

// Hand-made lines below, shaped like rsyslog's RFC 3164 file output of PostgreSQL's chunks.
const P = "%m [%p] ";
const head = (pid: number, chunk: string, text: string) =>
  `Nov 23 07:45:32 vm postgres[${pid}]: ${chunk} 2026-11-23 07:45:32.714 UTC [${pid}] ${text}\n`;
const cont = (pid: number, chunk: string, text: string) =>
  `Nov 23 07:45:32 vm postgres[${pid}]: ${chunk} ${text}\n`;

describe("syslog reassembly", () => {
  it("joins interleaved chunks per pid: newline cuts with a newline, length cuts with nothing", () => {
    const text =
      head(1, "[5-1]", "LOG:  AUDIT: a") +
      head(2, "[9-1]", "LOG:  other") +
      cont(1, "[5-2]", "#011b#011c") + // newline cut: PostgreSQL's tab after the newline, escaped
      cont(1, "[5-3]", ` ${"x".repeat(900)}`) + // length cut backed off to the space
      `Nov 23 07:45:32 vm sshd[77]: Accepted publickey\n` +
      head(2, "[10-1]", "ERROR:  boom") +
      head(2, "[10-2]", "STATEMENT:  SELECT boom");
    const got = parseSyslog(Buffer.from(text), P);
    expect(got.malformed).toEqual([]);
    expect(got.records.map((r) => [r.pid, r.severity, r.message, r.query])).toEqual([
      [2, "LOG", "other", null],
      [1, "LOG", `AUDIT: a\nb\tc ${"x".repeat(900)}`, null],
      [2, "ERROR", "boom", "SELECT boom"],
    ]);
    expect(got.stats).toEqual({ lines: 7, foreignLines: 1, messages: 3, incompleteMessages: 0 });
  });

  it("reads [n] chunk numbers (syslog_sequence_numbers = off)", () => {
    const text = head(1, "[1]", "LOG:  a") + cont(1, "[2]", "#011b") + head(1, "[1]", "LOG:  c");
    expect(parseSyslog(Buffer.from(text), P).records.map((r) => r.message)).toEqual(["a\nb", "c"]);
  });

  it("reports a message whose chunk is missing as SYSLOG_INCOMPLETE and keeps the next", () => {
    const a = head(1, "[5-1]", "LOG:  a");
    const b = cont(1, "[5-3]", "#011lost chunk 2");
    const orphan = cont(1, "[6-2]", "#011no first chunk");
    const c = head(1, "[7-1]", "LOG:  next");
    const got = parseSyslog(Buffer.from(a + b + orphan + c), P);
    expect(got.records.map((r) => r.message)).toEqual(["next"]);
    expect(got.malformed).toEqual([
      expect.objectContaining({
        code: ParseErrorCode.SYSLOG_INCOMPLETE,
        offset: 0,
        size: a.length + b.length,
      }),
      expect.objectContaining({ code: ParseErrorCode.SYSLOG_INCOMPLETE, offset: a.length + b.length }),
    ]);
    expect(got.stats.incompleteMessages).toBe(2);
  });

  it("reports garbage, invalid UTF-8 and a truncated last line, and never throws", () => {
    const a = head(1, "[1-1]", "LOG:  kept");
    const garbage = "not a syslog line\n";
    const bad = Buffer.concat([
      Buffer.from(head(2, "[1-1]", "LOG:  x").slice(0, -1)),
      Buffer.from([0xff, 0x0a]),
    ]);
    const c = head(3, "[1-1]", "LOG:  also kept");
    const trunc = head(4, "[1-1]", "LOG:  cut").slice(0, 30);
    const data = Buffer.concat([Buffer.from(a + garbage), bad, Buffer.from(c + trunc)]);
    const got = parseSyslog(data, P, [5]);
    expect(got.records.map((r) => r.message).sort()).toEqual(["also kept", "kept"]);
    expect(got.malformed.map((m) => [m.code, m.offset]).sort()).toEqual(
      [
        [ParseErrorCode.BAD_SYSLOG_LINE, a.length],
        [ParseErrorCode.INVALID_UTF8, a.length + garbage.length],
        [ParseErrorCode.TRUNCATED_RECORD, data.length - trunc.length],
      ].sort(),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (junk) => {
        const d = Buffer.concat([Buffer.from(junk), Buffer.from(`\n${a}`)]);
        expect(parseSyslog(d, P).records.at(-1)?.message).toBe("kept");
      }),
      { numRuns: 200 },
    );
  });

  it("offers message-level reassembly for a network receiver (RFC 5424, no framing)", () => {
    const messages: SyslogMessage[] = [];
    const errors: MalformedRecord[] = [];
    const r = createSyslogReassembler({ message: (m) => messages.push(m), malformed: (e) => errors.push(e) });
    const h = "<134>1 2026-11-23T07:40:38.525577+00:00 vm postgres 10600 - - ";
    r.push(`${h} [3-1] 2026-11-23 07:40:38.525 UTC [10600] LOG:  one`);
    r.push(Buffer.from(`${h} [3-2] #011two`));
    r.push("<134>1 2026-11-23T07:40:38.525577+00:00 vm cron 1 - - hello");
    r.end();
    expect(errors).toEqual([]);
    expect(messages).toEqual([
      expect.objectContaining({
        pid: 10600,
        seq: 3,
        chunks: 2,
        offset: 0,
        lines: ["2026-11-23 07:40:38.525 UTC [10600] LOG:  one", "\ttwo"],
      }),
    ]);
    expect(r.stats).toEqual({ lines: 3, foreignLines: 1, messages: 1, incompleteMessages: 0 });
  });
});
