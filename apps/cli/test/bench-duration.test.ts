/**
 * What bench says it will take, before it starts, against what --quick took on this project's
 * 2-core VM: 1 min 56 s at a load of 4 and 2 min 30 s at 17 (docs/bench.md), so "about 2 min".
 */
import { plannedSeconds, planRuns } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { aboutMinutes, setupSeconds } from "../src/bench/run.ts";
import { PER_RUN_OVERHEAD_SEC } from "../src/commands/bench.ts";

describe("bench's own estimate of its duration", () => {
  it("is what --quick takes: about two minutes", () => {
    const plan = planRuns({
      configurations: ["none", "read", "write", "all", "log_statement"],
      workloads: ["tpcb"],
      runs: 3,
    });
    const seconds = plannedSeconds(plan, {
      durationSec: 6,
      warmupSec: 5,
      perRunOverheadSec: PER_RUN_OVERHEAD_SEC,
      setupSec: setupSeconds(10),
    });
    expect(seconds).toBeGreaterThan(110);
    expect(seconds).toBeLessThan(150);
    expect(aboutMinutes(seconds)).toBe("about 2 min");
  });

  it("rounds to the half minute, and says so under one", () => {
    expect(aboutMinutes(20)).toBe("under a minute");
    expect(aboutMinutes(150)).toBe("about 2.5 min");
    expect(aboutMinutes(61)).toBe("about 1 min");
  });
});
