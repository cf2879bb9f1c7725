import { readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { ensureDir, type OutOfFilesRetryOptions, retryWithBackoff, writeFileDurably } from "@auditpipe/ship";

/** One followed file's progress. Everything before `position` was acknowledged by the sink. */
export interface FileCheckpoint {
  /**
   * The file's identity: a hash of its first line, or for a second file starting with the same
   * line, that hash salted with its device and inode (see `head`).
   */
  fingerprint: string;
  /** Hash of the first line when it differs from `fingerprint` (a collision); absent: the same. */
  head?: string;
  /** Device and inode the file had: tells apart files starting with the same line. Absent in older files. */
  dev?: number;
  ino?: number;
  /** Where the file was last seen (for people; the fingerprint is what identifies it). */
  path: string;
  position: number;
  /** Hash of the bytes just before `position` (see readMarker). */
  marker: string;
  /** End of the furthest batch handed to the sink and not yet acknowledged (the last of `inflightEnds`). */
  inflightEnd: number | null;
  /**
   * Ends of every batch handed to the sink and not yet acknowledged, in order (several are written
   * at once): after a crash the replay must cut its batches exactly here, so it rewrites the same
   * objects instead of adding others. Absent in files written before batches were pipelined.
   */
  inflightEnds?: number[];
  /**
   * Where reading resumes, when before `position`: the oldest record the parser still held (a
   * syslog pid's last message is held until that pid logs again, while other pids' later
   * messages are shipped). Absent: at `position`.
   */
  resume?: number;
  /** Offsets of the records in `[resume, position)` that were held, not acknowledged: only these go out again. */
  held?: number[];
  /** Rotated away and read to its end: nothing more will come. */
  done: boolean;
  /**
   * Not read: the file of this name holds the same entries as this file (PostgreSQL writing two
   * destinations at once); kept while the file exists, so a restart does not read it either.
   */
  duplicateOf?: string;
  /**
   * The file's size when the checkpoint was saved: if the file is gone or truncated before it was
   * read to the end, `[position, size)` is what is known to be given up. Absent in older files.
   */
  size?: number;
  /**
   * The outcome stage's state at `position` (_outcome-stream.ts, OutcomeState: versioned): what
   * the stream's join held undecided there, so a restart decides the rest as before. Absent in
   * older files and before the file's lane started: the lane then takes over the join of the file
   * before it.
   */
  outcome?: unknown;
  /** ISO 8601 time of the last change. */
  modified: string;
}

interface CheckpointFile {
  version: 1;
  checkpoints: FileCheckpoint[];
}

/** How a save waits for the state directory's file system (each wait reported), and when it stops waiting. */
export interface SaveRetryOptions extends OutOfFilesRetryOptions {
  /** Aborted (the source stops): a save that fails is not retried any more, its error is thrown. */
  signal?: AbortSignal;
}

/**
 * An error of the file system (an errno code): out of space, quota or file descriptors, remounted
 * read-only, an I/O error, permissions changed. Each can pass (space freed, a disk replaced, a
 * mode put back), and giving up would lose the acknowledgements to come: a save waits for it.
 */
export function isFileSystemError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code);
}

export const CHECKPOINT_FILE = "checkpoints.json";
const TEMP_FILE = "checkpoints.new.json";

function parse(text: string): FileCheckpoint[] | undefined {
  try {
    const data = JSON.parse(text) as Partial<CheckpointFile>;
    if (data.version !== 1 || !Array.isArray(data.checkpoints)) return undefined;
    return data.checkpoints.filter(
      (c) => typeof c.fingerprint === "string" && Number.isSafeInteger(c.position) && c.position >= 0,
    );
  } catch {
    return undefined;
  }
}

/**
 * The checkpoints last saved in `dir` (its checkpoints.json, renamed into place whole), checked as
 * `Checkpointer.load` checks them; undefined when there is none or it is not a checkpoint file.
 * The one reader of the format beside the Checkpointer: the syslog journal deletes the segments
 * these say were read and acknowledged.
 */
export async function readSavedCheckpoints(dir: string): Promise<FileCheckpoint[] | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, CHECKPOINT_FILE), "utf8");
  } catch {
    return undefined;
  }
  return parse(text);
}

/**
 * The state dir's checkpoints: versioned JSON written to a temp file, fsynced and renamed (the
 * directory fsynced too), only when something changed. A crash between write and rename leaves
 * the newer state in the temp file, so it is read first.
 */
