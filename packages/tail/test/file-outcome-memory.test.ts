/**
 * What a lane keeps per undecided entry is its handle, not the text the entry was parsed from:
 * the parser hands out fields as views of its whole 64 KiB chunk, and a handle (or the join's
 * session) holding one kept that chunk as long as the entry waited for its outcome. Read from
 * real csvlog records of the session-all fixture, rearranged: one session's BEGIN, then its
 * UPDATE repeated ENTRIES times, each a chunk apart (another session's connection record
 * repeated between them), so every entry waits in the open block on a chunk of its own.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createParser, type LogRecord } from "@auditpipe/parse";
import type { Batch, Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { gc, waitUntil } from "@auditpipe/testkit";
import { expect, it } from "vitest";

const ENTRIES = 300;
const CHUNK = 64 << 10;

class CountingSink implements Sink {
  readonly name = "counting";
  entries = 0;
  pending = 0;
  async write(batch: Batch): Promise<void> {
    this.entries += batch.entries;
    this.pending += batch.ndjson.toString().split('"outcome":"pending"').length - 1;
  }
  async close(): Promise<void> {}
}

/** The fixture's records with their bytes. */
function records(unit: Buffer): { record: LogRecord; bytes: Buffer }[] {
  const out: { record: LogRecord; bytes: Buffer }[] = [];
  const parser = createParser("csvlog", {
    record: (record) =>
      out.push({ record, bytes: unit.subarray(record.offset, record.offset + record.size) }),
    malformed: (error) => {
      throw new Error(`fixture record malformed: ${error.reason}`);
    },
  });
  parser.push(unit);
  parser.end();
  return out;
}

/** The log described above. */
function openBlockLog(): Buffer {
  const fixture = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases", "session-all");
  const all = records(gunzipSync(readFileSync(join(fixture, "postgresql.csv.gz"))));
  const at = all.findIndex((r) => r.record.message.startsWith("AUDIT: SESSION,1,1,MISC,BEGIN,"));
  const begin = all[at]!;
  const session = begin.record.sessionId;
  const update = all.find(
    (r, i) => i > at && r.record.sessionId === session && r.record.message.startsWith("AUDIT: SESSION,2,"),
  )!;
  const other = all.find(
    (r) => r.record.sessionId !== session && r.record.message.startsWith("connection received"),
  )!;
  expect(update.record.virtualTransactionId).toBe(begin.record.virtualTransactionId);
  const pad = Buffer.concat(Array.from({ length: Math.ceil(CHUNK / other.bytes.length) }, () => other.bytes));
  return Buffer.concat([begin.bytes, ...Array.from({ length: ENTRIES }, () => [update.bytes, pad]).flat()]);
}

it(`a lane keeps ${ENTRIES} entries waiting in an open block, not the chunks they were read from`, async () => {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-outcome-memory-"));
  const sink = new CountingSink();
  const source = new FileSource({
    logDir: join(work, "log"),
    format: "csvlog",
    stateDir: join(work, "state"),
    sink,
  });
  try {
    mkdirSync(join(work, "log"));
    writeFileSync(join(work, "log", "postgresql.csv"), openBlockLog());
    gc();
    const before = process.memoryUsage().heapUsed;
    await source.start();
    await waitUntil(
      () => sink.entries >= ENTRIES + 1,
      60_000,
      () => `shipped ${sink.entries} of ${ENTRIES + 1}`,
    );
    gc();
    const mb = (process.memoryUsage().heapUsed - before) / 1e6;
    // Every entry shipped pending: the block never ended, the join holds them all.
    expect(sink.pending).toBe(ENTRIES + 1);
    expect(mb).toBeLessThan(5); // 20 MB when each handle kept its chunk
  } finally {
    await source.stop();
    rmSync(work, { recursive: true, force: true });
  }
}, 120_000);
