/**
 * Lines priced by kind (calibration version 5). A pgAudit MISC line (BEGIN, COMMIT) costs the
 * backends far less than a statement's line, and the overhead proof's shop workload logs 2 MISC
 * and 6 nested lines (its foreign-key checks) beside 6 statement lines under `all`: priced alike,
 * the estimate put its `all` 30–50 % above what pgbench lost. bench --quick's TPC-B and
 * read-heavy points (2 MISC lines beside 5 statement lines, and beside 10) tell the two costs
 * apart. Synthetic runs from known costs; the points' shapes are bench's.
 */
import { type CostFeatures, costFeature, kindFeatures, wakeupsPerLine } from "@auditpipe/estimate";
import { type CalibrationPoint, fitCalibration, predictOverhead, renderFit } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { normals } from "./_synthetic.ts";

const TRUTH = {
  statementLine: 10,
  miscLine: 1,
  statement: 2,
  collectorWakeup: 9,
  collectorLine: 1,
  awakeUs: 200,
};
/** The baseline's server µs per statement: the same machine state at every point. */
const BASELINE_PER_STATEMENT = 36;

function point(
  configuration: string,
  workload: string,
  shape: { statementLines: number; misc: number; statements: number; pgaudit?: boolean },
  seed: number,
  kinds = true,
): CalibrationPoint {
  const lines = shape.statementLines + shape.misc;
  const linesPerSec = lines * 2000;
  const u = wakeupsPerLine(linesPerSec, TRUTH.awakeUs);
  const pgaudit = shape.pgaudit ?? true;
  const collector = lines * (TRUTH.collectorLine + TRUTH.collectorWakeup * u);
  const backends =
    shape.statementLines * TRUTH.statementLine +
    shape.misc * TRUTH.miscLine +
    (pgaudit ? shape.statements * TRUTH.statement : 0);
  const samples = normals(4, backends + collector, 2, seed);
  const baseline = BASELINE_PER_STATEMENT * shape.statements;
  return {
    configuration,
    workload,
    clients: 2,
    linesPerTransaction: lines,
    auditedStatementsPerTransaction: pgaudit ? shape.statements : 0,
    logElsewhere: false,
    addedUs: { median: backends + collector, low: backends + collector - 5, high: backends + collector + 5 },
    samples,
    addedLoggerUs: collector,
    baselineServerUs: { median: baseline, low: baseline - 5, high: baseline + 5 },
    statementsPerTransaction: shape.statements,
    baselineSamples: samples.map(() => baseline),
    loggerSamples: samples.map(() => collector),
    linesPerSecSamples: samples.map(() => linesPerSec),
    wakeupSamples: samples.map(() => lines * u),
    ...(kinds ? { linesByKind: { misc: shape.misc, nested: 0 } } : {}),
  };
}

/** bench --quick's points: TPC-B's read, write, all, log_statement; read-heavy's write and all. */
const points = (kinds: boolean): CalibrationPoint[] => [
  point("read", "tpcb", { statementLines: 1, misc: 0, statements: 7 }, 1, kinds),
  point("write", "tpcb", { statementLines: 4, misc: 0, statements: 7 }, 2, kinds),
  point("all", "tpcb", { statementLines: 5, misc: 2, statements: 7 }, 3, kinds),
  point("log_statement", "tpcb", { statementLines: 7, misc: 0, statements: 7, pgaudit: false }, 4, kinds),
  point("write", "read-heavy", { statementLines: 1, misc: 0, statements: 12 }, 5, kinds),
  point("all", "read-heavy", { statementLines: 10, misc: 2, statements: 12 }, 6, kinds),
];

/** The proof's shop under `all`: 6 statement lines, 2 MISC, 6 nested, 14 statements. */
const SHOP = {
  linesPerTransaction: 14,
  miscLinesPerTransaction: 2,
  nestedLinesPerTransaction: 6,
  auditedStatementsPerTransaction: 14,
  logElsewhere: false,
  baselineUsPerTransaction: 1000,
  baselineCpuUsPerTransaction: 600,
  linesPerSec: 14 * 2000,
};

describe("lines priced by kind", () => {
  it("fits a MISC line's cost apart from a statement line's", () => {
    const fit = fitCalibration(points(true))!;
    const cpu = fit.cpu!;
    expect(cpu.columns).toContain("miscLines");
    expect(cpu.columns).not.toContain("nestedLines"); // no point logs nested lines
    const at = (name: string) => cpu.coefficients[cpu.columns.indexOf(name)]!;
    expect(at("lines")).toBeGreaterThan(TRUTH.statementLine * 0.85);
    expect(at("lines")).toBeLessThan(TRUTH.statementLine * 1.15);
    expect(at("miscLines")).toBeLessThan(TRUTH.miscLine + 2);
    expect(renderFit(fit)).toContain("per pgAudit MISC line");
  });

  it("prices nested lines as MISC ones where no point logged any, and every line alike without kinds", () => {
    const byKind = fitCalibration(points(true))!;
    const alike = fitCalibration(points(false))!;
    expect(alike.cpu!.columns).not.toContain("miscLines");
    const u = wakeupsPerLine(SHOP.linesPerSec, TRUTH.awakeUs);
    const truth =
      6 * TRUTH.statementLine +
      8 * TRUTH.miscLine +
      14 * TRUTH.statement +
      14 * (TRUTH.collectorLine + TRUTH.collectorWakeup * u);
    const added = (fit: typeof byKind) => predictOverhead(fit, SHOP).addedUs;
    // By kind: the truth inside the interval, the estimate near it; alike, every MISC and nested
    // line at a statement line's price, far above.
    expect(added(byKind).low).toBeLessThanOrEqual(truth);
    expect(added(byKind).high).toBeGreaterThanOrEqual(truth);
    expect(Math.abs(added(byKind).estimate / truth - 1)).toBeLessThan(0.1);
    expect(added(alike).estimate).toBeGreaterThan(truth * 1.25);
  });

  it("are features only a model with their columns prices", () => {
    const w: CostFeatures = {
      linesPerTransaction: 14,
      miscLinesPerTransaction: 2,
      nestedLinesPerTransaction: 6,
      auditedStatementsPerTransaction: 14,
      logElsewhere: false,
    };
    // An older calibration (no MISC column): every line is a line.
    expect(costFeature("lines", kindFeatures(["lines", "statements"], w))).toBe(14);
    // MISC but no nested column: nested lines priced as MISC.
    const misc = kindFeatures(["lines", "miscLines"], w);
    expect(costFeature("lines", misc)).toBe(6);
    expect(costFeature("miscLines", misc)).toBe(8);
    expect(costFeature("nestedLines", misc)).toBe(0);
    // Both: each its own.
    const both = kindFeatures(["lines", "miscLines", "nestedLines"], w);
    expect([
      costFeature("lines", both),
      costFeature("miscLines", both),
      costFeature("nestedLines", both),
    ]).toEqual([6, 2, 6]);
    // Elsewhere, the lines are linesElsewhere's whatever their kind.
    expect(costFeature("miscLines", { ...both, logElsewhere: true })).toBe(0);
    expect(costFeature("linesElsewhere", { ...both, logElsewhere: true })).toBe(14);
  });
});
