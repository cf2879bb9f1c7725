/**
 * OutcomeJoin.entry and RangeJoin.entry (entries read as csvlog AuditViews, ParserOptions.auditView):
 * the same decisions, attempts, events and state as record(record, entry) on every csvlog fixture,
 * the views declined (setting commands with events on, a range's edge) going through record().
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { type Outcome, OutcomeJoin, RangeJoin, type StreamEvent } from "@auditpipe/outcome";
import { type AuditView, createCsvlogParser, decodeAuditEntry, type LogRecord } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..", "fixtures");

function csvlogFixtures(): string[] {
  const out: string[] = [];
  for (const group of ["cases", "outcomes"])
    for (const name of readdirSync(join(ROOT, group))) out.push(join(ROOT, group, name, "postgresql.csv.gz"));
  return out;
}

interface Run {
  decided: [number, Outcome, string | null, string | null][];
  attempts: number[];
  events: [string, number][];
  state: unknown;
  viewed: number;
}

/** Joins `bytes` (csvlog) as analyze does, with or without views; `range`: a RangeJoin from an empty state. */
function joinLog(bytes: Buffer, views: boolean, range: boolean): Run {
  const run: Run = { decided: [], attempts: [], events: [], state: undefined, viewed: 0 };
  const options = {
    decided: (h: number, outcome: Outcome, sqlstate: string | null, reason: string | null) =>
      run.decided.push([h, outcome, sqlstate, reason]),
    attempt: (r: LogRecord) => run.attempts.push(r.offset),
    event: (e: StreamEvent) => run.events.push([e.kind, e.record.offset]),
    holdTexts: true,
  };
  const rj = range ? new RangeJoin<number>(options) : undefined;
  const oj = rj?.join ?? new OutcomeJoin<number>(options);
  const parser = createCsvlogParser(
    {
      record(r, decoded) {
        const entry = decoded ?? decodeAuditEntry(r, () => {});
        if (rj) {
          if (entry === undefined) rj.record(r);
          else rj.record(r, entry, r.offset);
        } else if (entry === undefined) oj.record(r);
        else oj.record(r, entry, r.offset);
      },
      malformed() {},
    },
    {
      omitUntalliedFields: true,
      decodeAuditEntries: true,
      ...(views
        ? {
            auditView: {
              entry(v: AuditView): boolean {
                const taken = rj ? rj.entry(v, v.offset) : oj.entry(v, v.offset);
                if (taken) run.viewed++;
                return taken;
              },
            },
          }
        : {}),
    },
  );
  for (let i = 0; i < bytes.length; i += 4096) {
    parser.push(bytes.subarray(i, i + 4096));
    oj.releaseTexts();
  }
  parser.end();
  run.state = rj ? rj.result((h) => h) : oj.snapshot((h) => h);
  if (!rj) oj.end();
  return run;
}

describe("the join of entries read as AuditViews", () => {
  const files = csvlogFixtures();

  it("decides, reports and keeps what it does with records and entries, on every csvlog fixture", () => {
    let viewed = 0;
    for (const file of files) {
      const bytes = gunzipSync(readFileSync(file));
      for (const range of [false, true]) {
        const plain = joinLog(bytes, false, range);
        const viaViews = joinLog(bytes, true, range);
        viewed += viaViews.viewed;
        expect({ ...viaViews, viewed: 0 }, `${file}${range ? " (range)" : ""}`).toEqual({
          ...plain,
          viewed: 0,
        });
      }
    }
    expect(viewed).toBeGreaterThan(100);
  });
});
