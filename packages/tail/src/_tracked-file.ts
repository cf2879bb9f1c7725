import type { FileHandle } from "node:fs/promises";
import {
  AUDIT_PREFIX,
  type AuditEntry,
  AuditPayloadError,
  createParser,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
  parseAuditPayload,
} from "@auditpipe/parse";
import { type Batch, NdjsonWriter, type RedactionMode, redactRecord, toShippedRecord } from "@auditpipe/ship";

/** When a batch closes; whichever limit is reached first. */
export interface BatchLimits {
  /** Audit entries per batch. */
  maxEntries: number;
  /** Log bytes of the audit records per batch (the shipped NDJSON is about as large). */
  maxBytes: number;
  /** A batch with anything in it closes this long after it opened, if the file is quiet. */
  maxAgeMs: number;
}

/** What a source reports as it reads; every method optional. The sidecar wires these to its meter. */
export interface SourceObserver {
  recordsRead?(source: string, count: number): void;
  entry?(entry: AuditEntry, record: LogRecord): void;
  malformed?(source: string, error: MalformedRecord): void;
  bytesBehind?(file: string, bytes: number): void;
  fileGone?(file: string): void;
  truncation?(file: string): void;
  /** Bytes `[from, to)` of a file will never be read (deleted or truncated before they were); logged by the source. */
  dataLost?(file: string, from: number, to: number): void;
  sinkAck?(sink: string, entries: number, bytes: number, latencyMs: number): void;
  sinkError?(sink: string, error: unknown): void;
  checkpointSaved?(): void;
}

/** A batch handed to the sink: written (and retried) while the file reads on. */
export interface InFlightBatch {
  batch: Batch;
  /** `writing` until the sink acknowledged it, or the source gave up on it while stopping. */
  state: "writing" | "acked" | "abandoned";
  /** Settles (never rejects) when the state leaves `writing`. */
  written: Promise<void>;
}

/** The batch being filled; its entries are in the file's NdjsonWriter. */
interface OpenBatch {
  start: number;
  end: number;
  bytes: number;
  openedAt: number;
}

/** A replayed batch is cut at its recorded end, whatever the limits, unless it grows this many times past them. */
const REPLAY_SLACK = 4;

/** Bytes per read: large enough to amortise the syscall, small enough to keep memory flat. */
export const READ_BYTES: number = 1 << 20;
/**
 * Bytes handed to the parser at a time, each followed by encoding what it held. Everything a
 * slice makes (the parser's text of it, records, the strings pending in the writer) then dies in
 * V8's young generation: parsed a megabyte at a time, the text alone went to the large-object
 * space, and under the sidecar's 128 MB heap cap the old generation was marked every few reads
 * (80 full collections over a 240 MB file).
 */
const PARSE_BYTES = 64 << 10;

/**
 * One followed file of one identity: reads from a position, parses incrementally, and cuts the
 * records into batches covering contiguous byte ranges. Pure bookkeeping plus reads; writing
 * batches and checkpoints is FileSource's job.
 */
export class TrackedFile {
  /** Next byte to read (absolute). */
  readPos: number;
  /** Everything before this was acknowledged by the sink. */
  acked: number;
  /** Batches closed and not yet handed to the sink, in order. */
  readonly ready: Batch[] = [];
  /** Batches handed to the sink and not yet let go, in order; acknowledgements are taken from the front. */
  readonly inflight: InFlightBatch[] = [];
  lastGrowth: number;
  size: number;
  mtimeMs = 0;
  /** The path no longer names this file (deleted or replaced): drain through the handle, then finish. */
  gone = false;
  /** Device of the file (with `ino`, its identity while it is followed). */
  dev = 0;
  /** Hash of the first line (equal to `fingerprint`, unless another file started with the same line). */
  head: string;
  /** Other paths holding the same content (a copytruncate copy): where to keep reading if truncated. */
  readonly aliases: Set<string> = new Set<string>();
  private parser: LogParser;
  /** Where the parser's input started: record offsets are relative to it. */
  private base: number;
  private batch: OpenBatch;
  /** The open batch's entries, encoded after every read (see encodePending). */
  private readonly writer = new NdjsonWriter();
  /** Batch ends recorded before a crash: the replay cuts exactly there (and only there) until past them. */
  private readonly forcedEnds: number[];
  private parserEnded = false;
  private readBuffer: Buffer | undefined;
  path: string;
  handle: FileHandle;
  ino: number;
  readonly fingerprint: string;
  private readonly format: LogFormat;
  private readonly prefix: string | undefined;
  private readonly limits: BatchLimits;
  private readonly observer: SourceObserver;
  /** Applied to each record before it is encoded (`--redact`); metering sees the original. */
  private readonly redact: RedactionMode | undefined;

