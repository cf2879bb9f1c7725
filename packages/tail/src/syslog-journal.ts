/**
 * SyslogJournal: where the syslog receiver puts what it accepted, so that syslog is as durable as
 * PostgreSQL's own log files. The file pipeline (a FileSource over the journal's directory, format
 * `stderr`) follows it with checkpoints like any log directory; a segment it has read to the end
 * and had acknowledged is deleted.
 *
 * - Entries are PostgreSQL messages rebuilt from their syslog chunks, as PostgreSQL writes them to
 *   stderr (see _journal-entry.ts for why this layout).
 * - Group commit: entries are written and fsynced (fdatasync) together, at most `commitMs`
 *   (default 5 ms) after the first of them arrived. What was accepted and not yet written is what
 *   a kill -9 loses; what was written and not yet fsynced is what a power loss loses.
 * - Rotation: a segment is closed when the next entry would take it past a sixteenth of the limit;
 *   each restart starts a new segment. An entry never straddles two segments.
 * - Limit: segments on disk plus entries waiting for their commit. At the limit the journal is
 *   `full` (onFull): the receiver stops reading TCP and drops UDP until a deletion frees space.
 * - A failed write or fsync is retried where it stopped, with the one backoff of @auditpipe/ship;
 *   entries arriving meanwhile wait (and count against the limit).
 */

