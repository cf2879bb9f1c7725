/**
 * What bench says it will take, before it starts, against what --quick took on this project's
 * 2-core VM: 1 min 56 s at a load of 4 and 2 min 30 s at 17 (docs/bench.md) before it gained
 * `all` at 8 clients with its baseline (6 runs of 6 s more, "about 3 min"), and then the same at
 * 300 TPS from 2 clients (6 runs of 6 s more, "about 3.5 min"), and then a fourth round of the
 * main cells (5 runs of 6 s more: the calibration's intervals), "about 4 min", and then
 * read-heavy's baseline, write and all (12 runs of 6 s more: MISC lines priced apart), so now
 * "about 5.5 min".
 */
import { plannedSeconds, planRuns } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { aboutMinutes, rateCellName, setupSeconds } from "../src/bench/run.ts";
import { BENCH_HELP, PER_RUN_OVERHEAD_SEC, QUICK } from "../src/commands/bench.ts";

describe("bench's own estimate of its duration", () => {
  it("is what --quick takes, and what its --help says: about five and a half minutes", () => {
    // As runBench plans it: tpcb under every quick configuration, then its rate cells.
    const names = QUICK.rateCells.map((cell) => rateCellName("tpcb", cell));
    expect(names).toEqual(["tpcb@8", "tpcb@300tps"]);
    const cellOf = (w: string) => QUICK.rateCells[names.indexOf(w)];
    const plan = planRuns({
      configurations: QUICK.configs,
      workloads: [...QUICK.workloads, ...names],
      runs: QUICK.runs,
      configurationsOf: (w) => cellOf(w)?.configs ?? QUICK.workloadConfigs[w],
      roundsOf: (w) => cellOf(w)?.rounds,
    });
    for (const name of names)
      expect(
        plan
          .filter((r) => r.workload === name)
          .map((r) => r.configuration)
          .sort(),
      ).toEqual(["all", "all", "all", "none", "none", "none"]);
    const seconds = plannedSeconds(plan, {
      durationSec: 6,
      warmupSec: 5,
      perRunOverheadSec: PER_RUN_OVERHEAD_SEC,
      setupSec: setupSeconds(10),
    });
    expect(
      plan
        .filter((r) => r.workload === "read-heavy")
        .map((r) => r.configuration)
        .sort(),
    ).toEqual(["all", "none", "write"].flatMap((c) => Array<string>(QUICK.runs).fill(c)));
    expect(seconds).toBeGreaterThan(325);
    expect(seconds).toBeLessThan(350);
    expect(aboutMinutes(seconds)).toBe("about 5.5 min");
    expect(BENCH_HELP).toContain("--quick              about five and a half minutes on 2 cores");
  });

  it("rounds to the half minute, and says so under one", () => {
    expect(aboutMinutes(20)).toBe("under a minute");
    expect(aboutMinutes(150)).toBe("about 2.5 min");
    expect(aboutMinutes(61)).toBe("about 1 min");
  });
});
