import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import { createDivertedParser, type LogRecord, type MalformedRecord } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");

/** Whole records of a real log file: csvlog records start a line with a timestamp, jsonlog has one per line. */
function records(data: Buffer, start: RegExp): Buffer[] {
  const text = data.toString("utf8");
  return text
    .split(start)
    .filter((r) => r.length > 0)
    .map((r) => Buffer.from(r.endsWith("\n") ? r : `${r}\n`));
}

/**
 * A stderr file as PostgreSQL's collector leaves it after log_destination changed: its own stderr
 * lines with csvlog and jsonlog records between them. Assembled from the committed captures of one
 * real session (the stderr, csvlog and jsonlog files), each record whole as PostgreSQL wrote it.
 */
function divertedFile(): {
  bytes: Buffer;
  expected: { offset: number; size: number; sessionLine: number }[];
} {
  const stderr = readFixture(CASE, "postgresql.log.gz")
    .toString("utf8")
    .split(/(?<=\n)/);
  const csv = records(readFixture(CASE, "postgresql.csv.gz"), /(?=^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} )/m);
  const json = records(readFixture(CASE, "postgresql.json.gz"), /(?<=\n)/);
  const parts: Buffer[] = [];
  const expected: { offset: number; size: number; sessionLine: number }[] = [];
  let offset = 0;
  const add = (bytes: Buffer, sessionLine?: number): void => {
    if (sessionLine !== undefined) expected.push({ offset, size: bytes.length, sessionLine });
    parts.push(bytes);
    offset += bytes.length;
  };
  for (let i = 0; i < 300; i++) {
    add(Buffer.from(stderr[i % stderr.length]!));
    if (i % 3 === 0) {
      const record = csv[i % csv.length]!;
      add(record, Number(record.toString("utf8").split(",")[6]));
    }
    if (i % 5 === 0) {
      const line = json[i % json.length]!;
      add(line, (JSON.parse(line.toString("utf8")) as { line_num: number }).line_num);
    }
  }
  return { bytes: Buffer.concat(parts), expected };
}

function parse(
  bytes: Buffer,
  cuts: number[],
): { records: LogRecord[]; malformed: MalformedRecord[]; skipped: number } {
  const out = { records: [] as LogRecord[], malformed: [] as MalformedRecord[], skipped: 0 };
  const parser = createDivertedParser({
    record: (r) => out.records.push(r),
    malformed: (m) => out.malformed.push(m),
    skipped: (_offset, size) => {
      out.skipped += size;
    },
  });
  let at = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b)) {
    parser.push(bytes.subarray(at, cut));
    at = cut;
  }
  parser.push(bytes.subarray(at));
  parser.end();
  return out;
}

describe("createDivertedParser", () => {
  const { bytes, expected } = divertedFile();

  it("gives out the csvlog and jsonlog records among a stderr file's lines, at their offsets, and passes over the rest", () => {
    const { records: got, malformed, skipped } = parse(bytes, []);
    expect(malformed).toEqual([]);
    expect(got.map((r) => ({ offset: r.offset, size: r.size, sessionLine: r.sessionLine }))).toEqual(
      expected,
    );
    // Every byte is a record or passed over: nothing is left that a reader would wait for.
    expect(skipped + expected.reduce((sum, e) => sum + e.size, 0)).toBe(bytes.length);
  });

  it("reads the same whatever the chunking", () => {
    const whole = parse(bytes, []);
    fc.assert(
      fc.property(fc.array(fc.nat(bytes.length), { maxLength: 40 }), (cuts) => {
        const cut = parse(bytes, cuts);
        expect(cut.records.map((r) => [r.offset, r.size])).toEqual(
          whole.records.map((r) => [r.offset, r.size]),
        );
        expect(cut.skipped).toBe(whole.skipped);
      }),
      { numRuns: 50 },
    );
  });
});
