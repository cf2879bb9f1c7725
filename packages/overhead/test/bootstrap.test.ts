import { bootstrapMedian, median, overheadInterval, runsToResolve } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { normals } from "./_synthetic.ts";

describe("bootstrap interval of the median", () => {
  it("brackets the median, is reproducible for a seed, and narrows with more runs", () => {
    const few = normals(5, 1000, 100, 1);
    const many = normals(80, 1000, 100, 1);
    const a = bootstrapMedian(few, { seed: 7 });
    expect(a).toEqual(bootstrapMedian(few, { seed: 7 }));
    expect(a.low).toBeLessThanOrEqual(a.median);
    expect(a.high).toBeGreaterThanOrEqual(a.median);
    expect(a.median).toBe(median(few));
    const b = bootstrapMedian(many, { seed: 7 });
    expect(b.high - b.low).toBeLessThan(a.high - a.low);
  });

  it("covers the true median about 95% of the time", () => {
    let covered = 0;
    const trials = 120;
    for (let t = 0; t < trials; t++) {
      const ci = bootstrapMedian(normals(25, 500, 50, 100 + t), { seed: t, resamples: 1000 });
      if (ci.low <= 500 && 500 <= ci.high) covered++;
    }
    // Percentile bootstrap of a median with 25 runs: close to nominal; allow sampling error.
    expect(covered / trials).toBeGreaterThan(0.88);
    expect(covered / trials).toBeLessThanOrEqual(1);
  });

  it("one run: the interval is that run", () => {
    expect(bootstrapMedian([42])).toEqual({ median: 42, low: 42, high: 42 });
  });
});

describe("overhead against the baseline", () => {
  it("resolves a clear 20% loss", () => {
    const o = overheadInterval(normals(6, 1000, 20, 2), normals(6, 800, 20, 3));
    expect(o.significant).toBe(true);
    expect(o.runsToResolve).toBeNull();
    expect(o.median).toBeCloseTo(0.2, 1);
    expect(o.low).toBeGreaterThan(0.1);
    expect(o.high).toBeLessThan(0.3);
  });

  it("says a 3% difference in ±15% noise is not significant with 3 runs, and how many would resolve it", () => {
    const o = overheadInterval(normals(3, 1000, 150, 4), normals(3, 970, 150, 5));
    expect(o.significant).toBe(false);
    expect(o.low).toBeLessThan(0);
    expect(o.high).toBeGreaterThan(0);
    expect(o.runsToResolve).toBeGreaterThan(3);
  });

  it("never calls a single run per side significant, however far apart", () => {
    const o = overheadInterval([1000], [500]);
    expect(o.median).toBeCloseTo(0.5);
    expect(o.significant).toBe(false);
    expect(o.runsToResolve).toBe(3);
  });

  it("runsToResolve scales with the square of interval width over effect", () => {
    expect(runsToResolve(4, 0.1, 0.05)).toBe(16);
    expect(runsToResolve(4, 0.02, 0.05)).toBe(5); // already narrow: at least one more run
    expect(runsToResolve(3, 0.05, 0)).toBe(75); // near zero: aims at a 1% difference
  });
});
