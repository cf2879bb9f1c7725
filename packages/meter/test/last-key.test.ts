/**
 * The meter's tallies remember the last key looked up (a repeat skips hashing the fresh string):
 * the counts must be those of plain lookups, through displacements of the remembered slot too.
 */
import { describe, expect, it } from "vitest";
import { CappedTally } from "../src/_capped.ts";
import { PairTally } from "../src/_pairs.ts";
import { TopN } from "../src/_top-n.ts";

describe("the last key remembered", () => {
  it("TopN: a repeat, and a key whose slot the remembered one lost, count as without it", () => {
    const top = new TopN(2);
    top.add("a", 10);
    top.add("b", 1);
    top.add("c", 2); // takes b's slot (rank 3)
    top.add("c", 2); // the remembered key: rank 5
    top.add("b", 1); // takes c's slot (rank 6): c, remembered last, is gone
    top.add("c", 3); // not the remembered one any more: takes b's slot (rank 9)
    top.add("a", 1);
    expect(top.result()).toEqual({
      top: [
        ["a", { entries: 2, bytes: 11 }],
        ["c", { entries: 1, bytes: 3 }],
      ],
      others: { entries: 4, bytes: 6 },
      exact: false,
      maxErrorBytes: 9,
    });
  });

  it("CappedTally and PairTally: repeats and alternations land in their own tallies", () => {
    const capped = new CappedTally(2);
    const pairs = new PairTally(2);
    for (const [key, type] of [
      ["READ", "SESSION"],
      ["READ", "SESSION"],
      ["WRITE", "SESSION"],
      ["READ", "OBJECT"], // a third pair: over the limit
      ["MISC", "SESSION"], // a third key: over the limit
      ["WRITE", "SESSION"],
      ["READ", "SESSION"],
    ] as const) {
      capped.slot(key).entries += 1;
      pairs.slot(key, type).entries += 1;
    }
    expect(Object.fromEntries([...capped.map].map(([k, t]) => [k, t.entries]))).toEqual({
      READ: 4,
      WRITE: 2,
    });
    expect(capped.overflow.entries).toBe(1);
    expect([...pairs.entries()].map(([c, t, tally]) => [c, t, tally.entries])).toEqual([
      ["READ", "SESSION", 3],
      ["WRITE", "SESSION", 2],
    ]);
    expect(pairs.overflow.entries).toBe(2);
  });
});
