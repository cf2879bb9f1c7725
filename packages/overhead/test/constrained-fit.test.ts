import {
  type Calibration,
  type CalibrationPoint,
  calibrationProblem,
  fitCalibration,
  median,
  predictOverhead,
  seededRng,
} from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { normals } from "./_synthetic.ts";

/**
 * A CPU-basis point: each run's added server µs from known costs (15 per line, 5 per statement,
 * `perTransaction` per logging transaction) times the machine's state at that run (`state`: 1 is
 * the reference, 2 makes every statement and every log line cost twice as much), with noise.
 */
function point(
  configuration: string,
  lines: number,
  statements: number,
  perTransaction: number,
  state: (run: number) => number,
  seed: number,
  runs = 8,
): CalibrationPoint {
  const truth = 15 * lines + 5 * statements + perTransaction;
  const noise = normals(runs, 0, 10, seed);
  const samples = noise.map((n, i) => truth * state(i) + n);
  const baselineSamples = Array.from({ length: runs }, (_, i) => 7 * 30 * state(i));
  const m = median(samples);
  return {
    configuration,
    workload: "tpcb",
    clients: 2,
    linesPerTransaction: lines,
    auditedStatementsPerTransaction: statements,
    logElsewhere: false,
    addedUs: { median: m, low: m - 10, high: m + 10 },
    samples,
    addedLoggerUs: 0.3 * m,
    baselineServerUs: { median: 210, low: 200, high: 220 },
    statementsPerTransaction: 7,
    baselineSamples,
  };
}

const steady = (): number => 1;

describe("the constrained calibration", () => {
  it("holds a cost at zero where least squares would fit it negative, and no interval goes below zero", () => {
    // The truth has no per-transaction cost; read's runs come out low, which least squares
    // would explain with a negative one.
    const fit = fitCalibration([
      { ...point("read", 1, 7, 0, steady, 1), samples: normals(8, 20, 10, 11) },
      point("write", 4, 7, 0, steady, 2),
      point("all", 7, 7, 0, steady, 3),
      point("log_statement", 7, 0, 0, steady, 4),
    ])!;
    for (const c of [fit.lineCostUs, fit.statementCostUs!, fit.transactionCostUs!]) {
      expect(c.estimate).toBeGreaterThanOrEqual(0);
      expect(c.low).toBeGreaterThanOrEqual(0);
      expect(c.high).toBeGreaterThanOrEqual(c.estimate);
    }
    expect(fit.transactionCostUs!.estimate).toBe(0);
    for (const v of fit.cpu!.coefficients) expect(v).toBeGreaterThanOrEqual(0);
    // Nothing logged, nothing predicted, and never less than nothing.
    const p = predictOverhead(fit, {
      linesPerTransaction: 0.1,
      auditedStatementsPerTransaction: 0,
      logElsewhere: false,
      baselineUsPerTransaction: 1000,
      baselineCpuUsPerTransaction: 250,
    });
    expect(p.cpuBound!.estimate).toBeGreaterThanOrEqual(0);
  });

  it("fits at the reference state when the machine's state swings from run to run, and scales to another state", () => {
    // Other work comes and goes: each run's statements and log lines cost 1x to 2x what they
    // would on a quiet machine, the same for both (caches, shared cores).
    const rng = seededRng(5);
    const swings = Array.from({ length: 4 }, () => Array.from({ length: 8 }, () => 1 + rng()));
    const points = ["read", "write", "all", "log_statement"].map((name, k) =>
      point(name, [1, 4, 7, 7][k]!, [7, 7, 7, 0][k]!, 60, (run) => swings[k]![run]!, k + 1),
    );
    const fit = fitCalibration(points)!;
    // Without the baseline around each run, the swings are noise: a wider fit.
    const blind = fitCalibration(points.map(({ baselineSamples: _, ...p }) => p))!;
    expect(fit.residualStdErrUs!).toBeLessThan(blind.residualStdErrUs! / 3);
    expect(fit.lineCostUs.high - fit.lineCostUs.low).toBeLessThan(
      (blind.lineCostUs.high - blind.lineCostUs.low) / 3,
    );
    const reference = fit.cpu!.referenceUsPerStatement!;
    const state = reference / 30; // the reference state against the truth's
    expect(fit.lineCostUs.estimate / state).toBeCloseTo(15, 0);
    expect(fit.lineCostUs.low).toBeLessThan(15 * state);
    expect(fit.lineCostUs.high).toBeGreaterThan(15 * state);
    expect(fit.cpu!.relative!.coefficients[0]! * reference).toBeCloseTo(fit.lineCostUs.estimate, 9);
    // A quiet machine (30 µs per statement, the truth's 1x): write is 15·4 + 5·7 + 60 = 155 µs.
    const input = {
      linesPerTransaction: 4,
      auditedStatementsPerTransaction: 7,
      logElsewhere: false,
      baselineUsPerTransaction: 1000,
      baselineCpuUsPerTransaction: 250,
    };
    const quiet = predictOverhead(fit, { ...input, targetUsPerStatement: 30 }).addedUs;
    expect(quiet.low).toBeLessThan(155);
    expect(quiet.high).toBeGreaterThan(155);
    const unscaled = predictOverhead(fit, input).addedUs;
    expect(unscaled.estimate / quiet.estimate).toBeCloseTo(state, 6);
  });
});

