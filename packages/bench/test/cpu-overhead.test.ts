import {
  type CalibrationPoint,
  fitCalibration,
  median,
  planRuns,
  predictOverhead,
  type RunResult,
  seededRng,
  summarizeCells,
} from "@auditpipe/bench";
import { describe, expect, it } from "vitest";
import { normals } from "./_synthetic.ts";

const SERVER_US = 200;
const CLIENT_US = 50;
const ADDED_US = 100;
/** What a CPU-bound machine loses: 100 µs added to 250 µs per transaction. */
const TRUE_OVERHEAD = ADDED_US / (SERVER_US + CLIENT_US + ADDED_US);

/**
 * Runs of none and write in bench's rotating order on a machine whose other load drifts: a slow
 * factor on every process's CPU time (a neighbour on the same cores), and TPS that swings ±30 %
 * from run to run on top of it, as wall time does; CPU times carry ±2 % of their own noise.
 */
function driftingRuns(withCpu: boolean, seed: number): RunResult[] {
  const rng = seededRng(seed);
  const plan = planRuns({ configurations: ["none", "write"], workloads: ["tpcb"], runs: 6, warmup: false });
  return plan.map((p) => {
    const drift = 1 + 0.08 * p.index; // the machine gets busier through the bench: 1.9x by the end
    const jitter = (): number => 1 + 0.02 * (rng() * 2 - 1);
    const server = (SERVER_US + (p.configuration === "write" ? ADDED_US : 0)) * drift * jitter();
    const client = CLIENT_US * drift * jitter();
    const tps = (2e6 / (server + client)) * (0.7 + 0.6 * rng());
    const transactions = Math.round(tps * 2);
    return {
      index: p.index,
      round: p.round,
      configuration: p.configuration,
      workload: p.workload,
      startedAt: "2026-11-24T00:00:00.000Z",
      durationSec: 2,
      tps,
      transactions,
      failedTransactions: 0,
      latencyMs: { mean: 1, p50: 1, p95: 2, p99: 3, max: 4 },
      log: {
        records: p.configuration === "write" ? 4 * transactions : 0,
        auditEntries: 0,
        bytes: 0,
        malformed: 0,
      },
      auditTable: null,
      cpu: withCpu
        ? {
            serverSec: (server * transactions) / 1e6,
            loggerSec: (p.configuration === "write" ? 0.3 * ADDED_US * drift * transactions : 0) / 1e6,
            clientSec: (client * transactions) / 1e6,
          }
        : null,
      walBytes: 1,
      statWal: {},
      statIo: {},
      statBgwriter: {},
    };
  });
}

describe("overhead from CPU time, paired with the nearest baseline run", () => {
  it("recovers the true overhead through drift and TPS noise that the TPS-based figure cannot", () => {
    const runs = driftingRuns(true, 1);
    const [, write] = summarizeCells(runs, { configurations: ["none", "write"], workloads: ["tpcb"] });
    expect(write!.overheadBasis).toBe("cpu");
    expect(write!.overhead!.median).toBeCloseTo(TRUE_OVERHEAD, 1);
    expect(write!.overhead!.low).toBeLessThanOrEqual(TRUE_OVERHEAD);
    expect(write!.overhead!.high).toBeGreaterThanOrEqual(TRUE_OVERHEAD);
    expect(write!.overhead!.significant).toBe(true);
    const cpuWidth = write!.overhead!.high - write!.overhead!.low;
    const tpsWidth = write!.tpsOverhead!.high - write!.tpsOverhead!.low;
    expect(cpuWidth).toBeLessThan(tpsWidth / 3);
    expect(write!.cpuUsPerTransaction!.logger).toBeGreaterThan(0);
  });

  it("falls back to TPS when a run has no CPU times (a server on another host)", () => {
    const runs = driftingRuns(false, 2);
    const [none, write] = summarizeCells(runs, { configurations: ["none", "write"], workloads: ["tpcb"] });
    expect(none!.cpuUsPerTransaction).toBeNull();
    expect(write!.overheadBasis).toBe("tps");
    expect(write!.overhead).toEqual(write!.tpsOverhead);
  });
});

