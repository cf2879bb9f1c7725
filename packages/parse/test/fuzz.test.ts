/**
 * Mutated real records (the session-all capture in fixtures/): every record after the damaged one
 * is still found (the record right after it may be swallowed when the damage opened a quote, but
 * then a report covers it), and records and malformed stretches still tile the input. Random bytes
 * for every format are in parser-conformance.test.ts.
 */
import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import type { LogFormat, LogRecord } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, expectAccounted } from "./_parser-suite.ts";

const mutation = fc.record({
  record: fc.nat(),
  at: fc.nat(),
  kind: fc.constantFrom("insert", "delete", "replace", "truncate"),
  bytes: fc
    .uint8Array({ minLength: 1, maxLength: 8 })
    .chain((random) =>
      fc.constantFrom(
        random,
        Uint8Array.of(0x22),
        Uint8Array.of(0x2c),
        Uint8Array.of(0x0a),
        Uint8Array.of(0xff),
        Uint8Array.of(0x7b),
      ),
    ),
  length: fc.integer({ min: 1, max: 40 }),
});

describe.each([
  ["csvlog", "postgresql.csv.gz"],
  ["jsonlog", "postgresql.json.gz"],
] as const)("%s fuzz", (format: LogFormat, file) => {
  let input: Buffer;
  let original: LogRecord[];

  beforeAll(() => {
    // The records in the first 16 KiB or so (dozens): each of the many runs parses it all.
    const whole = readFixture(join(repoRoot(), "fixtures", "cases", "session-all"), file);
    const last = collect(format, [whole]).records.find((r) => r.offset + r.size >= 16 * 1024)!;
    input = whole.subarray(0, last.offset + last.size);
    original = collect(format, [input]).records;
  });

  it("finds every record after a damaged one", () => {
    fc.assert(
      fc.property(mutation, ({ record, at, kind, bytes, length }) => {
        const k = record % original.length;
        const target = original[k]!;
        const pos = target.offset + (at % target.size);
        let replacement: Buffer;
        let removed: number;
        if (kind === "insert") [replacement, removed] = [Buffer.from(bytes), 0];
        else if (kind === "delete")
          [replacement, removed] = [Buffer.alloc(0), Math.min(length, target.offset + target.size - pos)];
        else if (kind === "replace") [replacement, removed] = [Buffer.from(bytes.subarray(0, 1)), 1];
        else [replacement, removed] = [Buffer.alloc(0), target.offset + target.size - pos - 1]; // keep the newline
        const data = Buffer.concat([input.subarray(0, pos), replacement, input.subarray(pos + removed)]);
        const shift = replacement.length - removed;

        const out = collect(format, [data]);
        expectAccounted(out, data.length, "tiles");
        const found = new Map(out.records.map((r) => [r.offset, r]));
        for (let j = 0; j < original.length; j++) {
          if (j === k) continue;
          const r = original[j]!;
          const expected = { ...r, offset: j < k ? r.offset : r.offset + shift };
          const got = found.get(expected.offset);
          if (j === k + 1 && got === undefined) {
            // Swallowed by the damaged record: some report must start before it and cover it.
            const cover = [...out.records, ...out.malformed].find(
              (s) => s.offset < expected.offset && s.offset + s.size > expected.offset,
            );
            expect(cover).toBeDefined();
            continue;
          }
          expect(got).toEqual(expected);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