  constructor(
    path: string,
    handle: FileHandle,
    ino: number,
    fingerprint: string,
    format: LogFormat,
    prefix: string | undefined,
    start: number,
    inflightEnds: number[],
    limits: BatchLimits,
    observer: SourceObserver,
    now: number,
    redact: RedactionMode | undefined,
  ) {
    this.path = path;
    this.handle = handle;
    this.ino = ino;
    this.fingerprint = fingerprint;
    this.format = format;
    this.prefix = prefix;
    this.limits = limits;
    this.observer = observer;
    this.redact = redact;
    this.head = fingerprint;
    this.readPos = start;
    this.acked = start;
    this.base = start;
    this.size = start;
    this.lastGrowth = now;
    this.forcedEnds = inflightEnds.filter((end) => end > start);
    this.batch = this.newBatch(start, now);
    this.parser = this.newParser();
  }

  private newBatch(start: number, now: number): OpenBatch {
    return { start, end: start, bytes: 0, openedAt: now };
  }

  private newParser(): LogParser {
    const options = this.prefix === undefined ? {} : { prefix: this.prefix };
    return createParser(
      this.format,
      {
        record: (record) => this.onRecord(record),
        malformed: (error) => this.onMalformed(error),
      },
      options,
    );
  }

  /** Extends the open batch to `end`, closing it at a replayed boundary or a size limit. */
  private extend(end: number): void {
    const batch = this.batch;
    if (end > batch.end) batch.end = end;
    const forced = this.forcedEnds;
    if (forced.length > 0) {
      // Replaying what was in flight at a crash: the recorded boundaries, not the limits, cut it.
      if (batch.end >= forced[0]!) {
        while (forced.length > 0 && forced[0]! <= batch.end) forced.shift();
        this.close(Date.now());
      } else if (
        this.writer.entries >= REPLAY_SLACK * this.limits.maxEntries ||
        batch.bytes >= REPLAY_SLACK * this.limits.maxBytes
      ) {
        // The recorded boundary is not coming (the file changed past the checkpoint's marker):
        // memory stays bounded; the limits cut again.
        forced.length = 0;
        this.close(Date.now());
      }
    } else if (this.writer.entries >= this.limits.maxEntries || batch.bytes >= this.limits.maxBytes) {
      this.close(Date.now());
    }
  }

  private onRecord(record: LogRecord): void {
    const offset = this.base + record.offset;
    this.observer.recordsRead?.(this.path, 1);
    if (record.message.startsWith(AUDIT_PREFIX)) {
      try {
        const entry = parseAuditPayload(record.message);
        if (entry) {
          if (this.redact)
            this.writer.addRecord(
              redactRecord(toShippedRecord(entry, record, this.path, offset), this.redact),
            );
          else this.writer.addEntry(entry, record, this.path, offset);
          this.batch.bytes += record.size;
          this.observer.entry?.(entry, record);
        }
      } catch (error) {
        if (!(error instanceof AuditPayloadError)) throw error;
        this.observer.malformed?.(this.path, {
          code: error.code,
          reason: error.message,
          offset,
          size: record.size,
        });
      }
    }
    this.extend(offset + record.size);
  }

  private onMalformed(error: MalformedRecord): void {
    const offset = this.base + error.offset;
    this.observer.malformed?.(this.path, { ...error, offset });
    this.extend(offset + error.size);
  }

