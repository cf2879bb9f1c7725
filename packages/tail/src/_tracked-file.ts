import type { FileHandle } from "node:fs/promises";
import { firstLineHash, HeadCheck } from "./_file-identity.ts";

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
 * Bytes just before the read position that every read reads again and compares: a file truncated
 * and rewritten in place (same inode) between two reads no longer holds them, so the read stops
 * there instead of going on at an offset that belonged to the old content.
 */
const OVERLAP_BYTES = 64;

/** What `read()` returns when the file no longer holds what was read: truncated, or rewritten in place. */
export const REPLACED = -1;

/**
 * The buffer every read goes into (one for all files: a read's bytes are handed on, and parsers
 * copy what they keep, before the next read starts). A megabyte per followed file was external
 * memory that V8 counts toward its next full collection, and with a backlog of files it added up.
 */
export function readBuffer(): Buffer {
  shared ??= Buffer.allocUnsafeSlow(OVERLAP_BYTES + READ_BYTES);
  return shared;
}
let shared: Buffer | undefined;

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
  /**
   * Gone because its content was replaced in place (truncated, rewritten): its inode holds another
   * file now. Otherwise a gone file whose inode is listed again is this file, back (see FileFollower).
   */
  rewritten = false;
  /** Device of the file (with `ino`, its identity while it is followed). */
  dev = 0;
  /** Hash of the first line (equal to `fingerprint`, unless another file started with the same line). */
  get head(): string {
    return this.headHash;
  }
  set head(hash: string) {
    this.headHash = hash;
    this.headCheck = new HeadCheck(hash);
  }
  private headHash!: string;
  /** Whether the file still starts with that line: checked after each read that returned bytes. */
  private headCheck!: HeadCheck;
  /** Other paths holding the same content (a copytruncate copy): where to keep reading if truncated. */
  readonly aliases: Set<string> = new Set<string>();
  /** Where the bytes read go, from `start` on. */
  readonly downstream: Downstream;
  /** The last bytes read (up to OVERLAP_BYTES, ending at `readPos`); undefined until the first read. */
  private readonly overlap: Buffer = Buffer.alloc(OVERLAP_BYTES);
  private overlapLength: number | undefined;
  /** mtime at the last read that found nothing new: a file not written since needs no compare. */
  private quietMtimeMs = -1;

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

  /**
   * Reads what is there (up to READ_BYTES) and hands it on; returns bytes read (0 at the end of the
   * file), or REPLACED when the file no longer holds what was read before (shorter than the read
   * position, or other bytes just before it): nothing of the new content is handed on, and `size`
   * stays the size last seen of the old one.
   */
  async read(now: number): Promise<number> {
    if (this.downstream.ended) return 0;
    const { size, mtimeMs } = await this.handle.stat();
    if (size < this.readPos) return REPLACED;
    if (size === this.readPos && mtimeMs === this.quietMtimeMs) return 0;
    const buffer = readBuffer();
    // The bytes before the read position are read again with the new ones, in one read: the
    // compare costs no system call, and what follows them was read in the same pass.
    const back = this.overlapLength ?? Math.min(OVERLAP_BYTES, this.readPos);
    const length = Math.min(READ_BYTES, size - this.readPos);
    const { bytesRead } = await this.handle.read(buffer, 0, back + length, this.readPos - back);
    if (bytesRead < back) return REPLACED;
    if (this.overlapLength !== undefined && buffer.compare(this.overlap, 0, back, 0, back) !== 0)
      return REPLACED;
    if (this.readPos === 0 && bytesRead > 0 && !this.startsWithHead(buffer.subarray(0, bytesRead)))
      return REPLACED;
    this.size = size;
    this.mtimeMs = mtimeMs;
    const n = bytesRead - back;
    if (n <= 0) {
      this.overlapLength = back;
      this.quietMtimeMs = mtimeMs;
      return 0;
    }
    // A read that overlapped a truncation and rewrite returns old bytes, then new ones (the kernel
    // copies page by page): the compare above proved only the old. A file that still starts with
    // its first line after the read was not rewritten before the read ended.
    if (!(await this.headCheck.holds(this.handle))) return REPLACED;
    const keep = Math.min(OVERLAP_BYTES, back + n);
    buffer.copy(this.overlap, 0, back + n - keep, back + n);
    this.overlapLength = keep;
    this.readPos += n;
    this.lastGrowth = now;
    this.downstream.push(buffer.subarray(back, back + n), now);
    return n;
  }

  /**
   * At offset 0 there is nothing read to compare yet: the first line must still be the one the
   * file was identified by (a complete first line is read, or the file is shorter than that).
   */
  private startsWithHead(bytes: Buffer): boolean {
    const hash = firstLineHash(bytes);
    return hash === undefined || hash === this.head;
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
