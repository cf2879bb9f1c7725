import { t95 } from "@auditpipe/estimate";
import {
  type CalibrationPoint,
  fitCalibration,
  median,
  planRuns,
  pointWeights,
  predictOverhead,
  type RunResult,
  seededRng,
  summarizeCells,
} from "@auditpipe/overhead";
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

/**
 * Runs of added server µs per transaction from known costs: 60 µs per transaction that logs,
 * 15 per line, 5 per statement pgaudit processes; 40 µs of noise per run.
 */
function point(
  configuration: string,
  lines: number,
  statements: number,
  runs: number,
  seed: number,
  noiseUs = 40,
): CalibrationPoint {
  const truth = 60 + 15 * lines + 5 * statements;
  const samples = normals(runs, truth, noiseUs, seed);
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

/** --quick's configurations on TPC-B but write: 1 and 7 pgaudit lines, 7 log_statement lines. */
const calibrating = (runs: number, seed: number): CalibrationPoint[] => [
  point("read", 1, 7, runs, seed),
  point("all", 7, 7, runs, seed + 1000),
  point("log_statement", 7, 0, runs, seed + 2000),
];

const WRITE = { linesPerTransaction: 4, auditedStatementsPerTransaction: 7, logElsewhere: false } as const;

describe("the CPU-basis calibration", () => {
  it("fits run by run: the known costs within their intervals, and the covariance to predict with", () => {
    const fit = fitCalibration([...calibrating(8, 1), point("write", 4, 7, 8, 7)])!;
    expect(fit.basis).toBe("cpu");
    expect(fit.cpu!.columns).toEqual(["lines", "statements", "transactions"]);
    expect(fit.degreesOfFreedom).toBe(32 - 3);
    // Each known cost inside its interval in most fits (one fit can miss: they are 95 % intervals).
    const held = [0, 0, 0];
    const fits = 60;
    for (let seed = 1; seed <= fits; seed++) {
      const f = fitCalibration([...calibrating(8, seed), point("write", 4, 7, 8, seed + 6)])!;
      [
        [f.lineCostUs, 15],
        [f.statementCostUs!, 5],
        [f.transactionCostUs!, 60],
      ].forEach(([c, truth], i) => {
        const { low, high } = c as { low: number; high: number };
        if (low < (truth as number) && (truth as number) < high) held[i]!++;
      });
    }
    for (const h of held) expect(h / fits).toBeGreaterThan(0.85);
    expect(fit.residualStdErrUs!).toBeGreaterThan(25);
    expect(fit.residualStdErrUs!).toBeLessThan(55);
    expect(fit.cpu!.runs).toBe(8);
    expect(fit.cpu!.loggerShare).toBeCloseTo(0.25, 6);
    expect(fit.cpu!.baselineServerUsPerStatement).toEqual({ estimate: 30, low: 200 / 7, high: 220 / 7 });
  });

  it("leaves out the per-transaction cost when every point logs the same lines", () => {
    const fit = fitCalibration([point("all", 7, 7, 5, 1), point("log_statement", 7, 0, 5, 2)])!;
    expect(fit.cpu!.columns).toEqual(["lines", "statements"]);
    expect(fit.transactionCostUs).toBeNull();
  });

  it("predicts a configuration it never saw: the interval holds a new measurement as often as it says", () => {
    // write = 4 lines and 7 statements: truth 60 + 60 + 35 = 155 µs. The interval must hold a
    // new median of 5 runs, not only the mean: coefficient uncertainty plus that median's noise.
    const trials = 300;
    let at95 = 0;
    let at999 = 0;
    let coefficientsOnly = 0;
    for (let t = 0; t < trials; t++) {
      const fit = fitCalibration(calibrating(5, 10 + t))!;
      const measured = median(normals(5, 155, 40, 9000 + t));
      const input = { ...WRITE, baselineUsPerTransaction: 1000, baselineCpuUsPerTransaction: 250 };
      const p95 = predictOverhead(fit, input).addedUs;
      const p999 = predictOverhead(fit, { ...input, level: 0.999 }).addedUs;
      if (p95.low <= measured && measured <= p95.high) at95++;
      if (p999.low <= measured && measured <= p999.high) at999++;
      const x = [4, 7, 1];
      const c = fit.cpu!.covariance;
      const meanOnly = x.reduce((s, xi, i) => s + x.reduce((u, xj, j) => u + xi * xj * c[i]![j]!, 0), 0);
      if (Math.abs(p95.estimate - measured) <= t95(fit.degreesOfFreedom) * Math.sqrt(meanOnly))
        coefficientsOnly++;
    }
    expect(at95 / trials).toBeGreaterThan(0.9);
    expect(at95 / trials).toBeLessThan(0.99);
    expect(at999 / trials).toBeGreaterThan(0.985);
    // The coefficients' interval alone is too narrow for a new measurement.
    expect(coefficientsOnly / trials).toBeLessThan(at95 / trials - 0.1);
  });

  it("weighs points by their runs' own scatter, shrunk toward the median, never above 1", () => {
    const runs = (point: number, residuals: number[]) => residuals.map((residual) => ({ point, residual }));
    const w = pointWeights(
      [
        ...runs(0, [10, -10, 0]),
        ...runs(1, [10, -10, 0]),
        ...runs(2, [50, -50, 0]),
        ...runs(3, [40, 40, 40]),
      ],
      4,
    );
    expect(w[0]).toBeCloseTo(1, 9);
    expect(w[1]).toBeCloseTo(1, 9);
    // Variance 2500 against the median 100, over 2 degrees of freedom and 2 runs of the median: 100 / ((2·2500 + 2·100) / 4).
    expect(w[2]).toBeCloseTo(1 / 13, 9);
    // A point the model misses by 40 µs every run is not noisy: it keeps its weight, and its miss stays in the residual.
    expect(w[3]).toBe(1);
    expect(pointWeights([{ point: 0, residual: 0 }], 2)).toEqual([1, 1]);
  });

  it("ranges from a server with idle cores (the backends' share against its wall time) to a CPU-bound one", () => {
    const fit = fitCalibration(calibrating(8, 1))!;
    const input = { ...WRITE, baselineUsPerTransaction: 1000, statementsPerTransaction: 7 };
    const p = predictOverhead(fit, input);
    const added = p.addedUs;
    // CPU-bound, the transaction's CPU time at its floor: 7 statements × the cheapest 200/7 µs.
    expect(p.cpuBound!.high).toBeCloseTo(added.high / (200 + added.high), 9);
    // Idle cores: no per-transaction cost, and the collector's 25 % runs beside the backends.
    const k = fit.transactionCostUs!.estimate;
    expect(p.idleCores!.estimate).toBeCloseTo(
      (0.75 * (added.estimate - k)) / (1000 + 0.75 * (added.estimate - k)),
      9,
    );
    expect(p.idleCores!.low).toBeLessThan(p.idleCores!.estimate);
    expect(p.low).toBe(p.idleCores!.low);
    expect(p.high).toBe(p.cpuBound!.high);
    // Measured CPU time per transaction (bench) replaces the floor.
    const measured = predictOverhead(fit, { ...input, baselineCpuUsPerTransaction: 400 });
    expect(measured.cpuBound!.estimate).toBeCloseTo(added.estimate / (400 + added.estimate), 9);
  });
});
