/** However the input is cut into chunks, the parsers report exactly the same things. */
import { createCsvlogParser, createJsonlogParser } from "@auditpipe/parse";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, collectSamples, type Samples } from "./pg-samples.ts";

/** Cuts `input` at the given points (sorted, deduplicated, inside the input). */
function cut(input: Buffer, points: number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % (input.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let prev = 0;
  for (const p of [...at, input.length]) {
    chunks.push(input.subarray(prev, p));
    prev = p;
  }
  return chunks;
}

describe.each([
  ["csvlog", createCsvlogParser, "csv"],
  ["jsonlog", createJsonlogParser, "json"],
] as const)("%s chunking", (_name, create, key) => {
  let input: Buffer;
  let damaged: Buffer;

  beforeAll(async () => {
    const samples: Samples = await collectSamples();
    input = samples[key];
    // Bad input too, so resynchronisation is also chunk-independent: a stray quote, invalid
    // UTF-8 and a truncated end.
    const third = Math.floor(input.length / 3);
    damaged = Buffer.concat([
      input.subarray(0, third),
      Buffer.from('"\xff'.split("").map((c) => c.charCodeAt(0))),
      input.subarray(third),
      input.subarray(0, 50),
    ]);
  });

  it("gives identical records for random splits, including inside UTF-8 sequences", () => {
    const whole = collect(create, [input]);
    expect(whole.records.length).toBeGreaterThan(20);
    expect(whole.malformed).toEqual([]);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 60 }), (points) => {
        expect(collect(create, cut(input, points))).toEqual(whole);
      }),
      { numRuns: 150 },
    );
  });

  it("gives identical records and malformed reports for random splits of damaged input", () => {
    const whole = collect(create, [damaged]);
    expect(whole.malformed.length).toBeGreaterThan(0);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 60 }), (points) => {
        expect(collect(create, cut(damaged, points))).toEqual(whole);
      }),
      { numRuns: 150 },
    );
  });

  it("gives identical records fed one byte at a time", () => {
    const bytes: Buffer[] = [];
    for (let i = 0; i < damaged.length; i++) bytes.push(damaged.subarray(i, i + 1));
    expect(collect(create, bytes)).toEqual(collect(create, [damaged]));
  });
});
