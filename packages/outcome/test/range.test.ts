/**
 * A range joined without the state at its start, merged with that state (range.ts), decides
 * exactly as one join reading the stream in order: every real capture cut into two ranges after
 * every record and into three at many pairs of places (a statement's entry and its outcome in
 * different ranges, a transaction across ranges, a backend that ends), and every capture twice
 * over as one stream (a server start ending the sessions open; session ids and pids that come
 * again), also under small caps (the sessions of a merged state in one join's order: the cap
 * lets the same one go), every decision, attempt and event compared; and the merge takes most of them (it refuses only where
 * it cannot tell).
 */
import { join } from "node:path";
import { listCases, readExpected, readFixture } from "@auditpipe/fixtures";
import {
  mergeRange,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
  RangeJoin,
  type Route,
} from "@auditpipe/outcome";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";
import { captures, DIR, type Rec, read } from "./_captures.ts";

interface Log {
  decisions: string[];
  events: string[];
}

/** Caps for the joins (tests of the memory bound); none: the defaults. */
let caps: { maxPending?: number; maxSessions?: number } = {};

function options(log: Log): OutcomeJoinOptions<number> {
  return {
    ...caps,
    decided: (h, outcome, sqlstate, reason) => log.decisions.push(`${h} ${outcome} ${sqlstate} ${reason}`),
    attempt: (r) => log.decisions.push(`attempt ${r.offset}`),
    event: (e) => log.events.push(`${e.record.offset} ${e.kind}`),
  };
}

const id = (n: number): number => n;

function feed(
  j: { record(r: LogRecord, e?: AuditEntry, h?: number): unknown },
  records: Rec[],
  from: number,
  to: number,
): void {
  for (let i = from; i < to; i++) {
    const { record, entry } = records[i]!;
    if (entry) j.record(record, entry, i);
    else j.record(record);
  }
}

/** The stream read in order. */
function serial(records: Rec[]): Log {
  const log: Log = { decisions: [], events: [] };
  const j = new OutcomeJoin<number>(options(log));
  feed(j, records, 0, records.length);
  j.end();
  return log;
}

/** The stream cut at `cuts`, each range after the first joined on its own and merged; how many merges were refused. */
function ranged(records: Rec[], cuts: number[]): { log: Log; refused: number } {
  const log: Log = { decisions: [], events: [] };
  const bounds = [0, ...cuts, records.length];
  let state: OutcomeJoinSnapshot<number> | undefined;
  let earlier: OutcomeJoinSnapshot<number> | undefined;
  let refused = 0;
  for (let r = 0; r + 1 < bounds.length; r++) {
    const [from, to] = [bounds[r]!, bounds[r + 1]!];
    const own: Log = { decisions: [], events: [] };
    // Told the MISC pairs of the state a range earlier (what a reader knows when it starts).
    const range = new RangeJoin<number>(options(own), earlier?.miscPairs);
    earlier = state;
    const edge: [Route, number][] = [];
    for (let i = from; i < to; i++) {
      const { record, entry } = records[i]!;
      const route = entry ? range.record(record, entry, i) : range.record(record);
      if (route !== 0) edge.push([route, i]);
    }
    const edgeLog: Log = { decisions: [], events: [] };
    const merged = mergeRange<number, number>(
      state,
      JSON.parse(JSON.stringify(range.result(id))),
      (visit) => {
        for (const [route, i] of edge) {
          const { record, entry } = records[i]!;
          if (entry) visit(route, record, entry, i);
          else visit(route, record);
        }
      },
      options(edgeLog),
      id,
      id,
    );
    if (merged === undefined) {
      refused++;
      const j =
        state === undefined
          ? new OutcomeJoin<number>(options(log))
          : OutcomeJoin.restore(state, options(log), id);
      feed(j, records, from, to);
      state = JSON.parse(JSON.stringify(j.snapshot(id)));
      continue;
    }
    log.decisions.push(...own.decisions, ...edgeLog.decisions);
    // Events in the order of their records.
    const events = [...own.events, ...edgeLog.events].map((e) => [Number(e.split(" ")[0]), e] as const);
    log.events.push(...events.sort((a, b) => a[0] - b[0]).map(([, e]) => e));
    state = JSON.parse(JSON.stringify(merged));
  }
  OutcomeJoin.restore(state!, options(log), id).end();
  return { log, refused };
}

