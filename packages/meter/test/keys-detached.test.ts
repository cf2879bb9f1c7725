/**
 * Keys the meter keeps (objects, users, databases, commands, classes) must not keep alive the text
 * they were cut from: parsers hand out substrings of a whole chunk, and V8 keeps a longer
 * substring as a view of its parent. Here each key is cut from a 64 KiB string of its own.
 */
import { LiveMeter, VolumeTally } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { gc } from "./_helper.ts";

const KEYS = 400;
const CHUNK = 64 << 10;

/** KEYS distinct keys, each a 40-character substring of its own CHUNK-byte string. */
function keysInChunks(): string[] {
  return Array.from({ length: KEYS }, (_, i) => {
    const chunk = Buffer.alloc(CHUNK, "a");
    chunk.write(`public.table_${i}_`, 100, "latin1");
    return chunk.toString("latin1").slice(100, 140);
  });
}

/** Heap growth (MB) that survives a full collection while what `feed` returns is alive and its input is not. */
function retainedMb(feed: (keys: string[]) => unknown): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = feed(keysInChunks());
  gc();
  const mb = (process.memoryUsage().heapUsed - before) / 1e6;
  expect(kept).toBeDefined(); // alive until measured
  return mb;
}

describe("kept keys", () => {
  it(`LiveMeter keeps ${KEYS} keys, not the ${(KEYS * CHUNK) / 1e6} MB they were cut from`, () => {
    let meter: LiveMeter | undefined;
    const mb = retainedMb((keys) => {
      meter = new LiveMeter();
      for (const k of keys)
        meter.entry(auditEntry({ objectName: k, command: k, class: k }), logRecord({ user: k, database: k }));
      return meter;
    });
    expect(Object.keys(meter!.snapshot().byObject.keys)).toHaveLength(KEYS);
    expect(mb).toBeLessThan(5);
  });

  it(`VolumeTally (analyze) keeps ${KEYS} keys, not the text they were cut from`, () => {
    let tally: VolumeTally | undefined;
    const mb = retainedMb((keys) => {
      tally = new VolumeTally();
      for (const k of keys)
        tally.addEntry(
          auditEntry({ objectName: k, command: k, class: k }),
          logRecord({ user: k, database: k }),
        );
      return tally;
    });
    expect(tally).toBeDefined();
    expect(mb).toBeLessThan(5);
  });
});