  /**
   * Encodes the entries read since the last call. Called after every read: what an entry holds
   * lives for one read instead of until its batch closes, so it dies in V8's young generation.
   * Kept until the batch closed, 10k records survived scavenges, were promoted and made the old
   * generation grow by their size every batch; marking it then cost more than the encoding (a
   * full mark every ~0.5 s at 17k entries/s).
   */
  private encodePending(): void {
    this.writer.flush();
  }

  /** The sink acknowledged `batch`: its memory may hold a later batch. */
  recycle(batch: Batch): void {
    this.writer.recycle(batch.ndjson);
  }

  /** Moves the open batch (if it covers any bytes) to `ready`. */
  close(now: number): void {
    const b = this.batch;
    if (b.end <= b.start) return;
    const { ndjson, entries, firstTs } = this.writer.take();
    this.ready.push({
      range: { sourceId: this.fingerprint, sourceName: this.path, start: b.start, end: b.end },
      ndjson,
      entries,
      bytes: b.bytes,
      firstTs,
    });
    this.batch = this.newBatch(b.end, now);
  }

  /** Reads what is there (up to READ_BYTES) and parses it; returns bytes read (0 at the end of the file). */
  async read(now: number): Promise<number> {
    if (this.parserEnded) return 0;
    const { size, mtimeMs } = await this.handle.stat();
    this.size = size;
    this.mtimeMs = mtimeMs;
    if (size <= this.readPos) return 0;
    const length = Math.min(READ_BYTES, size - this.readPos);
    // One buffer for every read (parsers copy what they keep): a new megabyte per read was
    // external memory that V8 counts toward its next full collection.
    this.readBuffer ??= Buffer.allocUnsafeSlow(READ_BYTES);
    const buffer = this.readBuffer;
    const { bytesRead } = await this.handle.read(buffer, 0, length, this.readPos);
    if (bytesRead === 0) return 0;
    this.readPos += bytesRead;
    this.lastGrowth = now;
    for (let at = 0; at < bytesRead; at += PARSE_BYTES) {
      this.parser.push(buffer.subarray(at, Math.min(at + PARSE_BYTES, bytesRead)));
      this.encodePending();
    }
    // Under steady load the file is never quiet: the age limit must hold while it grows too.
    const b = this.batch;
    if (b.end > b.start && this.forcedEnds.length === 0 && now - b.openedAt >= this.limits.maxAgeMs)
      this.close(now);
    return bytesRead;
  }

  /** The file has been quiet: release held records; close the batch when it is old enough. */
  quiet(now: number, quietMs: number): void {
    if (now - this.lastGrowth >= quietMs) {
      this.parser.idle?.();
      this.encodePending();
    }
    const b = this.batch;
    if (b.end > b.start && this.forcedEnds.length === 0 && now - b.openedAt >= this.limits.maxAgeMs)
      this.close(now);
  }

  /** No more bytes will come (rotated away, deleted, truncated): end the parser and close the batch. */
  finish(now: number): void {
    if (!this.parserEnded) {
      this.parserEnded = true;
      this.parser.end();
    }
    this.close(now);
  }

  /** The parser holds bytes read but not yet given out as records (the last record, until the next starts or the file is quiet). */
  get holding(): boolean {
    return !this.parserEnded && this.readPos > this.batch.end;
  }

  /** Boundaries recorded before a crash that the replay has not reached yet: still to be recorded. */
  get replayEnds(): readonly number[] {
    return this.forcedEnds;
  }

  /** Stopping: close the open batch unless a recorded boundary lies ahead (the next start replays it). */
  closeForStop(now: number): void {
    if (this.forcedEnds.length === 0) this.close(now);
  }

  /** Everything read is closed into batches and acknowledged. */
  get settled(): boolean {
    return (
      this.parserEnded &&
      this.ready.length === 0 &&
      this.inflight.length === 0 &&
      this.acked >= this.batch.start
    );
  }

  /** Whether records are held in an open batch or the parser. */
  get pendingBytes(): number {
    return this.readPos - this.acked;
  }
}
