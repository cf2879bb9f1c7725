/**
 * The batch stage: cuts one source's byte stream into batches, each covering a contiguous byte
 * range (audit records or not), with the range's entries already encoded. The range is what the
 * sink's object key and the source's checkpoint are made of, so a batch replayed after a crash
 * must be cut where it was cut before: the ends recorded then cut the replay, not the limits.
 */
import { NdjsonWriter } from "./ndjson-writer.ts";
import type { Batch } from "./types.ts";

/** When a batch closes; whichever limit is reached first. */
export interface BatchLimits {
  /** Audit entries per batch. */
  maxEntries: number;
  /** Log bytes of the audit records per batch (the shipped NDJSON is about as large). */
  maxBytes: number;
  /** A batch with anything in it closes this long after it opened, if the source is quiet. */
  maxAgeMs: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxEntries: 10_000, maxBytes: 8 << 20, maxAgeMs: 1_000 };

/** A replayed batch is cut at its recorded end, whatever the limits, unless it grows this many times past them. */
const REPLAY_SLACK = 4;

/** The source whose bytes are batched: its identity, and its name for people (a file may be renamed). */
export interface BatchSource {
  /** Stable identity, safe in an object key (a file's fingerprint id). */
  readonly fingerprint: string;
  /** Where the bytes are now (a file path). */
  readonly path: string;
}

/**
 * The open batch of one source and the closed ones waiting for delivery. The encode stage
 * appends each entry to `writer`; the source's reader tells how far the batch reaches (extend).
 */
export class Batcher {
  /** Batches closed and not yet handed on, in source order. */
  readonly ready: Batch[] = [];
  /** The open batch's entries, encoded (see the encode stage, encode.ts). */
  readonly writer: NdjsonWriter = new NdjsonWriter();
  /** First byte of the open batch. */
  private start: number;
  /** Just past the last byte the open batch covers. */
  private end: number;
  /** On-disk bytes of the open batch's audit records. */
  private bytes = 0;
  private openedAt: number;
  /** Batch ends recorded before a crash: the replay cuts exactly there (and only there) until past them. */
  private readonly forcedEnds: number[];
  private readonly source: BatchSource;
  private readonly limits: BatchLimits;
  /** Batches closed so far: what the open batch's entries were encoded under. */
  generation = 0;
  /**
   * Called as each batch closes, with it and how many of its entries ship `pending`, between two
   * records: the source's state then is its state at the batch's end (the outcome join
   * snapshots itself here).
   */
  onClose: ((batch: Batch, pending: number) => void) | undefined;
  /**
   * Keeps the open batch past its age while this says so, for at most `holdMs` more (the outcome
   * join waits for the log to settle its entries; see closeIfOld).
   */
  hold: (() => boolean) | undefined;
  holdMs = 0;

  constructor(
    source: BatchSource,
    start: number,
    replayEnds: readonly number[],
    limits: BatchLimits,
    now: number,
  ) {
    this.source = source;
    this.limits = limits;
    this.start = start;
    this.end = start;
    this.openedAt = now;
    this.forcedEnds = replayEnds.filter((end) => end > start);
  }

  /** An audit record of `size` on-disk bytes joined the open batch (its entry is in `writer`). */
  entry(size: number): void {
    this.bytes += size;
  }

  /** Extends the open batch to `end`, closing it at a replayed boundary or a size limit. */
  extend(end: number): void {
    if (end > this.end) this.end = end;
    const forced = this.forcedEnds;
    if (forced.length > 0) {
      // Replaying what was in flight at a crash: the recorded boundaries, not the limits, cut it.
      if (this.end >= forced[0]!) {
        while (forced.length > 0 && forced[0]! <= this.end) forced.shift();
        this.close(Date.now());
      } else if (
        this.writer.entries >= REPLAY_SLACK * this.limits.maxEntries ||
        this.bytes >= REPLAY_SLACK * this.limits.maxBytes
      ) {
        // The recorded boundary is not coming (the file changed past the checkpoint's marker):
        // memory stays bounded; the limits cut again.
        forced.length = 0;
        this.close(Date.now());
      }
    } else if (this.writer.entries >= this.limits.maxEntries || this.bytes >= this.limits.maxBytes) {
      this.close(Date.now());
    }
  }

  /** Moves the open batch (if it covers any bytes, or with `behind`, holds any entry) to `ready`. */
  close(now: number, behind = false): void {
    if (this.end <= this.start && !(behind && this.writer.entries > 0)) return;
    const { ndjson, entries, pending, firstTs } = this.writer.take();
    const batch: Batch = {
      range: {
        sourceId: this.source.fingerprint,
        sourceName: this.source.path,
        start: this.start,
        end: this.end,
      },
      ndjson,
      entries,
      bytes: this.bytes,
      firstTs,
    };
    this.ready.push(batch);
    this.start = this.end;
    this.bytes = 0;
    this.openedAt = now;
    this.generation++;
    this.onClose?.(batch, pending);
  }

  /**
   * Closes the open batch if it holds entries but covers no bytes: records whose bytes lie behind
   * its start (syslog messages held while later ones were shipped, released at last). Its range is
   * empty, `[start, start)`; the source calls this only when nothing more can come behind, so no
   * other batch gets that range. True when it closed one.
   */
  closeBehind(now: number): boolean {
    if (this.end > this.start || this.writer.entries === 0 || this.forcedEnds.length > 0) return false;
    this.close(now, true);
    return true;
  }

  /**
   * Closes the open batch if it holds anything and is older than the age limit; a replay waits for
   * its recorded end. While `hold()` says so the batch stays open up to `holdMs` longer: its cut
   * is recorded before delivery either way, so a replay cuts it where this one did.
   */
  closeIfOld(now: number): void {
    if (this.end <= this.start || this.forcedEnds.length > 0) return;
    const age = now - this.openedAt;
    if (age < this.limits.maxAgeMs) return;
    if (age < this.limits.maxAgeMs + this.holdMs && this.hold?.()) return;
    this.close(now);
  }

  /** Stopping: close the open batch unless a recorded boundary lies ahead (the next start replays it). */
  closeForStop(now: number): void {
    if (this.forcedEnds.length === 0) this.close(now);
  }

  /** The sink is done with `batch`'s NDJSON (compressed or stored it): its memory may hold a later batch. */
  recycle(batch: Batch): void {
    this.writer.recycle(batch.ndjson);
  }

  /** Where the open batch starts: everything before it is in closed batches. */
  get openStart(): number {
    return this.start;
  }

  /** Just past the last byte given to the batches (records read and cut). */
  get covered(): number {
    return this.end;
  }

  /** Boundaries recorded before a crash that the replay has not reached yet: still to be recorded. */
  get replayEnds(): readonly number[] {
    return this.forcedEnds;
  }
}
