/**
 * A lane's replay bookkeeping alone: which records read again after a restart shipped before, and
 * which late ones (syslog's, given out behind the batches' end) a checkpoint still keeps.
 */
import { describe, expect, it } from "vitest";
import { ReplayBookkeeping } from "../src/_replay-bookkeeping.ts";

describe("ReplayBookkeeping", () => {
  it("a record before the start shipped before, unless it was held: that one goes out once", () => {
    const replay = new ReplayBookkeeping(1000, [200, 600]);
    expect(replay.shippedBefore(100)).toBe(true);
    expect(replay.shippedBefore(200)).toBe(false);
    expect(replay.shippedBefore(200)).toBe(true); // out once
    expect(replay.shippedBefore(1000)).toBe(false); // at or past the start: new
    expect([...replay.heldOffsets()]).toEqual([600]);
  });

  it("keeps a late record until a batch after the one it joined is acknowledged", () => {
    const replay = new ReplayBookkeeping(0);
    replay.noteLate(50, 100);
    replay.noteLate(70, 300);
    expect(replay.hasLate).toBe(true);
    replay.acknowledged(100); // the batch it joined starts at 100: not yet acknowledged
    expect([...replay.heldOffsets()].sort()).toEqual([50, 70]);
    replay.acknowledged(300);
    expect([...replay.heldOffsets()]).toEqual([70]);
    replay.acknowledged(400);
    expect(replay.hasLate).toBe(false);
  });

  it("a batch closed behind the end keeps its late records until it is recycled; one with nothing to ship drops them", () => {
    const replay = new ReplayBookkeeping(0);
    replay.noteLate(10, 500);
    replay.closedBehind(500, true);
    replay.acknowledged(600); // its end is its start: an acknowledgement does not say it shipped
    expect([...replay.heldOffsets()]).toEqual([10]);
    replay.recycledEmpty(500);
    expect(replay.hasLate).toBe(false);

    replay.noteLate(20, 700);
    replay.closedBehind(700, false);
    expect(replay.hasLate).toBe(false);
  });
});