function expectSame(whole: Log, got: Log, label: string): void {
  expect([...got.decisions].sort(), label).toEqual([...whole.decisions].sort());
  expect(got.events, label).toEqual(whole.events);
}

describe("a range joined on its own, merged at its edge", () => {
  it.each(captures)(
    "$name/$file: decides as one join in order, cut anywhere",
    ({ name, file, format, prefix }) => {
      const records = read(readFixture(join(DIR, name), file), format, prefix);
      const whole = serial(records);
      expect(whole.decisions.length).toBeGreaterThan(50);
      let merges = 0;
      let refused = 0;
      for (let cut = 1; cut < records.length; cut++) {
        const got = ranged(records, [cut]);
        expectSame(whole, got.log, `cut at ${cut}`);
        merges += 2;
        refused += got.refused;
      }
      const step = Math.max(1, Math.floor(records.length / 25));
      for (let a = 1; a < records.length; a += step)
        for (let b = a + 1; b < records.length; b += step) {
          const got = ranged(records, [a, b]);
          expectSame(whole, got.log, `cut at ${a} and ${b}`);
          merges += 3;
          refused += got.refused;
        }
      // Most ranges are merged, not joined again in order.
      if (format !== "syslog") expect(refused, `${refused} of ${merges} refused`).toBeLessThan(merges / 2);
    },
  );

  it.each(["postgresql.csv.gz", "postgresql.log.gz"])(
    "%s of every capture twice over, one stream: a server start ends the sessions open, their ids and pids come again; and so under a session cap",
    (file) => {
      const records = listCases(DIR).flatMap((name) => {
        const expected = readExpected(join(DIR, name));
        const { format } = expected.formats[file]!;
        const one = read(readFixture(join(DIR, name), file), format, expected.settings.log_line_prefix);
        return [...one, ...one];
      });
      for (const c of [{}, { maxSessions: 4 }]) {
        caps = c;
        try {
          const whole = serial(records);
          let merges = 0;
          let refused = 0;
          for (let cut = 1; cut < records.length; cut += 2)
            for (const length of [5, 97]) {
              if (cut + length >= records.length) continue;
              const got = ranged(records, [cut, cut + length]);
              expectSame(whole, got.log, `${JSON.stringify(c)}, cut at ${cut} and ${cut + length}`);
              merges += 3;
              refused += got.refused;
            }
          // Most ranges here hold a prepared transaction (every capture has one): joined again in order.
          expect(refused, `${refused} of ${merges} refused`).toBeLessThan(merges);
        } finally {
          caps = {};
        }
      }
    },
  );

  it("under small caps (entries undecided, sessions), decides as one join in order with the same caps", () => {
    const expected = readExpected(join(DIR, "outcomes"));
    const records = read(
      readFixture(join(DIR, "outcomes"), "postgresql.csv.gz"),
      "csvlog",
      expected.settings.log_line_prefix,
    );
    for (const c of [
      { maxPending: 4 },
      { maxSessions: 2 },
      { maxSessions: 3 },
      { maxPending: 6, maxSessions: 3 },
    ]) {
      caps = c;
      try {
        const whole = serial(records);
        for (let cut = 1; cut < records.length; cut++)
          expectSame(whole, ranged(records, [cut]).log, `${JSON.stringify(c)}, cut at ${cut}`);
        for (let a = 1; a < records.length; a += 4)
          for (let b = a + 1; b < records.length; b += 4)
            expectSame(whole, ranged(records, [a, b]).log, `${JSON.stringify(c)}, cut at ${a} and ${b}`);
      } finally {
        caps = {};
      }
    }
  });
});
