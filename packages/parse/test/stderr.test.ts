// Real captures (fixtures/) are read in parser-conformance.test.ts: csvlog oracle, chunking, fuzz.
import { createStderrParser, ParseErrorCode } from "@auditpipe/parse";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { collector, feed } from "./_stderr-oracle.ts";

function parseStderr(data: Uint8Array, prefix: string, sizes?: number[]) {
  const c = collector();
  feed(createStderrParser(c.sink, { prefix }), data, sizes);
  return c;
}

// Hand-made input below: lines shaped like PostgreSQL's, damaged on purpose.
describe("stderr parser on bad input", () => {
  const P = "%m [%p] ";
  const line = (pid: number, text: string) => `2026-11-23 07:45:32.714 UTC [${pid}] ${text}\n`;

  it("reports garbage lines with their offsets and keeps the records around them", () => {
    const a = line(1, "LOG:  first");
    const junk = "raw output from an extension\n\tand a tab-led line after it\n";
    const b = line(2, "LOG:  second\n\tcontinued");
    const got = parseStderr(Buffer.from(a + junk + b), P);
    expect(got.records.map((r) => [r.message, r.offset, r.size])).toEqual([
      ["first", 0, Buffer.byteLength(a)],
      ["second\ncontinued", Buffer.byteLength(a + junk), Buffer.byteLength(b)],
    ]);
    expect(got.malformed).toEqual([
      expect.objectContaining({
        code: ParseErrorCode.PREFIX_MISMATCH,
        offset: Buffer.byteLength(a),
        size: Buffer.byteLength(junk),
      }),
    ]);
  });

  it("reports a last line without newline as truncated, with the record it belonged to", () => {
    const a = line(1, "LOG:  complete");
    const b = line(2, "ERROR:  oops").slice(0, -1);
    const got = parseStderr(Buffer.from(a + b), P);
    expect(got.records.map((r) => r.message)).toEqual(["complete"]);
    expect(got.malformed).toEqual([
      expect.objectContaining({ code: ParseErrorCode.TRUNCATED_RECORD, offset: a.length, size: b.length }),
    ]);
    const c = `${line(3, "LOG:  multi")}\tline without end`;
    const got2 = parseStderr(Buffer.from(a + c), P);
    expect(got2.records).toHaveLength(1);
    expect(got2.malformed).toEqual([
      expect.objectContaining({ code: ParseErrorCode.TRUNCATED_RECORD, offset: a.length, size: c.length }),
    ]);
  });

  it("keeps a record that is not UTF-8 (SQL_ASCII), its bytes escaped and flagged, split anywhere", () => {
    // Hand-made: Latin-1 bytes (0xc3 0x28 is no UTF-8) in a head line and in a DETAIL line after a
    // UTF-8 line with a backslash, whose backslash is doubled too once the record is flagged.
    const a = Buffer.from(line(1, "LOG:  before \\"));
    const bad = Buffer.concat([
      Buffer.from(line(2, "LOG:  a \\ b")),
      Buffer.from(line(2, "DETAIL:  caf").slice(0, -1)),
      Buffer.from([0xc3, 0x28, 0x0a]),
    ]);
    const c = Buffer.from(line(3, "LOG:  after é"));
    const data = Buffer.concat([a, bad, c]);
    for (const sizes of [[data.length], [1], [7, 3]]) {
      const got = parseStderr(data, P, sizes);
      expect(got.malformed).toEqual([]);
      expect(got.records.map((r) => [r.message, r.detail, r.invalidUtf8, r.size])).toEqual([
        ["before \\", null, undefined, a.length],
        ["a \\\\ b", "caf\\xc3(", true, bad.length],
        ["after é", null, undefined, c.length],
      ]);
    }
  });

  it("skips records larger than maxRecordBytes and finds the next one", () => {
    const big = line(1, `LOG:  ${"x".repeat(500)}`);
    const next = line(2, "LOG:  small");
    const c = collector();
    feed(createStderrParser(c.sink, { prefix: P, maxRecordBytes: 200 }), Buffer.from(big + next), [64]);
    expect(c.records.map((r) => r.message)).toEqual(["small"]);
    expect(c.malformed).toEqual([
      expect.objectContaining({ code: ParseErrorCode.RECORD_TOO_LARGE, offset: 0, size: big.length }),
    ]);
  });

  it("attaches DETAIL/HINT/STATEMENT lines and strips ` at character N` into queryPosition", () => {
    const text =
      line(7, 'ERROR:  duplicate key value violates unique constraint "t_pkey"') +
      line(7, "DETAIL:  Key (id)=(1) already exists.") +
      line(7, "HINT:  two\n\tlines") +
      line(7, "STATEMENT:  INSERT INTO t\n\tVALUES (1)") +
      line(7, 'ERROR:  syntax error at or near "x" at character 8') +
      line(7, "LOG:  AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 'at character 5',<not logged>");
    const got = parseStderr(Buffer.from(text), P);
    expect(
      got.records.map(({ severity, message, detail, hint, query, queryPosition }) => ({
        severity,
        message,
        detail,
        hint,
        query,
        queryPosition,
      })),
    ).toMatchInlineSnapshot(`
      [
        {
          "detail": "Key (id)=(1) already exists.",
          "hint": "two
      lines",
          "message": "duplicate key value violates unique constraint "t_pkey"",
          "query": "INSERT INTO t
      VALUES (1)",
          "queryPosition": null,
          "severity": "ERROR",
        },
        {
          "detail": null,
          "hint": null,
          "message": "syntax error at or near "x"",
          "query": null,
          "queryPosition": 8,
          "severity": "ERROR",
        },
        {
          "detail": null,
          "hint": null,
          "message": "AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 'at character 5',<not logged>",
          "query": null,
          "queryPosition": null,
          "severity": "LOG",
        },
      ]
    `);
  });

  it("never throws on random bytes and still finds a valid record after them", () => {
    const good = line(9, "LOG:  survivor");
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 1, max: 50 }), (junk, size) => {
        const data = Buffer.concat([Buffer.from(junk), Buffer.from(`\n${good}`)]);
        const got = parseStderr(data, P, [size]);
        expect(got.records.at(-1)?.message).toBe("survivor");
      }),
      { numRuns: 200 },
    );
  });
});
