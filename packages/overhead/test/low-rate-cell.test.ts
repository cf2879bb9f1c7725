/**
 * bench --quick's low fixed-rate cell (`tpcb@300tps`: pgbench -R 300 from 2 clients) in the fit:
 * at a few hundred transactions a second every line finds the logging collector asleep, so the
 * collector's cost of a wake-up is measured there instead of extrapolated from fast runs. The
 * backends' fit leaves the cell out (its runs scatter most); their cost per wake-up they cause is
 * a column where the fast points' rates spread the wake-ups per line u(λ) enough to tell it from
 * the cost per line. Synthetic runs from known costs (the collector awake 200 µs per wake-up, so
 * u spreads 0.2–0.7): the fit recovers them and prices a durable server's low rate.
 */
import { type CostFeatures, costFeature, wakeupsPerLine } from "@auditpipe/estimate";
import {
  type Calibration,
  type CalibrationPoint,
  calibrationProblem,
  calibrationSchema,
  fitCalibration,
  predictOverhead,
  renderFit,
} from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { normals } from "./_synthetic.ts";

/** The truth the runs are drawn from: µs per line, statement, logging transaction and wake-up. */
const TRUTH = {
  backendLine: 5,
  statement: 4,
  transaction: 10,
  backendWakeup: 12,
  collectorWakeup: 20,
  collectorLine: 3,
  awakeUs: 200,
};
const STATEMENTS = 7;

function point(
  configuration: string,
  lines: number,
  linesPerSec: number,
  options: { pgaudit?: boolean; rate?: number; baselineUs?: number; seed: number },
): CalibrationPoint {
  const u = wakeupsPerLine(linesPerSec, TRUTH.awakeUs);
  const pgaudit = options.pgaudit ?? true;
  const collector = lines * (TRUTH.collectorLine + TRUTH.collectorWakeup * u);
  const backends =
    lines * TRUTH.backendLine +
    (pgaudit ? STATEMENTS * TRUTH.statement : 0) +
    TRUTH.transaction +
    lines * u * TRUTH.backendWakeup;
  const runs = 4;
  const noise = normals(runs, 0, 3, options.seed);
  const samples = noise.map((e) => backends + collector + e);
  const baseline = options.baselineUs ?? 250;
  return {
    configuration,
    workload: options.rate ? "tpcb@300tps" : "tpcb",
    clients: 2,
    ...(options.rate ? { rate: options.rate } : {}),
    linesPerTransaction: lines,
    auditedStatementsPerTransaction: pgaudit ? STATEMENTS : 0,
    logElsewhere: false,
    addedUs: { median: backends + collector, low: backends + collector - 5, high: backends + collector + 5 },
    samples,
    addedLoggerUs: collector,
    baselineServerUs: { median: baseline, low: baseline - 5, high: baseline + 5 },
    statementsPerTransaction: STATEMENTS,
    baselineSamples: samples.map(() => baseline),
    loggerSamples: samples.map(() => collector),
    linesPerSecSamples: samples.map(() => linesPerSec),
    wakeupSamples: samples.map(() => lines * u),
  };
}

const FAST = [
  point("read", 1, 2_000, { seed: 1 }),
  point("write", 4, 6_800, { seed: 2 }),
  point("all", 7, 10_500, { seed: 3 }),
  point("log_statement", 7, 10_500, { pgaudit: false, seed: 4 }),
  point("all", 7, 20_000, { seed: 5 }),
];
// At 300 TPS a transaction costs more CPU (its backends wake for each one): the dearer baseline
// is the rate's, not a busier machine's, so the runs stay as measured.
const LOW = point("all", 7, 2_100, { rate: 300, baselineUs: 450, seed: 6 });

/** What the truth adds per transaction at λ lines a second. */
function truth(lines: number, linesPerSec: number): number {
  const u = wakeupsPerLine(linesPerSec, TRUTH.awakeUs);
  return (
    lines * (TRUTH.backendLine + TRUTH.collectorLine + u * (TRUTH.collectorWakeup + TRUTH.backendWakeup)) +
    STATEMENTS * TRUTH.statement +
    TRUTH.transaction
  );
}

