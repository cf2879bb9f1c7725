/**
 * The batch stage on the audit entries of a real capture (fixtures/, csvlog): where batches are
 * cut (limits, replayed ends, age), that their ranges are contiguous, and that each holds the
 * encoded lines of exactly its entries.
 */
import { type Batch, Batcher, type BatchLimits, encodeEntry } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
import { type FixtureAuditEntry, fixtureAuditEntries } from "./_fixture-entries.ts";

const SOURCE = { fingerprint: "f00d", path: "/var/log/postgresql/postgresql.csv" };
const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const limits = (l: Partial<BatchLimits>): BatchLimits => ({
  maxEntries: NO_LIMIT,
  maxBytes: NO_LIMIT,
  maxAgeMs: NO_LIMIT,
  ...l,
});

/** The audit records of one real csvlog file, in file order. */
const entries: FixtureAuditEntry[] = fixtureAuditEntries().filter(
  (e) => e.source === "session-all/postgresql.csv.gz",
);

/** Feeds `count` entries from the first on (as the file lane does), returns where the last ends. */
function feed(batcher: Batcher, count: number, from = 0): number {
  let end = 0;
  for (const { entry, record } of entries.slice(from, from + count)) {
    encodeEntry(batcher.writer, entry, record, SOURCE.path, record.offset, undefined);
    batcher.entry(record.size);
    end = record.offset + record.size;
    batcher.extend(end);
  }
  return end;
}

const lines = (b: Batch): number => b.ndjson.toString("utf8").split("\n").length - 1;
const endOf = (i: number): number => entries[i]!.record.offset + entries[i]!.record.size;

describe("Batcher", () => {
  it("has real entries to cut", () => {
    expect(entries.length).toBeGreaterThan(100);
  });

  it("cuts at maxEntries into contiguous ranges, each holding its own entries' lines", () => {
    const start = entries[0]!.record.offset;
    const batcher = new Batcher(SOURCE, start, [], limits({ maxEntries: 10 }), 0);
    feed(batcher, 25);
    batcher.close(0);
    const got = batcher.ready;
    expect(got.map((b) => b.entries)).toEqual([10, 10, 5]);
    expect(got.map(lines)).toEqual([10, 10, 5]);
    expect(got[0]!.range).toEqual({ sourceId: "f00d", sourceName: SOURCE.path, start, end: endOf(9) });
    expect(got[1]!.range.start).toBe(got[0]!.range.end);
    expect(got[2]!.range).toMatchObject({ start: got[1]!.range.end, end: endOf(24) });
    expect(got[0]!.bytes).toBe(entries.slice(0, 10).reduce((n, e) => n + e.record.size, 0));
    expect(JSON.parse(got[1]!.ndjson.toString("utf8").split("\n")[0]!).source).toEqual({
      file: SOURCE.path,
      offset: entries[10]!.record.offset,
    });
  });

  it("cuts at maxBytes of log", () => {
    const firstTwo = entries[0]!.record.size + entries[1]!.record.size;
    const batcher = new Batcher(SOURCE, entries[0]!.record.offset, [], limits({ maxBytes: firstTwo }), 0);
    feed(batcher, 3);
    expect(batcher.ready.map((b) => b.entries)).toEqual([2]);
  });

  it("cuts a replay exactly at the ends recorded before the crash, whatever the limits, then by the limits", () => {
    const start = entries[0]!.record.offset;
    // Recorded with other limits: 7 entries, then 3.
    const batcher = new Batcher(SOURCE, start, [endOf(6), endOf(9)], limits({ maxEntries: 4 }), 0);
    feed(batcher, 18);
    expect(batcher.ready.map((b) => [b.range.end, b.entries])).toEqual([
      [endOf(6), 7],
      [endOf(9), 3],
      [endOf(13), 4],
      [endOf(17), 4],
    ]);
  });

  it("gives a recorded end up when the batch grows four times past the limits without reaching it", () => {
    const start = entries[0]!.record.offset;
    const batcher = new Batcher(SOURCE, start, [endOf(90)], limits({ maxEntries: 5 }), 0);
    feed(batcher, 30);
    expect(batcher.ready.map((b) => b.entries)).toEqual([20, 5, 5]);
    expect(batcher.replayEnds).toEqual([]);
  });

  it("ignores recorded ends before its start", () => {
    const batcher = new Batcher(SOURCE, endOf(4), [endOf(2), endOf(8)], limits({}), 0);
    expect(batcher.replayEnds).toEqual([endOf(8)]);
  });

  it("closes by age, but never ahead of a replayed end; stopping leaves such a batch to the next start", () => {
    const start = entries[0]!.record.offset;
    const aging = new Batcher(SOURCE, start, [], limits({ maxAgeMs: 1_000 }), 0);
    feed(aging, 3);
    aging.closeIfOld(999);
    expect(aging.ready).toEqual([]);
    aging.closeIfOld(1_000);
    expect(aging.ready.map((b) => b.entries)).toEqual([3]);
    aging.closeIfOld(5_000); // nothing in the open batch: nothing to close
    expect(aging.ready).toHaveLength(1);

    const replaying = new Batcher(SOURCE, start, [endOf(9)], limits({ maxAgeMs: 1_000 }), 0);
    feed(replaying, 3);
    replaying.closeIfOld(60_000);
    replaying.closeForStop(60_000);
    expect(replaying.ready).toEqual([]);
    expect(replaying.covered).toBe(endOf(2));
    expect(replaying.openStart).toBe(start);
  });
});
