/**
 * The deliver stage against a real LocalDirSink in a temp dir, its writes held back or failed on
 * the test's word: acknowledgements in each source's order whatever order the writes finish in,
 * the write-ahead before any write, the in-flight limit over all sources, retries until stored,
 * and the stop deadline.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Batch,
  Delivery,
  type DeliverySource,
  LocalDirSink,
  recordsBatch,
  type Sink,
  toShippedRecord,
} from "@auditpipe/ship";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureAuditEntries } from "./_fixture-entries.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function sinkDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-deliver-"));
  dirs.push(dir);
  return dir;
}

/** Objects stored under `dir` (zstd: LocalDirSink's default). */
function stored(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((p) => p.endsWith(".ndjson.zst"));
}

const real = fixtureAuditEntries().filter((e) => e.source === "session-all/postgresql.csv.gz");

/** Batches of 5 real entries each, covering consecutive ranges of source `id`. */
function batches(id: string, count: number): Batch[] {
  return Array.from({ length: count }, (_, i) => {
    const slice = real.slice(i * 5, i * 5 + 5);
    const start = slice[0]!.record.offset;
    const last = slice.at(-1)!.record;
    const records = slice.map(({ entry, record }) =>
      toShippedRecord(entry, record, `${id}.csv`, record.offset),
    );
    return recordsBatch(
      { sourceId: id, sourceName: `${id}.csv`, start, end: last.offset + last.size },
      records,
      slice.reduce((n, e) => n + e.record.size, 0),
    );
  });
}