const input = (linesPerSec: number) => ({
  linesPerTransaction: 7,
  auditedStatementsPerTransaction: STATEMENTS,
  logElsewhere: false,
  baselineUsPerTransaction: 5000,
  baselineCpuUsPerTransaction: 600,
  linesPerSec,
});

describe("the low fixed-rate cell in the calibration", () => {
  const fit = fitCalibration([...FAST, LOW])!;

  it("fits the backends' cost per collector wake-up as a column of its own", () => {
    const cpu = fit.cpu!;
    expect(cpu.columns).toContain("wakeups");
    const wakeup = cpu.coefficients[cpu.columns.indexOf("wakeups")]!;
    expect(wakeup).toBeGreaterThan(TRUTH.backendWakeup * 0.5);
    expect(wakeup).toBeLessThan(TRUTH.backendWakeup * 1.5);
    const collector = cpu.collector!;
    expect(collector.wakeupUs.estimate).toBeCloseTo(TRUTH.collectorWakeup, 0);
    expect(collector.lineUs.estimate).toBeCloseTo(TRUTH.collectorLine, 0);
    expect(renderFit(fit)).toContain(`per collector wake-up they cause ${wakeup.toFixed(2)} µs`);
    expect(collector.awakeUs).toBeGreaterThan(TRUTH.awakeUs * 0.5);
    expect(collector.awakeUs).toBeLessThan(TRUTH.awakeUs * 2);
  });

  it("keeps the rate's dearer baseline out of the reference state and of the cheapest statement cost", () => {
    const cpu = fit.cpu!;
    expect(cpu.referenceUsPerStatement).toBeCloseTo(250 / STATEMENTS, 6);
    expect(cpu.baselineServerUsPerStatement.estimate).toBeCloseTo(250 / STATEMENTS, 6);
  });

  it("prices a durable server's few hundred transactions a second within 10 % of the truth", () => {
    for (const rate of [300 * 7, 500 * 7]) {
      const added = predictOverhead(fit, input(rate)).addedUs;
      expect(Math.abs(added.estimate / truth(7, rate) - 1)).toBeLessThan(0.1);
      expect(added.low).toBeLessThanOrEqual(truth(7, rate));
      expect(added.high).toBeGreaterThanOrEqual(truth(7, rate));
    }
  });

  it("scaled like a fast run (as if the machine were busier), the cell would hide the cost it measures", () => {
    const { rate: _rate, ...unrated } = LOW;
    const scaled = fitCalibration([...FAST, unrated])!;
    const low = predictOverhead(scaled, input(2_100)).addedUs.estimate;
    expect(low).toBeLessThan(predictOverhead(fit, input(2_100)).addedUs.estimate);
  });

  it("is written as a file that reads back; where the rates leave u(λ) alike, no wake-ups column", () => {
    const file: Calibration = {
      kind: "auditpipe-calibration",
      version: 4,
      createdAt: "2026-12-07T00:00:00.000Z",
      host: "h",
      environment: {} as Calibration["environment"],
      fit,
      points: [...FAST, LOW],
    };
    expect(calibrationProblem(file)).toBeNull();
    const parsed = calibrationSchema.safeParse(JSON.parse(JSON.stringify(file)));
    // The environment is a stub here: only the fit and the points are checked.
    const issues = parsed.success ? [] : parsed.error.issues.filter((i) => i.path[0] !== "environment");
    expect(issues).toEqual([]);
    // write and all at 6,800 and 10,500 lines/s: u 0.42 and 0.32, too alike to price a wake-up apart.
    const alike = fitCalibration([FAST[1]!, FAST[2]!, FAST[3]!, LOW])!;
    expect(alike.cpu!.columns).toContain("lines");
    expect(alike.cpu!.columns).not.toContain("wakeups");
  });
});

describe("the wake-ups feature", () => {
  it("is the collector's wake-ups per transaction, 0 where not priced", () => {
    const w: CostFeatures = {
      linesPerTransaction: 7,
      auditedStatementsPerTransaction: 7,
      logElsewhere: false,
    };
    expect(costFeature("wakeups", w)).toBe(0);
    expect(costFeature("wakeups", { ...w, wakeupsPerTransaction: 4.9 })).toBe(4.9);
    expect(costFeature("wakeups", { ...w, wakeupsPerTransaction: -1 })).toBe(0);
  });
});
