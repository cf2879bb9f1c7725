import { planRuns, type RunResult, seededRng, summarizeCells } from "@auditpipe/bench";
import { describe, expect, it } from "vitest";

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
