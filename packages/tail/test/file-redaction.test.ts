/**
 * `--redact` at the file source: records are redacted where they are built (before they are
 * encoded, a read's worth at a time), while the observer (metering) still sees the originals.
 * Input: the committed fixtures, written by a real PostgreSQL + pgaudit (fixtures/generate).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { AUDIT_PREFIX, createParser, parseAuditPayload } from "@auditpipe/parse";
import {
  LocalDirSink,
  type RedactionMode,
  redactRecord,
  type ShippedRecord,
  toShippedRecord,
} from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, shippedRecords, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

const CASES = ["session-all", "read-write-once", "ddl-role-object"];
const FILE = "postgresql-2026-01-01_000000.csv";

function shipped(dir: string): ShippedRecord[] {
  return shippedRecords<ShippedRecord>(dir).sort((a, b) => a.source.offset - b.source.offset);
}

/** What the shipped records must be: every audit entry of the file, redacted as asked. */
function expected(log: Buffer, path: string, mode: RedactionMode): ShippedRecord[] {
  const out: ShippedRecord[] = [];
  const parser = createParser("csvlog", {
    record(r) {
      if (!r.message.startsWith(AUDIT_PREFIX)) return;
      const entry = parseAuditPayload(r.message);
      if (entry) out.push(redactRecord(toShippedRecord(entry, r, path, r.offset), mode));
    },
    malformed() {},
  });
  parser.push(log);
  parser.end();
  return out;
}

let work: string | undefined;
afterEach(() => {
  if (work) rmSync(work, { recursive: true, force: true });
  work = undefined;
});

describe("FileSource with redaction", () => {
  for (const name of CASES) {
    it(`${name}: ships every entry redacted, meters the original statements`, async () => {
      work = mkdtempSync(join(tmpdir(), "auditpipe-redact-"));
      const logDir = join(work, "log");
      mkdirSync(logDir);
      const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures/cases", name, "postgresql.csv.gz")));
      const path = join(logDir, FILE);
      writeFileSync(path, log);
      const mode: RedactionMode = { literals: true, parameters: true };
      const metered: string[] = [];
      let acked = 0;
      const source = new FileSource({
        logDir,
        format: "csvlog",
        stateDir: join(work, "state"),
        sink: new LocalDirSink({ dir: join(work, "sink") }),
        redact: mode,
        batch: { maxEntries: 7, maxAgeMs: 50 }, // several batches, several encoded pieces; the last not held a second
        observer: {
          entry: (entry) => void metered.push(entry.statement),
          sinkAck: (_sink, entries) => {
            acked += entries;
          },
        },
      });
      await source.start();
      const want = expected(log, path, mode);
      await waitUntil(
        () => acked === want.length,
        30_000,
        () => `acknowledged ${acked} of ${want.length} entries`,
      );
      await source.stop();

      const got = shipped(join(work, "sink"));
      // Redaction is the subject here; outcomes are outcome-stream.test.ts's.
      const withoutOutcome = (records: ShippedRecord[]) =>
        records.map(({ outcome: _, sqlstate: __, ...r }) => r);
      expect(withoutOutcome(got)).toEqual(withoutOutcome(want));
      expect(got.length).toBeGreaterThan(0);
      expect(got.every((r) => r.redacted?.includes("statement") || r.statement.startsWith("<"))).toBe(true);
      // The meter saw what PostgreSQL logged; the store holds something else for some of it.
      const original = expected(log, path, { literals: false, parameters: false }).map((r) => r.statement);
      expect(metered).toEqual(original);
      expect(got.filter((r, i) => r.statement !== original[i]).length).toBeGreaterThan(0);
    });
  }
});