export class Checkpointer {
  private readonly byFingerprint = new Map<string, FileCheckpoint>();
  /** Changes made and changes saved: a set() during a save() is not lost. */
  private changes = 0;
  private saved = 0;
  /** Why a state file was set aside on load (unreadable); for the caller's log. */
  readonly warnings: string[] = [];
  /**
   * No state file was found: this is the very first start (`--from end` applies only now). The
   * first save() writes the file even if it holds no checkpoint, so the next start is not fresh.
   */
  fresh = true;
  private readonly dir: string;
  private readonly retry: SaveRetryOptions;

  private constructor(dir: string, retry: SaveRetryOptions) {
    this.dir = dir;
    this.retry = retry;
  }

  /**
   * `retry.onRetry` reports a save that waits for the file system (isFileSystemError: out of file
   * descriptors, a full disk, ...): a save is retried with backoff until it can write, and given up
   * only once `retry.signal` is aborted, so neither a burst of connections elsewhere in the process
   * nor a full state disk stops the source or loses an acknowledgement.
   */
  static async load(dir: string, retry: SaveRetryOptions = {}): Promise<Checkpointer> {
    await ensureDir(dir);
    const checkpointer = new Checkpointer(dir, retry);
    for (const name of [TEMP_FILE, CHECKPOINT_FILE]) {
      let text: string;
      try {
        text = await readFile(join(dir, name), "utf8");
      } catch {
        continue;
      }
      const entries = parse(text);
      if (!entries) {
        const aside = `${name}.unreadable-${Date.now()}`;
        await rename(join(dir, name), join(dir, aside));
        checkpointer.warnings.push(
          `${name} is not a checkpoint file; moved it to ${aside} and started without it`,
        );
        continue;
      }
      for (const entry of entries) checkpointer.byFingerprint.set(entry.fingerprint, { ...entry });
      checkpointer.fresh = false;
      break;
    }
    if (checkpointer.fresh) checkpointer.changes++;
    return checkpointer;
  }

  get(fingerprint: string): FileCheckpoint | undefined {
    return this.byFingerprint.get(fingerprint);
  }

  /** The in-flight batch ends of a checkpoint, oldest first (older files carry only `inflightEnd`). */
  static inflightEnds(checkpoint: FileCheckpoint): number[] {
    if (Array.isArray(checkpoint.inflightEnds))
      return checkpoint.inflightEnds.filter((end) => Number.isSafeInteger(end) && end > checkpoint.position);
    return checkpoint.inflightEnd !== null && checkpoint.inflightEnd > checkpoint.position
      ? [checkpoint.inflightEnd]
      : [];
  }

  /** Where to resume reading and the held records to give out again (see `resume`); checked, as it comes from disk. */
  static resumePoint(checkpoint: FileCheckpoint): { from: number; held: number[] } {
    const { position, resume } = checkpoint;
    if (
      !Number.isSafeInteger(resume) ||
      resume! < 0 ||
      resume! >= position ||
      !Array.isArray(checkpoint.held)
    )
      return { from: position, held: [] };
    const held = checkpoint.held.filter((o) => Number.isSafeInteger(o) && o >= resume! && o < position);
    return { from: held.length > 0 ? resume! : position, held };
  }

  entries(): FileCheckpoint[] {
    return [...this.byFingerprint.values()];
  }

  /** Records a change (saved by the next save()). */
  set(entry: Omit<FileCheckpoint, "modified">): void {
    this.byFingerprint.set(entry.fingerprint, { ...entry, modified: new Date().toISOString() });
    this.changes++;
  }

  delete(fingerprint: string): void {
    if (this.byFingerprint.delete(fingerprint)) this.changes++;
  }

  /**
   * Writes the checkpoints durably if anything changed; true when it wrote. A file system error is
   * waited out (see load), unless `once`.
   */
  async save(options: { once?: boolean } = {}): Promise<boolean> {
    if (this.changes === this.saved) return false;
    const changes = this.changes;
    const body: CheckpointFile = { version: 1, checkpoints: this.entries() };
    // A fixed temp name: load() reads it first, in case a crash came between its fsync and the rename.
    const write = () =>
      writeFileDurably(join(this.dir, CHECKPOINT_FILE), `${JSON.stringify(body, null, 1)}\n`, {
        tempPath: join(this.dir, TEMP_FILE),
      });
    if (options.once) await write();
    else await retryWithBackoff(write, { ...this.retry, retryable: isFileSystemError });
    this.saved = changes;
    return true;
  }

  /** Removes the state files (tests, `--reset`). */
  static async reset(dir: string): Promise<void> {
    await rm(join(dir, CHECKPOINT_FILE), { force: true });
    await rm(join(dir, TEMP_FILE), { force: true });
  }
}
