/**
 * VolumeTally.state/merge (what parallel `analyze` relies on): the tallies of the parts of a real
 * log, merged in any order, report what one tally of the whole reports.
 */
import { join } from "node:path";
import { listCases, readFixture } from "@auditpipe/fixtures";
import { VolumeTally } from "@auditpipe/meter";
import { createCsvlogParser, decodeAuditEntry, type LogRecord } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

const CASES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");

/** Every record of every csvlog fixture, in order. */
function records(): LogRecord[] {
  const out: LogRecord[] = [];
  for (const name of listCases(CASES)) {
    const parser = createCsvlogParser({ record: (r) => out.push(r), malformed() {} });
    parser.push(readFixture(join(CASES, name), "postgresql.csv.gz"));
    parser.end();
  }
  return out;
}

function tally(part: LogRecord[]): VolumeTally {
  const t = new VolumeTally();
  for (const record of part) {
    t.addRecord();
    const entry = decodeAuditEntry(record, () => t.addMalformed());
    if (entry === undefined) {
      if (record.severity === "ERROR") t.addAttempt(record);
      continue;
    }
    t.addEntry(entry, record);
    // Outcomes of every kind, so that every breakdown has something to merge.
    const outcome = (["succeeded", "failed", "rolled_back", "unknown"] as const)[entry.statementId % 4]!;
    t.addOutcome(
      entry,
      record,
      outcome,
      outcome === "failed" ? "23505" : null,
      outcome === "unknown" ? "log-ended" : null,
    );
  }
  return t;
}

describe("VolumeTally.merge", () => {
  it("of the parts of a real log, in any order, reports what one tally of it reports", () => {
    const all = records();
    expect(all.length).toBeGreaterThan(1000);
    const whole = tally(all).report();
    expect(whole.failed.byCommand).not.toEqual({});
    for (const parts of [2, 7, 31]) {
      const size = Math.ceil(all.length / parts);
      const states = Array.from({ length: parts }, (_, i) =>
        tally(all.slice(i * size, (i + 1) * size)).state(),
      );
      const merged = new VolumeTally();
      for (const state of states.reverse()) merged.merge(structuredClone(state));
      expect(merged.report()).toEqual(whole);
    }
  });

  it("of an empty tally changes nothing", () => {
    const t = tally(records().slice(0, 500));
    const before = t.report();
    t.merge(new VolumeTally().state());
    expect(t.report()).toEqual(before);
  });
});
