/**
 * The join on real logs: the outcome fixtures (fixtures/outcomes/, a real PostgreSQL 15 with
 * pgaudit 1.7 running fixtures/src/outcome-session.ts) in every format, each entry's decision
 * compared with the truth the workload was written with (fixtures/src/outcome-oracle.ts reads it
 * off the csvlog with csv-parse, sharing no code with the join).
 */
import { join } from "node:path";
import {
  listCases,
  OUTCOME_CASES,
  outcomeTruth,
  outcomeVisibility,
  readExpected,
  readFixture,
  stepTag,
} from "@auditpipe/fixtures";
import { OutcomeJoin } from "@auditpipe/outcome";
import { createParser, decodeAuditEntry, type LogFormat } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

const DIR = join(import.meta.dirname, "..", "..", "..", "fixtures", "outcomes");

interface Joined {
  entries: { key: string; outcome: string; sqlstate: string | null }[];
  attempts: { tag: number | undefined; sqlstate: string | null; user: string | null }[];
}

/** Reads a capture with our parser and joins it, as analyze does. */
function joinCapture(bytes: Buffer, format: LogFormat, prefix: string, miscLogged: boolean): Joined {
  const entries: Joined["entries"] = [];
  const attempts: Joined["attempts"] = [];
  const perPid = new Map<number | null, number>();
  const join = new OutcomeJoin<Joined["entries"][number]>({
    miscLogged,
    decided(h, outcome, sqlstate) {
      h.outcome = outcome;
      h.sqlstate = sqlstate;
    },
    attempt(r) {
      attempts.push({ tag: stepTag(r.query), sqlstate: r.sqlState, user: r.user });
    },
  });
  const parser = createParser(
    format,
    {
      record(r) {
        const entry = decodeAuditEntry(r, () => {
          throw new Error("malformed payload");
        });
        if (!entry) return join.record(r);
        const k = perPid.get(r.pid) ?? 0;
        perPid.set(r.pid, k + 1);
        const handle = { key: `${r.pid}#${k}`, outcome: "", sqlstate: null };
        entries.push(handle);
        join.record(r, entry, handle);
      },
      malformed(m) {
        throw new Error(`malformed input at ${m.offset}: ${m.code}`);
      },
    },
    { prefix },
  );
  parser.push(bytes);
  parser.end();
  join.end();
  return { entries, attempts };
}

const rows = listCases(DIR).flatMap((name) => {
  const expected = readExpected(join(DIR, name));
  return Object.values(expected.formats).map((f) => ({ name, file: f.file, format: f.format, expected }));
});

describe("the outcome join on real PostgreSQL logs", () => {
  it("has the outcome cases in every format", () => {
    expect(listCases(DIR)).toEqual(OUTCOME_CASES.map((c) => c.name).sort());
    expect(rows).toHaveLength(OUTCOME_CASES.length * 6);
  });

  it.each(rows)(
    "$name/$file: every entry's outcome and every attempt equal the truth",
    ({ name, file, format, expected }) => {
      const fixture = OUTCOME_CASES.find((c) => c.name === name)!;
      const csv = readFixture(join(DIR, name), "postgresql.csv.gz");
      const truth = outcomeTruth(csv, outcomeVisibility(fixture, format));
      const visibility = outcomeVisibility(fixture, format);
      const got = joinCapture(
        readFixture(join(DIR, name), file),
        format,
        expected.settings.log_line_prefix,
        visibility.misc,
      );
      const byKey = (e: { key: string; outcome: string; sqlstate: string | null }) =>
        `${e.key} ${e.outcome} ${e.sqlstate}`;
      // Sorted by key: syslog gives a process's messages out in order, but not across processes.
      expect(got.entries.map(byKey).sort()).toEqual(truth.entries.map(byKey).sort());
      const attempt = (a: { tag: number | undefined; sqlstate: string | null; user: string | null }) =>
        `${a.tag} ${visibility.sqlstate ? a.sqlstate : "-"} ${a.user}`;
      expect(got.attempts.map(attempt).sort()).toEqual(truth.attempts.map(attempt).sort());
      // The same counts expected.json holds for analyze.
      expect(expected.formats[file]?.outcomes).toEqual(truth.counts);
    },
  );
});
