import { createHash, randomUUID } from "node:crypto";
import { type Batch, recordsBatch, type ShippedRecord, type Sink } from "@auditpipe/ship";

export interface SyslogShippingOptions {
  sink: Sink;
  maxEntries: number;
  maxAgeMs: number;
  /** Batches kept while the sink is failing; beyond it the oldest are dropped (and counted). */
  maxQueuedBatches?: number;
  onAck?: (entries: number, bytes: number, latencyMs: number) => void;
  onError?: (error: unknown) => void;
  onDrop?: (entries: number) => void;
}

interface Pending {
  start: number;
  end: number;
  records: ShippedRecord[];
  bytes: number;
  openedAt: number;
}

/**
 * Batches what a syslog listener received for the sink. Syslog has no file to re-read, so this
 * cannot wait for PostgreSQL the way a file source does: it keeps a bounded queue while the sink
 * fails and counts what it had to drop. Delivery is as good as syslog's.
 */
export class SyslogShipping {
  private readonly open = new Map<string, Pending>();
  private readonly queue: Batch[] = [];
  private writing: Promise<void> | undefined;
  private readonly maxQueued: number;
  /**
   * Listener offsets start again at 0 when the process restarts: a per-run id in the source
   * identity keeps a new run's objects from overwriting an earlier run's.
   */
  private readonly run = randomUUID();

  private readonly options: SyslogShippingOptions;

  constructor(options: SyslogShippingOptions) {
    this.options = options;
    this.maxQueued = options.maxQueuedBatches ?? 1000;
  }

  /** One entry from listener `name`; `offset`/`size` are its place in that listener's byte stream. */
  add(name: string, record: ShippedRecord, offset: number, size: number, now: number = Date.now()): void {
    let p = this.open.get(name);
    if (!p) {
      p = { start: offset, end: offset, records: [], bytes: 0, openedAt: now };
      this.open.set(name, p);
    }
    p.records.push(record);
    p.bytes += size;
    p.end = Math.max(p.end, offset + size);
    if (p.records.length >= this.options.maxEntries) this.close(name);
  }

  /** Closes batches older than maxAgeMs and starts writing. */
  tick(now: number = Date.now()): void {
    for (const [name, p] of this.open) if (now - p.openedAt >= this.options.maxAgeMs) this.close(name);
    this.pump();
  }

  private close(name: string): void {
    const p = this.open.get(name);
    if (!p) return;
    this.open.delete(name);
    const sourceId = createHash("sha256").update(`${name}#${this.run}`).digest("hex").slice(0, 16);
    this.queue.push(
      recordsBatch({ sourceId, sourceName: name, start: p.start, end: p.end }, p.records, p.bytes),
    );
    while (this.queue.length > this.maxQueued) this.options.onDrop?.(this.queue.shift()!.entries);
    this.pump();
  }

  private pump(): void {
    if (this.writing || this.queue.length === 0) return;
    this.writing = (async () => {
      while (this.queue.length > 0) {
        const batch = this.queue[0]!;
        const started = Date.now();
        try {
          await this.options.sink.write(batch);
          this.queue.shift();
          this.options.onAck?.(batch.entries, batch.bytes, Date.now() - started);
        } catch (error) {
          this.options.onError?.(error);
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    })().finally(() => {
      this.writing = undefined;
    });
  }

  /** Closes every batch and waits (bounded) until the sink took them. */
  async flush(deadlineMs: number): Promise<void> {
    for (const name of [...this.open.keys()]) this.close(name);
    const deadline = Date.now() + deadlineMs;
    while ((this.writing || this.queue.length > 0) && Date.now() < deadline) {
      this.pump();
      await Promise.race([this.writing, new Promise((r) => setTimeout(r, 100))]);
    }
  }
}
