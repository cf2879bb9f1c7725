import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { Batch, Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

/** Counts what it is given and keeps nothing: this test is about the reader's memory. */
class CountingSink implements Sink {
  readonly name = "counting";
  entries = 0;
  ranges: [number, number][] = [];
  async write(batch: Batch): Promise<void> {
    this.entries += batch.entries;
    this.ranges.push([batch.range.start, batch.range.end]);
  }
  async close(): Promise<void> {}
}

const GB = 1_000_000_000;

describe("FileSource on a 1 GB log file", () => {
  it("reads it all with flat memory", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-large-"));
    try {
      const logDir = join(work, "log");
      mkdirSync(logDir);
      // Real csvlog records (a committed fixture) repeated to 1 GB.
      const fixture = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases", "session-all");
      const unit = gunzipSync(readFileSync(join(fixture, "postgresql.csv.gz")));
      const perUnit = JSON.parse(readFileSync(join(fixture, "expected.json"), "utf8")).formats[
        "postgresql.csv.gz"
      ].entries as number;
      const copies = Math.ceil(GB / unit.length);
      const file = join(logDir, "postgresql-big.csv");
      const fd = openSync(file, "w");
      const block = Buffer.concat(Array.from({ length: 16 }, () => unit));
      for (let i = 0; i < copies; i += 16)
        writeSync(
          fd,
          i + 16 <= copies ? block : Buffer.concat(Array.from({ length: copies - i }, () => unit)),
        );
      closeSync(fd);

      const sink = new CountingSink();
      const source = new FileSource({ logDir, format: "csvlog", stateDir: join(work, "state"), sink });
      global.gc?.();
      const baseline = process.memoryUsage().rss;
      const total = copies * perUnit;
      // Peak RSS while the first quarter is read, and over the whole file: flat means the second
      // does not keep growing past the first as the file goes on.
      let earlyPeak = baseline;
      let peak = baseline;
      const sampler = setInterval(() => {
        const rss = process.memoryUsage().rss;
        peak = Math.max(peak, rss);
        if (sink.entries <= total / 4) earlyPeak = Math.max(earlyPeak, rss);
      }, 20);
      await source.start();
      await waitUntil(
        () => sink.entries >= total,
        600_000,
        () => `read ${sink.entries} of ${total}`,
        200,
      );
      await source.stop();
      clearInterval(sampler);

      expect(sink.entries).toBe(total);
      // Contiguous ranges covering the whole file: nothing skipped, nothing twice.
      let end = 0;
      for (const [start, stop] of sink.ranges) {
        expect(start).toBe(end);
        end = stop;
      }
      expect(end).toBe(copies * unit.length);
      // The last three quarters add little: a leak of the file's records would add hundreds of
      // MB; a CI machine kept busy by other tests delays the collector by tens (85 MB seen once).
      expect((peak - earlyPeak) / 1e6).toBeLessThan(128);
      expect((peak - baseline) / 1e6).toBeLessThan(200); // and the whole stays bounded
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 900_000);
});