/** A LocalDirSink whose writes wait until the test opens their gate (by range start). */
class GatedSink implements Sink {
  readonly name = "gated";
  readonly events: string[] = [];
  writing = 0;
  maxWriting = 0;
  private readonly gates = new Map<string, () => void>();
  private readonly opened = new Set<string>();
  private readonly inner: Sink;
  constructor(inner: Sink) {
    this.inner = inner;
  }
  async write(batch: Batch): Promise<void> {
    const key = `${batch.range.sourceId}:${batch.range.start}`;
    this.events.push(`write ${key}`);
    this.writing++;
    this.maxWriting = Math.max(this.maxWriting, this.writing);
    try {
      if (!this.opened.has(key)) await new Promise<void>((resolve) => this.gates.set(key, resolve));
      await this.inner.write(batch);
    } finally {
      this.writing--;
    }
  }
  open(batch: Batch): void {
    const key = `${batch.range.sourceId}:${batch.range.start}`;
    this.opened.add(key);
    this.gates.get(key)?.();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** A source that records what Delivery tells it. */
function source(name: string, ready: Batch[], events: string[]): DeliverySource & { acked: number[] } {
  const acked: number[] = [];
  return {
    name,
    ready,
    acked,
    handingOver: async () => {
      events.push(`handingOver ${name} ${ready.length}`);
    },
    acknowledged: (end) => acked.push(end),
    recycle: () => {},
  };
}

/** Resolves after `n` more writes settled (Delivery's onSettled). */
function settlements(): { after(n: number): Promise<void>; onSettled(): void } {
  let settled = 0;
  const waiting: { n: number; resolve: () => void }[] = [];
  return {
    onSettled() {
      settled++;
      for (const w of waiting.filter((w) => settled >= w.n)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    },
    after(n) {
      const target = settled + n;
      return new Promise((resolve) => {
        if (settled >= target) resolve();
        else waiting.push({ n: target, resolve });
      });
    },
  };
}

describe("Delivery", () => {
  it("acknowledges a source in its order, whatever order the writes finish in, after writing ahead", async () => {
    const dir = sinkDir();
    const sink = new GatedSink(new LocalDirSink({ dir }));
    const settled = settlements();
    const delivery = new Delivery({ sink, onSettled: settled.onSettled });
    const [b1, b2, b3] = batches("a", 3) as [Batch, Batch, Batch];
    const a = source("a", [b1, b2, b3], sink.events);
    const queue = delivery.queue(a);
    await queue.deliver(); // all three handed over: nothing ready is left waiting
    expect(sink.events[0]).toBe("handingOver a 0");
    expect(sink.events.slice(1).sort()).toEqual([b1, b2, b3].map((b) => `write a:${b.range.start}`).sort());

    const later = settled.after(2);
    sink.open(b3);
    sink.open(b2);
    await later;
    await queue.deliver();
    expect(a.acked).toEqual([]); // b1 is still out: nothing may be checkpointed past it
    expect(queue.inflight.map((f) => f.state)).toEqual(["writing", "acked", "acked"]);

    const last = settled.after(1);
    sink.open(b1);
    await last;
    await queue.deliver();
    expect(a.acked).toEqual([b3.range.end]);
    expect(queue.inflight).toEqual([]);
    expect(stored(dir)).toHaveLength(3);
  });

  it("keeps at most maxInFlight writes out over all sources: a source waits for room", async () => {
    const sink = new GatedSink(new LocalDirSink({ dir: sinkDir() }));
    const settled = settlements();
    const delivery = new Delivery({ sink, maxInFlight: 3, onSettled: settled.onSettled });
    const aBatches = batches("a", 2);
    const bBatches = batches("b", 2);
    const a = delivery.queue(source("a", [...aBatches], []));
    const bSource = source("b", [...bBatches], []);
    const b = delivery.queue(bSource);
    await a.deliver();
    let bReturned = false;
    const bDone = b.deliver().then(() => {
      bReturned = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(sink.maxWriting).toBe(3);
    expect(bSource.ready).toHaveLength(1); // one of b's went out, the other waits for room
    expect(bReturned).toBe(false);

    sink.open(aBatches[0]!);
    await bDone;
    expect(bSource.ready).toHaveLength(0);
    for (const batch of [...aBatches, ...bBatches]) sink.open(batch);
    await a.deliver(true);
    await b.deliver(true);
    expect(sink.maxWriting).toBe(3);
    // In order, in one step or two (b's first may be collected while b waited for room).
    expect([[bBatches[1]!.range.end], bBatches.map((x) => x.range.end)]).toContainEqual(bSource.acked);
  });

  it("retries a failed write with backoff until the sink stores it, reporting each failure", async () => {
    const dir = sinkDir();
    const inner = new LocalDirSink({ dir });
    let failures = 2;
    const flaky: Sink = {
      name: "flaky",
      write: async (batch) => {
        if (failures-- > 0) throw new Error("store unavailable");
        await inner.write(batch);
      },
      close: () => inner.close(),
    };
    const errors: unknown[] = [];
    const acks: number[] = [];
    const logged: object[] = [];
    const delivery = new Delivery({
      sink: flaky,
      observer: {
        sinkError: (_name, error) => errors.push(error),
        sinkAck: (_name, entries) => acks.push(entries),
      },
      logger: { error: (obj) => logged.push(obj) },
    });
    const [only] = batches("a", 1) as [Batch];
    const a = source("a", [only], []);
    await delivery.queue(a).deliver(true);
    expect(errors).toHaveLength(2);
    expect(logged).toMatchObject([
      { attempt: 1, file: "a" },
      { attempt: 2, file: "a" },
    ]);
    expect(acks).toEqual([only.entries]);
    expect(a.acked).toEqual([only.range.end]);
    expect(stored(dir)).toHaveLength(1);
  });

  it("recycles a batch once: when its sink releases the NDJSON, or at the acknowledgement (a sink that does not release; a batch covering no bytes)", async () => {
    const dir = sinkDir();
    const inner = new LocalDirSink({ dir });
    const events: string[] = [];
    // Releases before storing, twice (a sink may call it more than once), and fails each batch's first write.
    const failedOnce = new Set<number>();
    const releasing: Sink = {
      name: "releasing",
      write: async (b, release) => {
        release?.();
        release?.();
        if (!failedOnce.has(b.range.start)) {
          failedOnce.add(b.range.start);
          events.push(`failed ${b.range.end === b.range.start ? "empty" : "a"}`);
          throw new Error("store down");
        }
        await inner.write(b);
      },
      close: () => inner.close(),
    };
    for (const sink of [releasing, inner]) {
      const [a, b] = batches(sink.name, 2);
      const empty: Batch = { ...b!, range: { ...b!.range, end: b!.range.start } };
      const src = source(sink.name, [a!, empty], events);
      src.recycle = (x) =>
        events.push(`recycle ${sink.name} ${x === a ? "a" : "empty"} after ${src.acked.length} acks`);
      await new Delivery({ sink, maxInFlight: 1 }).queue(src).deliver(true);
      expect(src.acked).toEqual([a!.range.end, empty.range.end]);
    }
    expect(events.filter((e) => /^(recycle|failed)/.test(e))).toEqual([
      "recycle releasing a after 0 acks", // released: before its first write failed
      "failed a",
      "failed empty",
      "recycle releasing empty after 1 acks", // at its acknowledgement, before the source hears it
      "recycle local-dir a after 0 acks",
      "recycle local-dir empty after 1 acks",
    ]);
  });

  it("stopping, gives up on a write that keeps failing at the deadline and acknowledges nothing", async () => {
    const down: Sink = {
      name: "down",
      write: async () => {
        throw new Error("store unavailable");
      },
      close: async () => {},
    };
    const delivery = new Delivery({ sink: down });
    const a = source("a", batches("a", 2), []);
    const queue = delivery.queue(a);
    await queue.deliver();
    delivery.stopBy(Date.now() + 300);
    await queue.deliver(true); // returns at the deadline; the retry loops see it at their next step
    await Promise.all(queue.inflight.map((f) => f.written));
    expect(a.acked).toEqual([]);
    expect(queue.inflight.map((f) => f.state)).toEqual(["abandoned", "abandoned"]);
  });
});