import { type FileHandle, mkdir, open, readdir, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { compilePrefix, createPrefixFields, DEFAULT_PREFIX } from "@auditpipe/parse";
import { backoffDelay, fsyncDir } from "@auditpipe/ship";
import { type FileCheckpoint, readSavedCheckpoints } from "./_checkpoint.ts";
import { GroupCommitQueue } from "./_group-commit.ts";
import { journalEntry } from "./_journal-entry.ts";
import {
  type CommitRun,
  JournalSpace,
  nextSegmentNumber,
  planCommit,
  segmentBytesFor,
  segmentName,
  segmentNumber,
} from "./_journal-segments.ts";

/** The group commit window: the longest an accepted entry waits before it is written and fsynced. */
export const DEFAULT_COMMIT_MS = 5;
/** A commit starts at once when this much waits: bounds one commit's write and its memory. */
const COMMIT_MAX_BYTES = 1 << 20;
/** A failed write or fsync is retried after backoffDelay(attempt, RETRY_BASE_MS, RETRY_MAX_MS). */
const RETRY_BASE_MS = 50;
const RETRY_MAX_MS = 5_000;
/** Bytes read at a time while looking for the last newline of a segment cut short. */
const TAIL_READ_BYTES = 64 << 10;

export interface SyslogJournalOptions {
  /** Directory of the segments, created if missing; nothing else may write there. */
  dir: string;
  /**
   * The state directory of the FileSource that follows `dir`: a segment is deleted only once the
   * checkpoint there says it was read to its end and acknowledged.
   */
  checkpointDir: string;
  /** Bytes the journal may take: segments on disk plus entries waiting for their commit. */
  maxBytes: number;
  /** The log_line_prefix of the messages (and of the follower); PostgreSQL 15's default when omitted. */
  prefix?: string;
  /** The group commit window in ms; default DEFAULT_COMMIT_MS. */
  commitMs?: number;
  /** The journal became full (true) or has room again (false). */
  onFull?: (full: boolean) => void;
  /** A write, fsync or segment creation failed; it is retried after `delayMs`. */
  onError?: (error: unknown, retry: { attempt: number; delayMs: number }) => void;
}

export interface SyslogJournalStats {
  /** Bytes taken against the limit: segments on disk plus entries waiting for their commit. */
  bytes: number;
  maxBytes: number;
  full: boolean;
  /** Segment files on disk. */
  segments: number;
  /** Entries committed (written and fsynced) since open. */
  entries: number;
  /** Commits (one fsync each, per segment written) since open. */
  commits: number;
}

/** A commit under way: kept across a failure, so its retry continues exactly where it stopped. */
interface CommitWork {
  runs: CommitRun[];
  /** Index of the run being written. */
  run: number;
  /** Its entries as one buffer, and how much of it is written. */
  data: Buffer | undefined;
  written: number;
  /** Its new segment was created already. */
  rotated: boolean;
}

export class SyslogJournal {
  private readonly queue: GroupCommitQueue;
  private readonly space: JournalSpace;
  private readonly segmentBytes: number;
  private readonly startsRecord: (line: string) => boolean;
  private handle: FileHandle | undefined;
  /** Number of the segment written to; never deleted while it is. */
  private active = -1;
  /** The directory entry of a new segment still has to be fsynced. */
  private dirSyncPending = false;
  private work: CommitWork | undefined;
  private committing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private failures = 0;
  private retryAt = 0;
  private closed = false;
  private wasFull = false;
  /** Segments the follower let go of: deleted once its saved checkpoint says they are acknowledged. */
  private readonly released = new Set<number>();
  private collecting: Promise<void> | undefined;
  private committedEntries = 0;
  private commits = 0;

  private readonly options: SyslogJournalOptions;

  private constructor(options: SyslogJournalOptions) {
    this.options = options;
    this.queue = new GroupCommitQueue(options.commitMs ?? DEFAULT_COMMIT_MS, COMMIT_MAX_BYTES);
    this.space = new JournalSpace(options.maxBytes);
    this.segmentBytes = segmentBytesFor(options.maxBytes);
    const prefix = compilePrefix(options.prefix ?? DEFAULT_PREFIX);
    const fields = createPrefixFields();
    this.startsRecord = (line) => prefix.match(line, 0, fields) >= 0;
  }

  /**
   * Opens the journal in `dir`: segments already acknowledged are deleted, a last segment cut
   * inside a line (a crash during a write) is cut back to its last whole line, and a new segment
   * is started.
   */
  static async open(options: SyslogJournalOptions): Promise<SyslogJournal> {
    await mkdir(options.dir, { recursive: true });
    const journal = new SyslogJournal(options);
    await journal.recover();
    return journal;
  }

  get dir(): string {
    return this.options.dir;
  }

  get full(): boolean {
    return this.space.full;
  }

  stats(): SyslogJournalStats {
    return {
      bytes: this.space.used,
      maxBytes: this.space.maxBytes,
      full: this.space.full,
      segments: this.space.count,
      entries: this.committedEntries,
      commits: this.commits,
    };
  }

  /**
   * Accepts one PostgreSQL message (SyslogMessage.lines); it is committed within the window.
   * False, and not accepted, for a message whose first line does not start with the prefix
   * (ParseErrorCode.PREFIX_MISMATCH for the caller to report; see journalEntry).
   */
  append(lines: readonly string[]): boolean {
    if (this.closed) throw new Error("SyslogJournal.append after close()");
    const entry = journalEntry(lines, this.startsRecord);
    if (entry === undefined) return false;
    this.queue.add(entry, Date.now());
    this.space.pending(entry.length);
    this.checkFull();
    this.schedule();
    return true;
  }

  /** The follower finished `path` (FileSource's fileGone): a candidate for deletion by collect(). */
  release(path: string): void {
    const n = segmentNumber(basename(path));
    if (n !== undefined && this.space.sizeOf(n) !== undefined) this.released.add(n);
  }

  /**
   * Deletes released segments whose checkpoint (as last saved by the follower) is done at their
   * full size. Call it after the follower saved its checkpoints (FileSource's checkpointSaved).
   */
  collect(): Promise<void> {
    if (this.released.size === 0) return Promise.resolve();
    this.collecting ??= this.deleteAcknowledged().finally(() => {
      this.collecting = undefined;
    });
    return this.collecting;
  }

  /** Commits what waits, now (the window is not waited for); resolves once it is fsynced or failed. */
  async flush(): Promise<void> {
    this.clearTimer();
    while (this.committing) await this.committing;
    if (this.work || this.queue.pendingEntries > 0) await this.runCommit();
  }

  /** Commits what waits (one attempt) and closes the segment. Nothing may be appended after. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.flush();
    await this.collecting;
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
  }

  private async recover(): Promise<void> {
    const dir = this.options.dir;
    const numbers = (await readdir(dir))
      .map(segmentNumber)
      .filter((n): n is number => n !== undefined)
      .sort((a, b) => a - b);
    const acknowledged = await readAcknowledged(this.options.checkpointDir);
    for (const n of numbers) {
      const path = join(dir, segmentName(n));
      let { size } = await stat(path);
      if (n === numbers.at(-1)) size = await cutToLastLine(path, size);
      const checkpoint = acknowledged.get(segmentName(n));
      if (checkpoint?.done && checkpoint.position >= size) {
        await rm(path, { force: true });
        continue;
      }
      this.space.addSegment(n, size);
    }
    // Its directory entry is fsynced by the first commit, before anything is written to it.
    await this.startSegment(nextSegmentNumber(numbers.at(-1), Date.now()));
    this.wasFull = this.space.full;
  }

  private async startSegment(n: number): Promise<void> {
    let number = n;
    let handle: FileHandle;
    for (;;) {
      try {
        handle = await open(join(this.options.dir, segmentName(number)), "wx");
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        number++;
      }
    }
    const previous = this.handle;
    this.handle = handle;
    this.active = number;
    this.space.addSegment(number, 0);
    this.dirSyncPending = true;
    await previous?.close().catch(() => undefined);
  }

  private checkFull(): void {
    const full = this.space.full;
    if (full === this.wasFull) return;
    this.wasFull = full;
    this.options.onFull?.(full);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Arms the commit timer for when the waiting entries are due (never before a retry may start). */
  private schedule(): void {
    if (this.committing || this.closed) return;
    const due = this.work ? Date.now() : this.queue.dueAt();
    if (due === undefined) return;
    const at = Math.max(due, this.retryAt);
    if (this.timer && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.runCommit();
      },
      Math.max(0, at - Date.now()),
    );
  }

  private runCommit(): Promise<void> {
    this.committing ??= this.commit().finally(() => {
      this.committing = undefined;
      this.schedule();
    });
    return this.committing;
  }

  private async commit(): Promise<void> {
    if (!this.work) {
      const entries = this.queue.take();
      if (entries.length === 0) return;
      const runs = planCommit(entries, this.space.sizeOf(this.active) ?? 0, this.segmentBytes);
      this.work = { runs, run: 0, data: undefined, written: 0, rotated: false };
    }
    const w = this.work;
    try {
      for (; w.run < w.runs.length; w.run++, w.data = undefined, w.written = 0, w.rotated = false) {
        const run = w.runs[w.run]!;
        if (run.newSegment && !w.rotated) {
          await this.startSegment(nextSegmentNumber(this.active, Date.now()));
          w.rotated = true;
        }
        if (this.dirSyncPending) {
          await fsyncDir(this.options.dir);
          this.dirSyncPending = false;
        }
        w.data ??= run.entries.length === 1 ? run.entries[0]! : Buffer.concat(run.entries, run.bytes);
        const handle = this.handle!;
        while (w.written < w.data.length) {
          const { bytesWritten } = await handle.write(w.data, w.written, w.data.length - w.written, null);
          w.written += bytesWritten;
        }
        await handle.datasync();
        this.space.committed(this.active, run.bytes);
        this.committedEntries += run.entries.length;
        this.commits++;
      }
      this.work = undefined;
      this.failures = 0;
      this.retryAt = 0;
    } catch (error) {
      // Kept as it is: the retry writes the rest of the same bytes, so the segment ends up exactly
      // as if nothing had failed (a cut-back could shrink it under what the follower has read).
      this.failures++;
      const delayMs = backoffDelay(this.failures, RETRY_BASE_MS, RETRY_MAX_MS);
      this.retryAt = Date.now() + delayMs;
      this.options.onError?.(error, { attempt: this.failures, delayMs });
    }
    this.checkFull();
  }

  private async deleteAcknowledged(): Promise<void> {
    const acknowledged = await readAcknowledged(this.options.checkpointDir);
    for (const n of [...this.released]) {
      const size = this.space.sizeOf(n);
      if (size === undefined) {
        this.released.delete(n);
        continue;
      }
      // The segment written to may have grown since the follower let it go: the follower takes it
      // up again and lets it go once more; and the checkpoint must cover all of it.
      if (n === this.active) continue;
      const checkpoint = acknowledged.get(segmentName(n));
      if (!checkpoint?.done || checkpoint.position < size) continue;
      await rm(join(this.options.dir, segmentName(n)), { force: true });
      this.space.removeSegment(n);
      this.released.delete(n);
    }
    this.checkFull();
  }
}

/**
 * The follower's saved checkpoints of this directory's segments, by file name (none if unreadable:
 * nothing is deleted this time).
 */
async function readAcknowledged(
  checkpointDir: string,
): Promise<Map<string, Pick<FileCheckpoint, "done" | "position">>> {
  const byName = new Map<string, Pick<FileCheckpoint, "done" | "position">>();
  for (const c of (await readSavedCheckpoints(checkpointDir)) ?? [])
    if (typeof c.path === "string") byName.set(basename(c.path), { done: c.done, position: c.position });
  return byName;
}

/**
 * A segment cut inside a line (a crash or power loss during a write): cut back to its last
 * newline. Those bytes were never part of a record the follower gave out. Returns the new size.
 */
async function cutToLastLine(path: string, size: number): Promise<number> {
  if (size === 0) return 0;
  const handle = await open(path, "r+");
  try {
    const buffer = Buffer.alloc(TAIL_READ_BYTES);
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - TAIL_READ_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, end - start, start);
      const lf = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (lf >= 0) {
        end = start + lf + 1;
        break;
      }
      end = start;
    }
    if (end < size) {
      await handle.truncate(end);
      await handle.sync();
    }
    return end;
  } finally {
    await handle.close();
  }
}
