import type { FileHandle } from "node:fs/promises";

/**
 * Where a followed file's bytes go: its lane of the pipeline (parse → decode → meter → redact →
 * encode → batch → deliver, _file-lane.ts). The follower feeds it bytes in file order and reads
 * back how far it got; it never sees a record, a batch's contents or the sink.
 */
export interface Downstream {
  /** Bytes read from the file, following those pushed before. */
  push(bytes: Buffer, now: number): void;
  /** The file has been quiet: release records held back for a line that may follow. */
  idle(): void;
  /** Closes the open batch if it is old enough (the age limit holds while the file grows too). */
  closeIfOld(now: number): void;
  /** No more bytes will come: flush the parser and close the open batch. */
  end(now: number): void;
  /** Stopping: close the open batch unless a recorded boundary lies ahead (the next start replays it). */
  closeForStop(now: number): void;
  /**
   * Hands closed batches on; resolves when the file may be read on (backpressure), or with
   * `drain`, when nothing of it is in flight.
   */
  deliver(drain?: boolean): Promise<void>;
  /** end() was called. */
  readonly ended: boolean;
  /** Just past the last byte given out as records (held bytes lie beyond it). */
  readonly covered: number;
  /** Everything before this was acknowledged by the sink. */
  readonly acked: number;
  /** Everything pushed is cut into batches and acknowledged, and end() was called. */
  readonly settled: boolean;
  /**
   * Ends of the batches cut and not yet acknowledged, in order, then boundaries a replay has yet
   * to reach: the checkpoint records them, so a replay after a crash cuts the same ranges.
   */
  pendingEnds(): number[];
  /**
   * For a checkpoint at `position`: where a restart must read from so that records held (begun
   * before `position`, not acknowledged) go out, and their offsets (see FileLane).
   */
  resumePoint(position: number): { from: number; held: number[] };
  /** The outcome stage's state at `position` (an acknowledged batch end, or the start), if known. */
  outcomeState?(position: number): unknown;
}

/** Bytes per read: large enough to amortise the syscall, small enough to keep memory flat. */
export const READ_BYTES: number = 1 << 20;

/**
 * One followed file of one identity, the source's side of it: its handle and identity, where it
 * has been read to, and the reads themselves; what was read goes to its Downstream. Pure
 * bookkeeping plus reads; finding files and keeping checkpoints is FileFollower's job.
 */
export class TrackedFile {
  path: string;
  handle: FileHandle;
  ino: number;
  readonly fingerprint: string;
  /** Next byte to read (absolute). */
  readPos: number;
  /** Where reading started in this run (readPos beyond it: the file has been read from). */
  readonly startPos: number;
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
  /** Where the bytes read go, from `start` on. */
  readonly downstream: Downstream;
  private readBuffer: Buffer | undefined;

  constructor(
    path: string,
    handle: FileHandle,
    ino: number,
    fingerprint: string,
    start: number,
    now: number,
    openDownstream: (file: TrackedFile) => Downstream,
  ) {
    this.path = path;
    this.handle = handle;
    this.ino = ino;
    this.fingerprint = fingerprint;
    this.head = fingerprint;
    this.readPos = start;
    this.startPos = start;
    this.size = start;
    this.lastGrowth = now;
    this.downstream = openDownstream(this);
  }

  /** Reads what is there (up to READ_BYTES) and hands it on; returns bytes read (0 at the end of the file). */
  async read(now: number): Promise<number> {
    if (this.downstream.ended) return 0;
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
    this.downstream.push(buffer.subarray(0, bytesRead), now);
    return bytesRead;
  }

  /** The file has been quiet: release held records; close the batch when it is old enough. */
  quiet(now: number, quietMs: number): void {
    if (now - this.lastGrowth >= quietMs) this.downstream.idle();
    this.downstream.closeIfOld(now);
  }

  /** No more bytes will come (rotated away, deleted, truncated): end the parser and close the batch. */
  finish(now: number): void {
    this.downstream.end(now);
  }

  /** Stopping: close the open batch unless a recorded boundary lies ahead (the next start replays it). */
  closeForStop(now: number): void {
    this.downstream.closeForStop(now);
  }

  /** The parser holds bytes read but not yet given out as records (the last record, until the next starts or the file is quiet). */
  get holding(): boolean {
    return !this.downstream.ended && this.readPos > this.downstream.covered;
  }

  /** Everything before this was acknowledged by the sink. */
  get acked(): number {
    return this.downstream.acked;
  }

  /** Everything read is closed into batches and acknowledged. */
  get settled(): boolean {
    return this.downstream.settled;
  }
}
