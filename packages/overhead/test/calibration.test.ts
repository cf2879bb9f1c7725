import { type CalibrationPoint, fitCalibration, predictOverhead, seededRng } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";

/** Synthetic runs from known costs: added µs = 7·lines + 1.5·statements (+ noise). */
function synthetic(noise: number, seed: number): CalibrationPoint[] {
  const rng = seededRng(seed);
  const shapes: Array<[string, number, number, boolean]> = [
    ["write", 4, 5, false],
    ["read", 1, 5, false],
    ["all", 5, 5, false],
    ["object", 3, 5, false],
    ["log_statement", 7, 0, false],
    ["write", 4, 5, true],
    ["all", 5, 5, true],
    ["read-heavy all", 10, 11, false],
  ];
  return shapes.map(([configuration, lines, statements, elsewhere]) => {
    const truth = (elsewhere ? 3 : 7) * lines + 1.5 * statements;
    const y = truth + noise * (rng() * 2 - 1);
    return {
      configuration,
      workload: "tpcb",
      clients: 2,
      linesPerTransaction: lines,
      auditedStatementsPerTransaction: statements,
      logElsewhere: elsewhere,
      addedUs: { median: y, low: y - 5, high: y + 5 },
    };
  });
}

describe("calibration fit", () => {
  it("recovers known coefficients exactly from noiseless runs", () => {
    const fit = fitCalibration(synthetic(0, 1))!;
    expect(fit.lineCostUs.estimate).toBeCloseTo(7, 6);
    expect(fit.lineCostElsewhereUs!.estimate).toBeCloseTo(3, 6);
    expect(fit.statementCostUs!.estimate).toBeCloseTo(1.5, 6);
    expect(fit.r2).toBeCloseTo(1, 9);
    expect(fit.residualStdErrUs).toBeCloseTo(0, 6);
    expect(fit.degreesOfFreedom).toBe(5);
  });

  it("recovers them within the noise, and reports the worse fit", () => {
    const fit = fitCalibration(synthetic(4, 2))!;
    expect(Math.abs(fit.lineCostUs.estimate - 7)).toBeLessThan(1.5);
    expect(Math.abs(fit.statementCostUs!.estimate - 1.5)).toBeLessThan(1.5);
    expect(fit.r2).toBeLessThan(1);
    expect(fit.r2).toBeGreaterThan(0.8);
    expect(fit.residualStdErrUs!).toBeGreaterThan(0);
    expect(fit.lineCostUs.low).toBeLessThanOrEqual(fit.lineCostUs.estimate);
    expect(fit.lineCostUs.high).toBeGreaterThanOrEqual(fit.lineCostUs.estimate);
  });

  it("drops the statement cost when it cannot be told from the line cost", () => {
    const points = synthetic(0, 3)
      .filter((p) => !p.logElsewhere)
      .map((p) => ({ ...p, auditedStatementsPerTransaction: p.linesPerTransaction * 2 }));
    const fit = fitCalibration(points)!;
    expect(fit.statementCostUs).toBeNull();
    expect(fit.lineCostElsewhereUs).toBeNull();
  });

  it("predicts an interval that holds the true overhead of an unseen configuration", () => {
    const fit = fitCalibration(synthetic(2, 4))!;
    // 6 lines, 5 statements per transaction at 1000 µs per transaction: truth 49.5 µs added.
    const p = predictOverhead(fit, {
      linesPerTransaction: 6,
      auditedStatementsPerTransaction: 5,
      logElsewhere: false,
      baselineUsPerTransaction: 1000,
    });
    const truth = 49.5 / 1049.5;
    expect(p.low).toBeLessThan(truth);
    expect(p.high).toBeGreaterThan(truth);
    expect(p.estimate).toBeCloseTo(truth, 2);
  });

  it("returns null when no point logs anything", () => {
    expect(fitCalibration([])).toBeNull();
    expect(fitCalibration(synthetic(0, 5).map((p) => ({ ...p, linesPerTransaction: 0 })))).toBeNull();
  });
});
