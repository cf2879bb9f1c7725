/**
 * A record whose pgAudit payload is damaged, in the middle of a real csvlog (the committed
 * session-all fixture, written by PostgreSQL + pgaudit): the file pipeline reports it through the
 * decode stage's policy (malformed, with its place in the file, never its text), ships every
 * other entry, and acknowledges the whole file past it.
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createParser, type LogRecord, type MalformedRecord, ParseErrorCode } from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, shippedRecords, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

let work: string | undefined;
afterEach(() => {
  if (work) rmSync(work, { recursive: true, force: true });
  work = undefined;
});

function records(log: Buffer): LogRecord[] {
  const out: LogRecord[] = [];
  const parser = createParser("csvlog", { record: (r) => out.push(r), malformed: () => {} });
  parser.push(log);
  parser.end();
  return out;
}

describe("FileSource and a damaged pgAudit payload", () => {
  it("reports it as malformed at its offset in the file, ships every other entry and acknowledges past it", async () => {
    work = mkdtempSync(join(tmpdir(), "auditpipe-bad-payload-"));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const real = gunzipSync(readFileSync(join(repoRoot(), "fixtures/cases/session-all/postgresql.csv.gz")));
    const realRecords = records(real);
    const entries = realRecords.filter((r) => r.message.startsWith("AUDIT: ")).length;
    const at = realRecords[Math.floor(realRecords.length / 2)]!.offset;
    // Hand-made for this error test: a csvlog row whose payload stops after four of pgAudit's fields.
    const bad = Buffer.from(
      `2026-11-23 07:45:26.051 UTC,"postgres","postgres",12412,"[local]",6b03ef0e.307c,9,"SELECT",2026-11-23 07:45:26 UTC,3/7,0,LOG,00000,"AUDIT: SESSION,9,1,""secret_9",,,,,,,,,"psql","client backend",,0\n`,
    );
    const path = join(logDir, "postgresql-2026-11-23_000000.csv");
    const malformed: MalformedRecord[] = [];
    let acked = 0;
    /** Follows the directory until the file is acknowledged to its end, then stops. */
    const followToEnd = async (): Promise<void> => {
      const source = new FileSource({
        logDir,
        format: "csvlog",
        stateDir: join(work!, "state"),
        sink: new LocalDirSink({ dir: join(work!, "sink") }),
        batch: { maxEntries: 100, maxAgeMs: 50 }, // the last batch is not held a second
        observer: {
          malformed: (_file, error) => void malformed.push(error),
          sinkAck: (_sink, n) => {
            acked += n;
          },
        },
      });
      await source.start();
      const size = statSync(path).size;
      try {
        await waitUntil(
          () => source.status()[0]?.acked === size,
          20_000,
          () => `not acknowledged to the end: ${JSON.stringify(source.status())}`,
        );
      } finally {
        await source.stop();
      }
    };
    // The first half, then (after a restart, so the damaged record is read from a checkpoint, not
    // from byte 0) the damaged record and the second half.
    writeFileSync(path, real.subarray(0, at));
    await followToEnd();
    appendFileSync(path, Buffer.concat([bad, real.subarray(at)]));
    await followToEnd();
    expect(malformed).toEqual([
      { code: ParseErrorCode.BAD_AUDIT_PAYLOAD, reason: expect.any(String), offset: at, size: bad.length },
    ]);
    expect(malformed[0]!.reason).not.toContain("secret");
    expect(acked).toBe(entries);
    const shipped = shippedRecords<{ source: { offset: number } }>(join(work, "sink"));
    expect(shipped).toHaveLength(entries);
    expect(shipped.filter((r) => r.source.offset === at)).toEqual([]);
  });
});
