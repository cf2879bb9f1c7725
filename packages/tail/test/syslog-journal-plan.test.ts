// The syslog journal's pure parts: rotation (how a commit is split into segments), the size limit,
// group commit, segment names and the entry layout. They are internal (`_`-prefixed, not
// exported) and take exact sizes and times that the writer cannot be driven to over real files,
// so, like syslog-framing.test.ts, these tests import them from src. The writer over real files
// is in syslog-journal.test.ts.
import { describe, expect, it } from "vitest";
import { GroupCommitQueue } from "../src/_group-commit.ts";
import { journalEntry } from "../src/_journal-entry.ts";
import {
  JournalSpace,
  nextSegmentNumber,
  planCommit,
  segmentBytesFor,
  segmentName,
  segmentNumber,
} from "../src/_journal-segments.ts";

const entry = (bytes: number, fill = "x"): Buffer => Buffer.from(`${fill.repeat(bytes - 1)}\n`);

describe("planCommit (rotation)", () => {
  it("keeps a commit that fits in the segment written to", () => {
    const runs = planCommit([entry(10), entry(20)], 50, 100);
    expect(runs.map((r) => ({ newSegment: r.newSegment, bytes: r.bytes, n: r.entries.length }))).toEqual([
      { newSegment: false, bytes: 30, n: 2 },
    ]);
  });

  it("starts a new segment where the next entry would pass the size, never inside an entry", () => {
    const entries = [entry(40), entry(40), entry(40), entry(40), entry(40)];
    const runs = planCommit(entries, 30, 100);
    expect(runs.map((r) => [r.newSegment, r.bytes])).toEqual([
      [false, 40], // 30 + 40 = 70; a second would make 110
      [true, 80],
      [true, 80],
    ]);
    expect(Buffer.concat(runs.flatMap((r) => r.entries))).toEqual(Buffer.concat(entries));
  });

  it("gives an entry larger than a segment a segment of its own, and leaves no empty segment behind", () => {
    expect(planCommit([entry(250)], 0, 100).map((r) => [r.newSegment, r.bytes])).toEqual([[false, 250]]);
    expect(
      planCommit([entry(10), entry(250), entry(10)], 0, 100).map((r) => [r.newSegment, r.bytes]),
    ).toEqual([
      [false, 10],
      [true, 250],
      [true, 10],
    ]);
    expect(planCommit([entry(250)], 5, 100).map((r) => [r.newSegment, r.bytes])).toEqual([[true, 250]]);
    expect(planCommit([], 5, 100)).toEqual([]);
  });

  it("never lets a segment pass the size with more than one entry, whatever the sizes", () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return 1 + (seed % n);
    };
    for (let round = 0; round < 200; round++) {
      const entries = Array.from({ length: random(40) }, () => entry(random(300)));
      const active = random(500) - 1;
      const runs = planCommit(entries, active, 400);
      expect(Buffer.concat(runs.flatMap((r) => r.entries))).toEqual(Buffer.concat(entries));
      runs.forEach((run, i) => {
        const before = i === 0 && !run.newSegment ? active : 0;
        if (run.entries.length > 1 || before > 0) expect(before + run.bytes).toBeLessThanOrEqual(400);
        expect(run.newSegment).toBe(i > 0 || (active > 0 && active + run.entries[0]!.length > 400));
      });
    }
  });
});

describe("JournalSpace (size limit)", () => {
  it("counts entries waiting for their commit and segments on disk, and is full at the limit", () => {
    const space = new JournalSpace(1000);
    space.addSegment(1, 600);
    expect(space.full).toBe(false);
    space.pending(300);
    expect(space.used).toBe(900);
    space.pending(100);
    expect(space.full).toBe(true); // 1000: at the limit
    space.committed(1, 400); // written: moved from waiting to the segment, still taken
    expect(space.used).toBe(1000);
    expect(space.sizeOf(1)).toBe(1000);
    expect(space.full).toBe(true);
    space.addSegment(2);
    space.removeSegment(1); // acknowledged and deleted
    expect(space.used).toBe(0);
    expect(space.full).toBe(false);
    expect(space.count).toBe(1);
  });

  it("sizes segments at a sixteenth of the limit, within bounds", () => {
    expect(segmentBytesFor(1 << 30)).toBe(64 << 20);
    expect(segmentBytesFor(256 << 20)).toBe(16 << 20);
    expect(segmentBytesFor(1 << 20)).toBe(256 << 10);
    expect(segmentBytesFor(16 * 2 ** 30)).toBe(64 << 20);
  });
});

