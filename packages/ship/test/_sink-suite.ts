import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Batch, ShippedRecord, Sink } from "@auditpipe/ship";
import { NdjsonWriter, recordsBatch } from "@auditpipe/ship";
import { afterEach, describe, expect, test } from "vitest";
import { decompress } from "../src/compression.ts";

/** One shipped record, as the source would hand it; `n` makes each distinct. */
export function record(
  n: number,
  ts = "2024-05-06T07:08:09.123Z",
  statement = `SELECT ${n} FROM accounts`,
): ShippedRecord {
  return {
    record: "entry",
    ts,
    user: "app",
    database: "shop",
    pid: 4242,
    session_id: "6638a1b2.1092",
    session_line: n,
    application_name: "psql",
    remote_host: "[local]",
    audit_type: "SESSION",
    statement_id: n,
    substatement_id: 1,
    class: "READ",
    command: "SELECT",
    object_type: "",
    object_name: "",
    statement,
    parameter: "<not logged>",
    rows: null,
    outcome: "pending",
    sqlstate: null,
    source: { file: "/var/log/postgresql/postgresql.csv", offset: n * 100 },
  };
}

/** A batch covering `[start, end)` of source `sourceId` with `count` records. */
export function batch(
  sourceId: string,
  start: number,
  end: number,
  count = 3,
  ts?: string,
): Batch & { records: ShippedRecord[] } {
  const records = Array.from({ length: count }, (_, i) => record(start + i, ts));
  const range = { sourceId, sourceName: `/var/log/postgresql/${sourceId}.csv`, start, end };
  return { ...recordsBatch(range, records, count * 100), records };
}

export function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `auditpipe-${name}-`));
}

/** What the store holds: key → raw stored bytes. */
export type Stored = Map<string, Buffer>;

/** A sink under test, with a view of its store and a way to make the store fail. */
export interface SinkHarness {
  sink: Sink;
  /** Everything stored, by key relative to the sink's root (prefix included). */
  stored(): Promise<Stored>;
  /** The NDJSON lines of a stored object. */
  lines(body: Buffer, key: string): Promise<string[]>;
  /** Makes the store unavailable: writes must fail (or wait), never acknowledge. */
  breakStore(): Promise<void>;
  repairStore(): Promise<void>;
  /** Releases the sink and whatever the harness made. */
  dispose(): Promise<void>;
}

