import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { COVERAGE_BACKLOG_FILE, CoverageBacklog } from "../src/manifest/_coverage-backlog.ts";
import type { CoverageEvent } from "../src/manifest/types.ts";

const dir = mkdtempSync(join(tmpdir(), "auditpipe-coverage-backlog-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const source: CoverageEvent = { kind: "source", sourceId: "f1", sourceName: "postgresql.csv" };
const start: CoverageEvent = {
  kind: "server",
  event: "start",
  at: "2026-11-27T10:00:00.000Z",
  sourceName: "postgresql.csv",
  offset: 0,
};

describe("CoverageBacklog: coverage events kept on disk until the journal opens", () => {
  it("keeps each event once, refuses a malformed one, hands the rest (past a torn line) to the journal, then sends straight there", async () => {
    const backlog = new CoverageBacklog(dir);
    await backlog.record(source);
    await backlog.record(source); // every batch says its source: kept once
    await backlog.record(start);
    await expect(backlog.record({ kind: "restart" } as never)).rejects.toThrow(/kind must be one of/);
    const path = join(dir, COVERAGE_BACKLOG_FILE);
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(2);
    appendFileSync(path, '{"kind":"server","ev'); // hand-made: what a crash mid-append leaves
    // The next process appends after the torn line, not onto it.
    const next = new CoverageBacklog(dir);
    const stop = { ...start, event: "stop" } as const;
    await next.record(stop);

    const journaled: CoverageEvent[] = [];
    const journal = { recordCoverage: async (e: CoverageEvent) => void journaled.push(e) };
    expect(await next.drainInto(journal)).toEqual({ events: 3, skipped: 1 });
    expect(journaled).toEqual([source, start, stop]);
    await next.record(source);
    expect(journaled).toEqual([source, start, stop, source]);
    expect(() => readFileSync(path)).toThrow(/ENOENT/);
  });

  it("is empty when nothing was taken: the drain hands over nothing", async () => {
    const backlog = new CoverageBacklog(join(dir, "none"));
    const journaled: CoverageEvent[] = [];
    expect(await backlog.drainInto({ recordCoverage: async (e) => void journaled.push(e) })).toEqual({
      events: 0,
      skipped: 0,
    });
    await backlog.record(source);
    expect(journaled).toEqual([source]);
  });
});
