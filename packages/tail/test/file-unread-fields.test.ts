/**
 * The lane asks its csvlog parser not to make the fields in UNREAD_FIELDS (they stay null): this
 * holds only while nothing the lane hands records to reads them. Every record the lane's parser
 * gives out here is wrapped so that reading one of those fields is noted, and the fixtures (audit
 * entries, errors and failed logins, server starts and stops) are shipped through it.
 * Input: the committed fixtures, written by a real PostgreSQL + pgaudit (fixtures/generate).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type * as Parse from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";

/** The unread fields read, and the records given out, by the lane's parsers. */
const reads: string[] = [];
let recordsGiven = 0;

vi.mock("@auditpipe/parse", async (importOriginal) => {
  const parse = await importOriginal<typeof Parse>();
  const unread = new Set<string | symbol>(parse.UNREAD_FIELDS);
  const watched = (sink: Parse.RecordSink): Parse.RecordSink => ({
    ...sink,
    record(record) {
      recordsGiven++;
      sink.record(
        new Proxy(record, {
          get(target, key, receiver) {
            if (unread.has(key)) reads.push(String(key));
            return Reflect.get(target, key, receiver);
          },
        }),
      );
    },
  });
  return {
    ...parse,
    createParser: (format: Parse.LogFormat, sink: Parse.RecordSink, options?: Parse.ParserOptions) =>
      parse.createParser(format, watched(sink), options),
    createDivertedParser: (sink: Parse.RecordSink, options?: Parse.ParserOptions) =>
      parse.createDivertedParser(watched(sink), options),
  };
});

const CASES = ["cases/session-all", "cases/ddl-role-object", "outcomes/outcomes"];

let work: string | undefined;
afterEach(() => {
  if (work) rmSync(work, { recursive: true, force: true });
  work = undefined;
});

describe("the fields a lane's csvlog parser leaves out", () => {
  for (const name of CASES) {
    it(`${name}: nothing the lane hands a record to reads them`, async () => {
      work = mkdtempSync(join(tmpdir(), "auditpipe-unread-"));
      const logDir = join(work, "log");
      mkdirSync(logDir);
      const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures", name, "postgresql.csv.gz")));
      writeFileSync(join(logDir, "postgresql-2026-01-01_000000.csv"), log);
      reads.length = 0;
      recordsGiven = 0;
      const lines = log.toString("latin1").match(/\n\d{4}-\d\d-\d\d /g)!.length + 1;
      let acked = 0;
      let attempts = 0;
      const source = new FileSource({
        logDir,
        format: "csvlog",
        stateDir: join(work, "state"),
        sink: new LocalDirSink({ dir: join(work, "sink") }),
        batch: { maxEntries: 7 },
        observer: {
          attempt: () => void attempts++,
          sinkAck: (_sink, entries) => {
            acked += entries;
          },
        },
      });
      await source.start();
      await waitUntil(
        () => recordsGiven === lines && acked > 0,
        30_000,
        () => `${recordsGiven} of ${lines} records read, ${acked} entries acknowledged`,
      );
      await source.stop();
      expect(reads).toEqual([]);
      if (name.startsWith("outcomes/")) expect(attempts).toBeGreaterThan(0);
    });
  }
});
