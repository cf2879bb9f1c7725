/**
 * Landing objects come in either codec (zstd is the sinks' default; `--compression gzip` writes
 * gzip, and a sidecar restarted with the other setting leaves both in one hour): compaction reads
 * them alike, by extension, and the Parquet file holds every shipped entry of both once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compactArchive, openArchive } from "@auditpipe/compact";
import { type Batch, LocalDirSink, type Sink } from "@auditpipe/ship";
import { shippedRecords } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-codecs-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("compact over landing objects of both codecs", () => {
  it("compacts an hour of .ndjson.zst and .ndjson.gz objects into every entry once", async () => {
    const dir = join(work, "archive");
    const zstd = new LocalDirSink({ dir });
    const gzip = new LocalDirSink({ dir, compression: "gzip" });
    let batches = 0;
    // Every other batch through the gzip sink: one hour, one directory, both kinds.
    const alternating: Sink = {
      name: "alternating",
      write: (batch: Batch) => (batches++ % 2 ? gzip : zstd).write(batch),
      close: async () => {},
    };
    const acked = (await shipFixture("session-all/postgresql.csv.gz", alternating)).entries;
    expect(acked).toBeGreaterThan(1000);
    expect(shippedRecords(dir).length).toBe(acked); // testkit's oracle reads both codecs

    const results = await compactArchive(await openArchive(dir), { now: LATER });
    expect(results.map((r) => r.state)).toEqual(["due"]);
    const record = results[0]!.record!;
    // Every acknowledged entry once; the other rows are the attempts shipped beside them.
    expect(record.counts.entries).toBe(acked);
    expect(record.rows).toBe(record.counts.entries + record.counts.attempts);
    const sources = record.sources.map((s) => s.key);
    expect(sources.filter((k) => k.endsWith(".ndjson.zst")).length).toBeGreaterThan(0);
    expect(sources.filter((k) => k.endsWith(".ndjson.gz")).length).toBeGreaterThan(0);
  });
});
