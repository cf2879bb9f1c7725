/**
 * The live advisor's sample: one statement in N, all entries of a statement together, and no
 * lock-step with a session's repeating cycle of statements.
 */
import { AdviceTally, sampledStatement } from "@auditpipe/estimate";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

describe("sampledStatement", () => {
  it("picks about one statement in N over sequential statement IDs, for any backend", () => {
    for (const pid of [1234, 99_999, 4_194_303]) {
      let picked = 0;
      for (let id = 1; id <= 64_000; id++) if (sampledStatement(id, pid, 32)) picked++;
      expect(picked).toBeGreaterThan(1500);
      expect(picked).toBeLessThan(2500);
    }
  });

  it("does not line up with a session's cycle: every position of a 4-, 8- or 32-statement cycle gets picked", () => {
    for (const period of [4, 8, 32]) {
      const positions = new Set<number>();
      for (let id = 1; id <= 20_000; id++) if (sampledStatement(id, 4242, 32)) positions.add(id % period);
      expect(positions.size).toBe(period);
    }
  });
});

describe("AdviceTally with a weight", () => {
  it("counts each added entry as `weight` entries and `weight` times its bytes", () => {
    // A hand-made entry (not a log line): the tally's arithmetic only.
    const entry = auditEntry({
      class: "MISC",
      command: "BEGIN",
      objectType: "",
      objectName: "",
      statement: "BEGIN",
    });
    const record = logRecord({ size: 100, user: "app", sessionId: "s", pid: 1 });
    const tally = new AdviceTally({ weight: 32 });
    tally.add(entry, record);
    const advice = tally.advice();
    expect(advice).toMatchObject({ entries: 32, bytes: 3200, sampled: true });
    expect(advice.items.find((i) => i.kind === "transaction-control")).toMatchObject({
      entries: 32,
      bytes: 3200,
    });
  });
});
