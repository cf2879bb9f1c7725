/**
 * The syslog journal's bookkeeping, without I/O: segment names, when a commit moves on to a new
 * segment, and the space the journal takes against its limit.
 */

/** A segment's name: its number, zero-padded so names sort as numbers do, and `.log`. */
const SEGMENT_NAME = /^(\d{16})\.log$/;
const NAME_DIGITS = 16;

/** Segments are a sixteenth of the limit (deleting one frees a sixteenth), within these bounds. */
const MIN_SEGMENT_BYTES = 256 << 10;
const MAX_SEGMENT_BYTES = 64 << 20;
const SEGMENTS_PER_LIMIT = 16;

export function segmentName(n: number): string {
  return `${String(n).padStart(NAME_DIGITS, "0")}.log`;
}

/** The number of a segment file name, or undefined for a name that is not a segment's. */
export function segmentNumber(name: string): number | undefined {
  const m = SEGMENT_NAME.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * The number of the next segment: the creation time in ms, or one past the last segment if that
 * is later (a clock set back). Numbers therefore never repeat across restarts, and neither do the
 * paths that shipped records name as their source.
 */
export function nextSegmentNumber(last: number | undefined, nowMs: number): number {
  return last === undefined ? nowMs : Math.max(last + 1, nowMs);
}

export function segmentBytesFor(maxBytes: number): number {
  return Math.min(MAX_SEGMENT_BYTES, Math.max(MIN_SEGMENT_BYTES, Math.floor(maxBytes / SEGMENTS_PER_LIMIT)));
}

/** Entries of one commit that go to one segment. */
export interface CommitRun {
  /** A new segment is started for this run (the one before is closed). */
  newSegment: boolean;
  entries: Buffer[];
  bytes: number;
}

/**
 * Splits a commit's entries, in order, into runs per segment. A new segment starts where the next
 * entry would take the current one past `segmentBytes`, so an entry (a whole PostgreSQL message)
 * never straddles two segments; an entry larger than a segment gets one of its own, and an empty
 * segment is never left behind for a new one.
 */
export function planCommit(
  entries: readonly Buffer[],
  activeBytes: number,
  segmentBytes: number,
): CommitRun[] {
  const runs: CommitRun[] = [];
  let run: CommitRun = { newSegment: false, entries: [], bytes: 0 };
  let size = activeBytes;
  for (const entry of entries) {
    if (size > 0 && size + entry.length > segmentBytes) {
      if (run.entries.length > 0) runs.push(run);
      run = { newSegment: true, entries: [], bytes: 0 };
      size = 0;
    }
    run.entries.push(entry);
    run.bytes += entry.length;
    size += entry.length;
  }
  if (run.entries.length > 0) runs.push(run);
  return runs;
}

/**
 * Space against the limit: the bytes of every segment on disk plus the entries waiting for their
 * commit. The journal is full at the limit; it stops being full when a deletion (or a commit that
 * failed and was cut back) brings it under.
 */
export class JournalSpace {
  private readonly segments = new Map<number, number>();
  private segmentBytes = 0;
  private pendingBytes = 0;

  readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Bytes taken: segments on disk plus entries waiting for their commit. */
  get used(): number {
    return this.segmentBytes + this.pendingBytes;
  }

  get full(): boolean {
    return this.used >= this.maxBytes;
  }

  /** Segments on disk, by number. */
  get count(): number {
    return this.segments.size;
  }

  sizeOf(segment: number): number | undefined {
    return this.segments.get(segment);
  }

  /** An entry of `bytes` accepted, not yet committed. */
  pending(bytes: number): void {
    this.pendingBytes += bytes;
  }

  /** A segment found on disk or created (`bytes` already in it). */
  addSegment(segment: number, bytes = 0): void {
    this.segmentBytes += bytes - (this.segments.get(segment) ?? 0);
    this.segments.set(segment, bytes);
  }

  /** `bytes` of pending entries were committed to `segment`. */
  committed(segment: number, bytes: number): void {
    this.pendingBytes -= bytes;
    this.segments.set(segment, (this.segments.get(segment) ?? 0) + bytes);
    this.segmentBytes += bytes;
  }

  /** A segment was deleted. */
  removeSegment(segment: number): void {
    this.segmentBytes -= this.segments.get(segment) ?? 0;
    this.segments.delete(segment);
  }
}
