/**
 * The span of a short log is written without Intl below 1000 s (no ICU data loaded for it): it
 * must read exactly as the Intl formatter it replaces writes it, ties and trailing zeros included.
 */
import { formatSeconds } from "@auditpipe/meter/projection";
import { describe, expect, it } from "vitest";

const intl = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A fixed-seed generator (xorshift32), so a failure names the same values every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

describe("formatSeconds", () => {
  it("writes what Intl writes: whole numbers, hundredths, ties, and the edges of the fast range", () => {
    const values = [
      0, 1, 5, 10, 59, 59.99, 59.995, 59.994999, 60, 0.005, 0.015, 0.125, 0.1, 0.5, 1.005, 2.675,
    ];
    values.push(32.474, 32.47, 32.4, 99.995, 999.994, 999.995, 999.999, 1000, 1234.5, 1e6 + 0.125, -0, -1.5);
    values.push(Number.NaN, Number.POSITIVE_INFINITY, Number.MIN_VALUE, 0.000001);
    for (let ms = 0; ms < 70_000; ms += 7) values.push(ms / 1000); // spans of whole milliseconds, as reports have
    for (let k = 0; k < 100_000; k += 1) values.push(k / 100 + 0.005); // every tie below 1000
    const random = seeded(24);
    for (let i = 0; i < 50_000; i++) values.push(random() * 1200);
    for (const x of values)
      if (formatSeconds(x) !== intl.format(x)) expect(formatSeconds(x)).toBe(intl.format(x));
  });
});
