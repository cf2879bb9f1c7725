/**
 * A join restored from a snapshot decides the rest of the stream exactly as one that never
 * stopped: cut every real capture after every record, snapshot (through JSON, as a checkpoint
 * stores it), restore, go on — and compare every decision, attempt and event.
 */
import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import { OutcomeJoin, type OutcomeJoinOptions } from "@auditpipe/outcome";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";
import { captures, DIR, read } from "./_captures.ts";

/** Runs the records through a join, restarting it from a JSON snapshot after record `cut`. */
function run(records: { record: LogRecord; entry?: AuditEntry }[], cut: number | undefined): string[] {
  const log: string[] = [];
  const options: OutcomeJoinOptions<number> = {
    decided: (h, outcome, sqlstate, reason) => log.push(`${h} ${outcome} ${sqlstate} ${reason}`),
    attempt: (r) => log.push(`attempt ${r.offset}`),
    event: (e) => log.push(`event ${e.kind} ${e.record.offset}`),
  };
  let j = new OutcomeJoin<number>(options);
  records.forEach(({ record, entry }, i) => {
    if (i === cut) {
      const json = JSON.stringify(j.snapshot((h) => h));
      j = OutcomeJoin.restore<number, number>(JSON.parse(json), options, (n) => n);
    }
    if (entry) j.record(record, entry, i);
    else j.record(record);
  });
  j.end();
  return log;
}

describe("OutcomeJoin snapshots", () => {
  it.each(captures)(
    "$name/$file: restored after any record, it decides as if it never stopped",
    ({ name, file, format, prefix }) => {
      const records = read(readFixture(join(DIR, name), file), format, prefix);
      const whole = run(records, undefined);
      expect(whole.length).toBeGreaterThan(50);
      for (let cut = 0; cut <= records.length; cut++)
        expect(run(records, cut), `cut at ${cut}`).toEqual(whole);
    },
  );

  it("keeps statement texts as keys only: no statement text is in a snapshot", () => {
    const records = read(readFixture(join(DIR, "outcomes"), "postgresql.csv.gz"), "csvlog", "");
    const j = new OutcomeJoin<number>({ decided() {} });
    records.slice(0, 60).forEach(({ record, entry }, i) => {
      if (entry) j.record(record, entry, i);
      else j.record(record);
    });
    const json = JSON.stringify(j.snapshot((h) => h));
    expect(json).not.toMatch(/INSERT|UPDATE|acct/);
    expect(j.undecided).toBeGreaterThan(0);
  });
});