const valid: Calibration = {
  kind: "auditpipe-calibration",
  version: 2,
  createdAt: "2026-11-27T00:00:00.000Z",
  host: "h",
  environment: {} as Calibration["environment"],
  fit: {
    lineCostUs: { estimate: 10, low: 8, high: 12 },
    lineCostElsewhereUs: null,
    statementCostUs: null,
    r2: 0.9,
    residualStdErrUs: 5,
    points: 4,
    degreesOfFreedom: 10,
  },
  points: [],
};

describe("what makes a calibration file unusable", () => {
  it("names the first unphysical field", () => {
    expect(calibrationProblem(valid)).toBeNull();
    const negative = {
      ...valid,
      fit: { ...valid.fit, transactionCostUs: { estimate: -20.75, low: -82, high: 41 } },
    };
    expect(calibrationProblem(negative)).toMatchObject({ path: "fit.transactionCostUs.estimate" });
    const outside = { ...valid, fit: { ...valid.fit, lineCostUs: { estimate: 10, low: 11, high: 12 } } };
    expect(calibrationProblem(outside)).toMatchObject({ path: "fit.lineCostUs" });
    const r2 = { ...valid, fit: { ...valid.fit, r2: 1.5 } };
    expect(calibrationProblem(r2)).toMatchObject({ path: "fit.r2" });
  });
});

describe("a version-3 calibration's collector", () => {
  const cpu = {
    columns: ["lines"],
    coefficients: [10],
    covariance: [[1]],
    runs: 3,
    loggerShare: 0.3,
    baselineServerUsPerStatement: { estimate: 50, low: 45, high: 55 },
  };
  const collector = {
    wakeupUs: { estimate: 16.6, low: 2.7, high: 30.5 },
    lineUs: { estimate: 3.3, low: 0, high: 11.6 },
    awakeUs: 123,
    covariance: [
      [29, -17],
      [-17, 10],
    ] as [[number, number], [number, number]],
    residualStdErrUs: 21.4,
    degreesOfFreedom: 5,
    linesPerSec: { low: 910, high: 9476 },
  };
  const v3 = (c: Partial<typeof collector>): Calibration => ({
    ...valid,
    version: 3,
    fit: { ...valid.fit, cpu: { ...cpu, collector: { ...collector, ...c } } },
  });

  it("is read when physical, and names the field when not", () => {
    expect(calibrationProblem(v3({}))).toBeNull();
    expect(calibrationProblem(v3({ wakeupUs: { estimate: -1, low: -3, high: 1 } }))).toMatchObject({
      path: "fit.cpu.collector.wakeupUs.estimate",
    });
    expect(calibrationProblem(v3({ lineUs: { estimate: 3, low: -1, high: 5 } }))).toMatchObject({
      path: "fit.cpu.collector.lineUs",
    });
    expect(calibrationProblem(v3({ awakeUs: -5 }))).toMatchObject({ path: "fit.cpu.collector.awakeUs" });
    expect(calibrationProblem(v3({ linesPerSec: { low: 0, high: 10 } }))).toMatchObject({
      path: "fit.cpu.collector.linesPerSec",
    });
  });

  it("leaves a version-2 file as it was: one cost per line, the collector's share", () => {
    const v2: Calibration = { ...valid, fit: { ...valid.fit, cpu } };
    expect(calibrationProblem(v2)).toBeNull();
    const p = predictOverhead(v2.fit, {
      linesPerTransaction: 4,
      auditedStatementsPerTransaction: 0,
      logElsewhere: false,
      baselineUsPerTransaction: 1000,
      baselineCpuUsPerTransaction: 1000,
      linesPerSec: 50_000,
    });
    // 4 lines at 10 µs whatever the rate.
    expect(p.addedUs.estimate).toBeCloseTo(40, 9);
  });
});
