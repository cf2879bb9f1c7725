import { plannedSeconds, planRuns } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";

const key = (r: { configuration: string; workload: string }): string => `${r.configuration}/${r.workload}`;

describe("rotating interleaved order", () => {
  const configs = ["none", "write", "read", "all", "log_statement"];

  it("runs every cell `runs` times after one discarded warm-up", () => {
    const plan = planRuns({ configurations: configs, workloads: ["tpcb", "select-only"], runs: 3 });
    expect(plan[0]).toMatchObject({ warmup: true, index: -1 });
    const measured = plan.filter((r) => !r.warmup);
    expect(measured).toHaveLength(30);
    const counts = new Map<string, number>();
    for (const r of measured) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
    expect([...counts.values()].every((n) => n === 3)).toBe(true);
    expect(measured.map((r) => r.index)).toEqual([...Array(30).keys()]);
  });

  it("never runs one configuration twice in a row, and rotates who goes first", () => {
    for (const n of [2, 3, 5]) {
      const plan = planRuns({ configurations: configs.slice(0, n), workloads: ["tpcb"], runs: 6 });
      const measured = plan.filter((r) => !r.warmup);
      for (let i = 1; i < measured.length; i++)
        expect(measured[i]!.configuration).not.toBe(measured[i - 1]!.configuration);
      const firsts = new Set(measured.filter((_run, i) => i % n === 0).map((r) => r.configuration));
      // Two cells alternate (a rotation would repeat one at the round boundary); more rotate.
      expect(firsts.size).toBe(n === 2 ? 1 : n);
    }
  });

  it("gives each cell each position of a round once over a full rotation", () => {
    const plan = planRuns({ configurations: configs, workloads: ["tpcb"], runs: 5, warmup: false });
    for (const c of configs) {
      const positions = plan.filter((r) => r.configuration === c).map((r) => r.index % 5);
      expect(new Set(positions).size).toBe(5);
    }
  });

  it("runs a workload limited to fewer rounds in the first ones only (bench --quick's rate cells)", () => {
    const plan = planRuns({
      configurations: ["none", "all"],
      workloads: ["tpcb", "tpcb@300tps"],
      runs: 5,
      warmup: false,
      roundsOf: (w) => (w === "tpcb@300tps" ? 3 : undefined),
    });
    expect(plan.filter((r) => r.workload === "tpcb")).toHaveLength(10);
    const rated = plan.filter((r) => r.workload === "tpcb@300tps");
    expect(rated).toHaveLength(6);
    expect(Math.max(...rated.map((r) => r.round))).toBe(2);
    expect(plan.map((r) => r.index)).toEqual([...Array(16).keys()]);
  });

  it("plans its duration: set-up, warm-up and every run with its overhead", () => {
    const plan = planRuns({ configurations: ["none", "all"], workloads: ["tpcb"], runs: 3 });
    expect(plannedSeconds(plan, { durationSec: 10, warmupSec: 5, perRunOverheadSec: 2, setupSec: 20 })).toBe(
      20 + 5 + 2 + 6 * (10 + 2),
    );
  });
});