describe("GroupCommitQueue (group commit)", () => {
  it("makes a burst due one window after its first entry, whatever arrives meanwhile", () => {
    const q = new GroupCommitQueue(5, 1000);
    expect(q.dueAt()).toBeUndefined();
    q.add(entry(10), 100);
    q.add(entry(10), 103);
    q.add(entry(10), 104.9);
    expect(q.dueAt()).toBe(105);
    const taken = q.take();
    expect(taken).toHaveLength(3);
    expect(q.dueAt()).toBeUndefined();
    q.add(entry(10), 200);
    expect(q.dueAt()).toBe(205);
  });

  it("is due at once when maxBytes wait", () => {
    const q = new GroupCommitQueue(5, 100);
    q.add(entry(60), 100);
    expect(q.dueAt()).toBe(105);
    q.add(entry(60), 101);
    expect(q.dueAt()).toBe(100);
    expect(q.pendingBytes).toBe(120);
  });

  it("puts a failed commit back ahead of what arrived meanwhile, due since its own first entry", () => {
    const q = new GroupCommitQueue(5, 1000);
    const a = entry(10, "a");
    const b = entry(10, "b");
    const c = entry(10, "c");
    q.add(a, 100);
    q.add(b, 101);
    const failed = q.take();
    q.add(c, 120);
    q.putBack(failed, 100);
    expect(q.take()).toEqual([a, b, c]);
    q.putBack([a], 300);
    expect(q.dueAt()).toBe(305);
  });
});

describe("segment names", () => {
  it("sort as their numbers do and read back; other names are not segments", () => {
    const names = [1_732_470_000_123, 9, 1_732_470_000_124].map(segmentName);
    expect(names[0]).toBe("0001732470000123.log");
    expect([...names].sort().map(segmentNumber)).toEqual([9, 1_732_470_000_123, 1_732_470_000_124]);
    expect(segmentNumber("checkpoints.json")).toBeUndefined();
    expect(segmentNumber("0001732470000123.log.tmp")).toBeUndefined();
  });

  it("take the time, and never repeat one when the clock goes back", () => {
    expect(nextSegmentNumber(undefined, 1000)).toBe(1000);
    expect(nextSegmentNumber(999, 1000)).toBe(1000);
    expect(nextSegmentNumber(1000, 1000)).toBe(1001);
    expect(nextSegmentNumber(5000, 1000)).toBe(5001);
  });
});

describe("journalEntry (layout)", () => {
  const startsRecord = (line: string): boolean => line.startsWith("2026-");
  // Hand-made lines in the layout PostgreSQL writes to stderr with `%m [%p] `.
  it("writes a message's lines as PostgreSQL writes them to stderr", () => {
    const lines = [
      "2026-11-24 19:00:00.000 UTC [7] ERROR:  duplicate key value",
      "2026-11-24 19:00:00.000 UTC [7] DETAIL:  Key (id)=(1) already exists.",
      "2026-11-24 19:00:00.000 UTC [7] STATEMENT:  INSERT INTO t",
      "\tVALUES (1)",
    ];
    expect(journalEntry(lines, startsRecord)?.toString("utf8")).toBe(`${lines.join("\n")}\n`);
  });

  it("writes a newline inside a line as newline and tab, and refuses what would not start a record", () => {
    expect(journalEntry(["2026-11-24 19:00:00.000 UTC [7] LOG:  a\nb"], startsRecord)?.toString("utf8")).toBe(
      "2026-11-24 19:00:00.000 UTC [7] LOG:  a\n\tb\n",
    );
    expect(journalEntry(["\tcontinuation without its head"], () => true)).toBeUndefined();
    expect(journalEntry(["[7] LOG:  another prefix"], startsRecord)).toBeUndefined();
    expect(journalEntry([], () => true)).toBeUndefined();
  });
});
