/**
 * The contract every log format's parser keeps (conventions: one suite, every implementation, as
 * testSink does for sinks), run over the real captures in fixtures/cases (written by PostgreSQL
 * 15 + pgaudit through fixtures/generate, never typed by hand):
 * - the captures read with no malformed report, and agree with an oracle that shares no code
 *   with the parser (csv-parse over the same window's csvlog);
 * - however the bytes are cut into chunks, the same records and malformed reports come out, for
 *   clean input and for damaged input;
 * - random bytes never throw: every byte ends up in a record or a malformed report (with its
 *   code, offset and size inside the input), and the real records after the garbage are found.
 */
import { join } from "node:path";
import { listCases, readFixture } from "@auditpipe/fixtures";
import {
  createParser,
  type LogFormat,
  type LogRecord,
  type MalformedRecord,
  type ParserOptions,
} from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

export interface Collected {
  records: LogRecord[];
  malformed: MalformedRecord[];
}

export interface ParserSpec {
  format: LogFormat;
  /** The capture files of this format in each case directory. */
  files: string[];
  options?: ParserOptions;
  /**
   * How records and malformed reports account for the input: `tiles`, one after another from
   * byte 0 to the end; `sums`, their sizes add up to the input (syslog: a message's chunk lines
   * interleave with other processes' lines, so a record's bytes are not contiguous).
   */
  accounting: "tiles" | "sums";
  /** Checks what the parser read from a capture against the oracle; `csvlog` is the same window's csvlog. */
  differential(got: Collected, csvlog: Buffer, data: Buffer): void;
}

const CASES_DIR = join(repoRoot(), "fixtures", "cases");

/** Runs the parser over `chunks` (in order) and collects what it reports. */
export function collect(format: LogFormat, chunks: Uint8Array[], options?: ParserOptions): Collected {
  const out: Collected = { records: [], malformed: [] };
  const parser = createParser(
    format,
    { record: (r) => out.records.push(r), malformed: (m) => out.malformed.push(m) },
    options,
  );
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return out;
}

/** Cuts `input` at the given points (wrapped into the input, sorted, deduplicated). */
function cut(input: Uint8Array, points: number[]): Uint8Array[] {
  const at = [...new Set(points.map((p) => p % (input.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...at, input.length]) {
    chunks.push(input.subarray(prev, p));
    prev = p;
  }
  return chunks;
}

/** Every byte of the input is in a record or a malformed report (see ParserSpec.accounting). */
export function expectAccounted(out: Collected, length: number, accounting: ParserSpec["accounting"]): void {
  for (const m of out.malformed) {
    expect(m.code).toMatch(/^AUDITPIPE_ERR_/);
    expect(m.offset).toBeGreaterThanOrEqual(0);
    expect(m.size).toBeGreaterThan(0);
    expect(m.offset + m.size).toBeLessThanOrEqual(length);
  }
  const spans = [...out.records, ...out.malformed].sort((a, b) => a.offset - b.offset);
  if (accounting === "sums") {
    expect(spans.reduce((sum, s) => sum + s.size, 0)).toBe(length);
    return;
  }
  let at = 0;
  for (const s of spans) {
    expect(s.offset).toBe(at);
    expect(s.size).toBeGreaterThan(0);
    at += s.size;
  }
  expect(at).toBe(length);
}

/** Real input with damage a parser must get past: a stray quote, bytes that are not UTF-8, a cut-off copy of the start. */
function damage(input: Buffer): Buffer {
  const third = Math.floor(input.length / 3);
  return Buffer.concat([
    input.subarray(0, third),
    Buffer.from([0x22, 0xff, 0x7b, 0x0a]),
    input.subarray(third),
    input.subarray(0, 50),
  ]);
}

export function testParser(spec: ParserSpec): void {
  const { format, options, accounting } = spec;
  describe(`parser conformance: ${format}`, () => {
    const cases = listCases(CASES_DIR);
    const captures = cases.flatMap((name) => spec.files.map((file) => [name, file] as const));

    it("has the captures of fixtures/cases to run on", () => {
      // A missing fixtures directory fails here instead of leaving every property below with nothing.
      expect(cases.length).toBeGreaterThanOrEqual(5);
    });

    it.each(captures)("reads %s/%s cleanly and agrees with the csvlog oracle", (name, file) => {
      const data = readFixture(join(CASES_DIR, name), file);
      const got = collect(format, [data], options);
      expect(got.malformed).toEqual([]);
      expect(got.records.length).toBeGreaterThan(0);
      expectAccounted(got, data.length, accounting);
      spec.differential(got, readFixture(join(CASES_DIR, name), "postgresql.csv.gz"), data);
    });

    const sample = (): Buffer => readFixture(join(CASES_DIR, "session-all"), spec.files[0]!);

    it("gives the same records for any chunking of a capture, also inside UTF-8 sequences", () => {
      const data = sample();
      const whole = collect(format, [data], options);
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 60 }), (points) => {
          expect(collect(format, cut(data, points), options)).toEqual(whole);
        }),
        { numRuns: 40 },
      );
    });

    it("gives the same records and malformed reports for any chunking of a damaged capture", () => {
      const data = damage(sample());
      const whole = collect(format, [data], options);
      expect(whole.malformed.length).toBeGreaterThan(0);
      expectAccounted(whole, data.length, accounting);
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 60 }), (points) => {
          expect(collect(format, cut(data, points), options)).toEqual(whole);
        }),
        { numRuns: 40 },
      );
      const head = data.subarray(0, 8192);
      const bytes = Array.from({ length: head.length }, (_, i) => head.subarray(i, i + 1));
      expect(collect(format, bytes, options)).toEqual(collect(format, [head], options));
    });

    it("never throws on random bytes: every byte is a record or a malformed report, and real records after them are read", () => {
      // The first 64 KiB, to the end of a line: each run parses it, so it is kept small.
      const whole = sample();
      const data = whole.subarray(0, whole.lastIndexOf(0x0a, 64 * 1024) + 1);
      const clean = collect(format, [data], options).records;
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 2000 }), fc.nat(), (garbage, at) => {
          const input = Buffer.concat([garbage, Buffer.from([0x0a]), data]);
          const split = at % (input.length + 1);
          const out = collect(format, [input.subarray(0, split), input.subarray(split)], options);
          expectAccounted(out, input.length, accounting);
          // The garbage may swallow the first record(s) of its line or process, never the last one.
          const last = clean.at(-1)!;
          expect(out.records.at(-1)).toEqual({ ...last, offset: last.offset + garbage.length + 1 });
        }),
        { numRuns: 150 },
      );
    });
  });
}