/** Rounds of added server µs per transaction from known costs: 20 µs per line, 5 per statement. */
function point(
  configuration: string,
  lines: number,
  statements: number,
  rounds: number,
  seed: number,
): CalibrationPoint {
  const truth = 20 * lines + 5 * statements;
  const samples = normals(rounds, truth, 40, seed);
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
    addedLoggerUs: 0.25 * m,
    baselineServerUs: { median: 210, low: 200, high: 220 },
    statementsPerTransaction: 7,
  };
}

describe("the CPU-basis calibration", () => {
  it("fits round by round: known costs within their intervals, and the covariance to predict with", () => {
    const fit = fitCalibration([point("write", 4, 7, 8, 1), point("log_statement", 7, 0, 8, 2)])!;
    expect(fit.basis).toBe("cpu");
    expect(fit.degreesOfFreedom).toBe(14);
    expect(fit.lineCostUs.low).toBeLessThan(20);
    expect(fit.lineCostUs.high).toBeGreaterThan(20);
    expect(fit.statementCostUs!.low).toBeLessThan(5);
    expect(fit.statementCostUs!.high).toBeGreaterThan(5);
    expect(fit.residualStdErrUs!).toBeGreaterThan(20);
    expect(fit.residualStdErrUs!).toBeLessThan(60);
    expect(fit.cpu!.columns).toEqual(["lines", "statements"]);
    expect(fit.cpu!.runs).toBe(8);
    expect(fit.cpu!.loggerShare).toBeCloseTo(0.25, 6);
    expect(fit.cpu!.baselineServerUsPerStatement).toEqual({ estimate: 30, low: 200 / 7, high: 220 / 7 });
  });

  it("predicts a configuration it never saw: the interval holds a new measurement about 95 % of the time", () => {
    // all = 7 lines and 7 statements: truth 175 µs. The interval must hold a new median of
    // 5 runs, not only the mean: coefficient uncertainty plus that measurement's own noise.
    let covered = 0;
    let coefficientOnly = 0;
    const trials = 300;
    for (let t = 0; t < trials; t++) {
      const fit = fitCalibration([
        point("write", 4, 7, 5, 10 + t),
        point("log_statement", 7, 0, 5, 5000 + t),
      ])!;
      const measured = median(normals(5, 175, 40, 9000 + t));
      const p = predictOverhead(fit, {
        linesPerTransaction: 7,
        auditedStatementsPerTransaction: 7,
        logElsewhere: false,
        baselineUsPerTransaction: 1000,
        baselineCpuUsPerTransaction: 250,
      });
      if (p.addedUs.low <= measured && measured <= p.addedUs.high) covered++;
      const half = 2.1 * Math.sqrt(fit.cpu!.covariance.flat().reduce((s, v) => s + 49 * v, 0));
      if (Math.abs(p.addedUs.estimate - measured) <= half) coefficientOnly++;
    }
    expect(covered / trials).toBeGreaterThan(0.9);
    expect(covered / trials).toBeLessThan(0.995);
    // The coefficients' interval alone would be too narrow for a new measurement.
    expect(coefficientOnly / trials).toBeLessThan(covered / trials - 0.05);
  });

  it("ranges from a server with idle cores (the backends' share against its wall time) to a CPU-bound one", () => {
    const fit = fitCalibration([point("write", 4, 7, 8, 1), point("log_statement", 7, 0, 8, 2)])!;
    const input = {
      linesPerTransaction: 7,
      auditedStatementsPerTransaction: 7,
      logElsewhere: false,
      baselineUsPerTransaction: 1000,
      statementsPerTransaction: 7,
    };
    const p = predictOverhead(fit, input);
    const added = p.addedUs;
    // CPU-bound, the transaction's CPU time at its floor: 7 statements × the cheapest 200/7 µs.
    expect(p.cpuBound!.high).toBeCloseTo(added.high / (200 + added.high), 9);
    // Idle cores: the collector's 25 % runs beside the backends.
    expect(p.idleCores!.low).toBeCloseTo((0.75 * added.low) / (1000 + 0.75 * added.low), 9);
    expect(p.low).toBe(p.idleCores!.low);
    expect(p.high).toBe(p.cpuBound!.high);
    // Measured CPU time per transaction (bench) replaces the floor.
    const measured = predictOverhead(fit, { ...input, baselineCpuUsPerTransaction: 400 });
    expect(measured.cpuBound!.estimate).toBeCloseTo(added.estimate / (400 + added.estimate), 9);
  });
});