/** Settles within `ms`, or says it is still pending. */
async function settleWithin<T>(p: Promise<T>, ms: number): Promise<"resolved" | "rejected" | "pending"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"pending">((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  const result = await Promise.race([
    p.then(
      () => "resolved" as const,
      () => "rejected" as const,
    ),
    timeout,
  ]);
  clearTimeout(timer);
  return result;
}

/** Writes like a source does: on a rejection, waits and writes the same batch again. */
export async function writeUntilAcked(sink: Sink, b: Batch, delayMs = 200): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      await sink.write(b);
      return attempt;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/**
 * The contract every sink keeps (conventions: one suite, every sink): write stores and then
 * acknowledges; writing the same range again leaves one object with the same bytes; an empty
 * batch is acknowledged without an object; while the store fails nothing is acknowledged, and
 * once it is back the same writes store each batch exactly once (backpressure: the source waits).
 */
export function testSink(name: string, make: () => Promise<SinkHarness>): void {
  describe(`sink conformance: ${name}`, () => {
    let h: SinkHarness | undefined;
    afterEach(async () => {
      await h?.dispose();
      h = undefined;
    });

    test("write stores the batch, then acknowledges", async () => {
      h = await make();
      const b = batch("a1b2c3", 0, 300);
      await h.sink.write(b);
      const stored = await h.stored();
      expect(stored.size).toBe(1);
      const [key, body] = [...stored][0]!;
      expect(key).toMatch(
        /dt=2024-05-06\/hour=07\/.*a1b2c3-0000000000000000-0000000000000300\.ndjson\.(gz|zst)$/,
      );
      const lines = await h.lines(body, key);
      expect(lines.map((l) => JSON.parse(l))).toEqual(b.records);
    });

    test("writing the same range again leaves one object with the same bytes", async () => {
      h = await make();
      const b = batch("a1b2c3", 300, 600);
      await h.sink.write(b);
      const first = await h.stored();
      await h.sink.write(b);
      await h.sink.write(batch("a1b2c3", 300, 600)); // an equal batch, built again
      const again = await h.stored();
      expect([...again.keys()]).toEqual([...first.keys()]);
      for (const [key, body] of first) expect(again.get(key)?.equals(body)).toBe(true);
    });

    test("an empty batch is acknowledged without an object", async () => {
      h = await make();
      await h.sink.write(recordsBatch({ sourceId: "e", sourceName: "e", start: 0, end: 50 }, [], 0));
      expect((await h.stored()).size).toBe(0);
    });

    test("a batch of outcome lines and attempts, no entry, is stored", async () => {
      h = await make();
      const writer = new NdjsonWriter();
      const line = {
        record: "outcome",
        ts: "2024-05-06T07:08:09.123Z",
        session_id: "6638a1b2.1092",
        session_line: 7,
        source: { file: "/var/log/postgresql/postgresql.csv", offset: 700 },
        outcome: "succeeded",
        sqlstate: null,
      } as const;
      writer.addOutcomeLine(line);
      const { ndjson, entries, firstTs } = writer.take();
      expect(entries).toBe(0);
      await h.sink.write({
        range: { sourceId: "o", sourceName: "o", start: 50, end: 90 },
        ndjson,
        entries,
        bytes: 0,
        firstTs,
      });
      const stored = await h.stored();
      expect(stored.size).toBe(1);
      const [key, body] = [...stored][0]!;
      expect((await h.lines(body, key)).map((l) => JSON.parse(l))).toEqual([line]);
    });

    test("while the store fails, write() does not acknowledge; written again later, the batch is stored", async () => {
      h = await make();
      await h.breakStore();
      const b = batch("f00d", 0, 100);
      expect(await settleWithin(h.sink.write(b), 15_000)).toBe("rejected");
      await h.repairStore();
      // No "nothing stored yet" check here: a sink with a spool (S3) may already be uploading the
      // rejected batch in the background once the store is back; what counts is exactly one copy.
      await writeUntilAcked(h.sink, b);
      const stored = await h.stored();
      expect(stored.size).toBe(1);
      const [key, body] = [...stored][0]!;
      expect((await h.lines(body, key)).map((l) => JSON.parse(l))).toEqual(b.records);
    });

    test("backpressure: with the store down no write is acknowledged; once it is back every batch is stored once", async () => {
      h = await make();
      const harness = h;
      await harness.breakStore();
      const batches = [0, 1, 2, 3].map((i) => batch("beef", i * 100, i * 100 + 100, 2));
      const outcomes = await Promise.all(batches.map((b) => settleWithin(harness.sink.write(b), 3_000)));
      expect(outcomes).not.toContain("resolved");
      await harness.repairStore();
      await Promise.all(batches.map((b) => writeUntilAcked(harness.sink, b)));
      const stored = await harness.stored();
      expect(stored.size).toBe(batches.length);
      const all: unknown[] = [];
      for (const [key, body] of stored)
        all.push(...(await harness.lines(body, key)).map((l) => JSON.parse(l)));
      expect(all).toHaveLength(8);
      expect(new Set(all.map((r) => (r as ShippedRecord).source.offset)).size).toBe(8);
    });
  });
}

/** NDJSON lines of a stored body, decompressed by its extension. */
export async function ndjsonLines(body: Buffer, key: string): Promise<string[]> {
  const text = (await decompress(body, key.endsWith(".zst") ? "zstd" : "gzip")).toString("utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text.slice(0, -1).split("\n");
}
