/**
 * The sidecar's file lanes ask csvlog not to make the fields in UNREAD_FIELDS (they stay null):
 * that holds only while nothing the lane hands a record to reads them. Every record of the
 * fixtures (audit entries, errors, failed logins, server starts and stops) goes, as the lane
 * hands it on (packages/tail/src/_file-lane.ts), to the pipeline tap (meter, advisor), the outcome
 * join with its attempts and events (coverage), and the encoders, plain and redacted, wrapped so
 * that reading one of those fields is noted.
 * Input: the committed fixtures, written by a real PostgreSQL + pgaudit (fixtures/generate).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { LiveMeter } from "@auditpipe/meter";
import { OutcomeJoin } from "@auditpipe/outcome";
import { createCsvlogParser, decodeAuditEntry, type LogRecord, UNREAD_FIELDS } from "@auditpipe/parse";
import { encodeAttempt, encodeEntry, encodeOutcome, NdjsonWriter, type RedactionMode } from "@auditpipe/ship";
import { repoRoot } from "@auditpipe/testkit";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { coverageEventOf } from "../src/run/coverage-recorder.ts";
import { createPipelineTap } from "../src/run/pipeline-tap.ts";

const CASES = ["cases/session-all", "cases/ddl-role-object", "cases/object-only", "outcomes/outcomes"];
const FILE = "/log/postgresql.csv";
const unread = new Set<string | symbol>(UNREAD_FIELDS);

/** The fixture's records as the lane's parser gives them, each noting a read of an unread field in `reads`. */
function watchedRecords(name: string, reads: string[]): LogRecord[] {
  const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures", name, "postgresql.csv.gz")));
  const records: LogRecord[] = [];
  const parser = createCsvlogParser(
    {
      record: (record) =>
        records.push(
          new Proxy(record, {
            get(target, key, receiver) {
              if (unread.has(key)) reads.push(String(key));
              return Reflect.get(target, key, receiver);
            },
          }),
        ),
      malformed: () => {},
    },
    { omitUnreadFields: true },
  );
  parser.push(log);
  parser.end();
  return records;
}

describe("the csvlog fields the sidecar's lanes leave out", () => {
  for (const name of CASES) {
    for (const redact of [undefined, { literals: true, parameters: true }] as (RedactionMode | undefined)[]) {
      it(`${name}${redact ? ", redacted" : ""}: nothing a lane hands a record to reads them`, () => {
        const reads: string[] = [];
        const records = watchedRecords(name, reads);
        const { observer } = createPipelineTap(new LiveMeter(), pino({ level: "silent" }));
        const writer = new NdjsonWriter();
        let current: LogRecord | undefined;
        let attempts = 0;
        let events = 0;
        const join = new OutcomeJoin<{ mark: number; sessionId: string | null; sessionLine: number | null }>({
          decided(h, outcome, sqlstate) {
            observer.outcome?.(outcome, sqlstate, null);
            writer.setOutcome(h.mark, outcome, sqlstate);
            // As for an entry shipped `pending` in an earlier batch.
            encodeOutcome(writer, { ...h, file: FILE, offset: 0 }, current, outcome, sqlstate);
          },
          attempt(record) {
            attempts++;
            observer.attempt?.(record);
            encodeAttempt(writer, record, FILE, record.offset, redact);
          },
          event(event) {
            events++;
            coverageEventOf(event, FILE);
          },
        });
        for (const record of records) {
          const entry = decodeAuditEntry(record, () => {});
          current = record;
          if (entry === undefined) join.record(record);
          else {
            observer.entry?.(entry, record);
            const mark = encodeEntry(writer, entry, record, FILE, record.offset, redact);
            join.record(record, entry, {
              mark,
              sessionId: record.sessionId,
              sessionLine: record.sessionLine,
            });
          }
        }
        join.end();
        writer.take();
        expect(reads).toEqual([]);
        expect(records.length).toBeGreaterThan(0);
        if (name.startsWith("outcomes/")) expect(attempts + events).toBeGreaterThan(0);
      });
    }
  }
});
