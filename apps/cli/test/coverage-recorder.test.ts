import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StreamEvent } from "@auditpipe/outcome";
import type { LogRecord } from "@auditpipe/parse";
import type { Batch, CoverageEvent, Sink } from "@auditpipe/ship";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { CoverageRecorder, coverageEventOf } from "../src/run/coverage-recorder.ts";

const logger = pino({ level: "silent" });
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const stateDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), "auditpipe-coverage-"));
  dirs.push(d);
  return d;
};

/** Only the fields coverage reads; a hand-made record, not a log line. */
const record = (offset: number): LogRecord =>
  ({ offset, timestamp: "2026-11-27 10:00:00.000 UTC" }) as LogRecord;
const reload = (offset: number): StreamEvent => ({
  kind: "setting-changed",
  setting: "pgaudit.log",
  value: "none",
  via: "reload",
  record: record(offset),
});
const batch = { range: { sourceId: "f1", sourceName: "/log/postgresql.csv", start: 0, end: 10 } } as Batch;

/** A journal that keeps what it was given, resolving each recording when told. */
function journal() {
  const events: CoverageEvent[] = [];
  const waiting: (() => void)[] = [];
  let fail = false;
  return {
    events,
    release: () => {
      for (const r of waiting.splice(0)) r();
    },
    failNext: () => {
      fail = true;
    },
    hold: false,
    recordCoverage(event: CoverageEvent): Promise<void> {
      if (fail) {
        fail = false;
        return Promise.reject(new Error("disk full"));
      }
      events.push(event);
      return this.hold ? new Promise<void>((r) => waiting.push(r)) : Promise.resolve();
    },
  };
}

describe("CoverageRecorder", () => {
  it("maps stream events to manifest coverage events the format accepts ", () => {
    const crash = coverageEventOf({ kind: "server-crash", record: record(7) }, "/log/a.csv");
    const change = coverageEventOf(reload(9), "/log/a.csv");
    expect(crash).toEqual({
      kind: "server",
      event: "crash",
      at: "2026-11-27 10:00:00.000 UTC",
      sourceName: "a.csv",
      offset: 7,
    });
    expect(change).toMatchObject({ kind: "setting", value: "none", via: "reload", offset: 9 });
    expect(coverageEventOf({ kind: "config-reload", record: record(1) }, "/log/a.csv")).toBeNull();
  });

  it("records an event of a source range once, also when a later run replays the range", async () => {
    const dir = stateDir();
    const j = journal();
    const first = await CoverageRecorder.open(j, dir, logger);
    first.streamEvent(reload(100), "/log/a.csv");
    first.streamEvent(reload(100), "/log/a.csv");
    first.dataLost("/log/a.csv", 5, 9, "deleted");
    await first.settled();
    // A restart (in another hour: the journal would list it again) re-reads the range.
    const second = await CoverageRecorder.open(j, dir, logger);
    second.streamEvent(reload(100), "/log/a.csv");
    second.dataLost("/log/a.csv", 5, 9, "deleted");
    second.streamEvent(reload(200), "/log/a.csv");
    await second.settled();
    expect(
      j.events.map((e) => [e.kind, "offset" in e ? e.offset : e.kind === "gap" ? e.start : null]),
    ).toEqual([
      ["setting", 100],
      ["gap", 5],
      ["setting", 200],
    ]);
  });

  it("acknowledges a batch only after the events reported before it are journaled, and retries a failed one first", async () => {
    const j = journal();
    const rec = await CoverageRecorder.open(j, stateDir(), logger);
    const written: Batch[] = [];
    const sink: Sink = { name: "test", write: async (b) => void written.push(b), close: async () => {} };
    const wrapped = rec.wrap(sink);
    j.hold = true;
    rec.streamEvent({ kind: "server-stop", record: record(3) }, "/log/a.csv");
    const write = wrapped.write(batch);
    await new Promise((r) => setTimeout(r, 20));
    expect(written).toEqual([]); // the event is not on disk yet: no acknowledgement
    j.hold = false;
    j.release();
    await write;
    expect(written).toEqual([batch]);
    expect(j.events.map((e) => e.kind)).toEqual(["server", "source"]);

    j.failNext();
    rec.streamEvent({ kind: "server-start", record: record(4) }, "/log/a.csv");
    await expect(wrapped.write(batch)).rejects.toThrow(/could not be journaled/);
    expect(written).toHaveLength(1);
    await wrapped.write(batch); // the source retries the batch: the event is journaled first
    expect(written).toHaveLength(2);
    expect(j.events.filter((e) => e.kind === "server").map((e) => (e as { event: string }).event)).toEqual([
      "stop",
      "start",
    ]);
  });
});
