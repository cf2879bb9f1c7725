/**
 * Random and mutated real records: nothing throws, records and malformed stretches tile the input
 * exactly, and every record after the damaged one is still found (the record right after it may
 * be swallowed when the damage opened a quote, but then a report covers it).
 */
import {
  createCsvlogParser,
  createJsonlogParser,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type Collected, collect, collectSamples, type Samples } from "./pg-samples.ts";

function expectTiling(out: Collected, length: number): void {
  const spans: (LogRecord | MalformedRecord)[] = [...out.records, ...out.malformed].sort(
    (a, b) => a.offset - b.offset,
  );
  let at = 0;
  for (const s of spans) {
    expect(s.offset).toBe(at);
    expect(s.size).toBeGreaterThan(0);
    at += s.size;
  }
  expect(at).toBe(length);
}

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
  ["csvlog", createCsvlogParser, "csv"],
  ["jsonlog", createJsonlogParser, "json"],
] as const)("%s fuzz", (_name, create, key) => {
  let input: Buffer;
  let original: LogRecord[];

  beforeAll(async () => {
    const samples: Samples = await collectSamples();
    input = samples[key];
    original = collect(create, [input]).records;
  });

  it("survives random bytes, reporting every byte as record or malformed", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.nat(), (garbage, cut) => {
        const data = Buffer.concat([garbage, input.subarray(0, cut % 3000)]);
        const chunks = [data.subarray(0, cut % (data.length + 1)), data.subarray(cut % (data.length + 1))];
        const out = collect(create, chunks);
        expectTiling(out, data.length);
      }),
      { numRuns: 300 },
    );
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

        const out = collect(create, [data]);
        expectTiling(out, data.length);
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
