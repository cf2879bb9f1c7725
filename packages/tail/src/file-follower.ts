import { type FSWatcher, watch } from "node:fs";
import { type FileHandle, lstat, open, readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import { Checkpointer, type FileCheckpoint, isFileSystemError } from "./_checkpoint.ts";
import { destinationName, destinationRole, type FileRole } from "./_destinations.ts";
import { collisionId, readFingerprint, readMarker, samePrefix } from "./_file-identity.ts";
import { type Downstream, READ_BYTES, REPLACED, TrackedFile } from "./_tracked-file.ts";
import { globMatcher } from "./glob.ts";

/** The small logger interface the file pipeline needs (pino fits). Messages never carry record text. */
export interface SourceLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Why bytes of a file were given up (FollowObserver.dataLost): each value is recorded as given
 * (metric labels, manifests), so they never change.
 */
export const DataLostReason = {
  /** The file was deleted (or left the pattern) before it was read to its end: while the source was stopped. */
  DELETED: "deleted",
  /**
   * The file was truncated, or rewritten in place, before it was read to its end (copytruncate
   * without a copy in the pattern, truncate-on-rotation, a tool rewriting it): while following it
   * or while stopped.
   */
  TRUNCATED: "truncated",
  /** One record was larger than the parser's limit (maxRecordBytes): skipped whole. */
  RECORD_TOO_LARGE: "record-too-large",
} as const;
export type DataLostReason = (typeof DataLostReason)[keyof typeof DataLostReason];

/** What the follower reports about files as it follows them; every method optional. */
export interface FollowObserver {
  bytesBehind?(file: string, bytes: number): void;
  fileGone?(file: string): void;
  truncation?(file: string): void;
  /**
   * Bytes `[from, to)` of a file will never be read: the one place every give-up is reported (and
   * logged by the source, at warn). `to` is the end known when it was given up, so the range is
   * a lower bound: what was appended after the last look, or written and replaced between two
   * looks, is not known.
   */
  dataLost?(file: string, from: number, to: number, reason: DataLostReason): void;
  checkpointSaved?(): void;
  /**
   * Saving checkpoints in `stateDir` failed with `code` (ENOSPC, EROFS, EMFILE, ...) and is retried
   * with backoff; reading waits meanwhile (nothing is handed to the sink before its checkpoint is
   * saved). Called on every failed attempt, and with `undefined` once a save succeeds again.
   */
  checkpointSaveFailed?(stateDir: string, code: string | undefined): void;
}

/**
 * How the follower opens a file's downstream (its lane of the pipeline): from `start` (the
 * acknowledged position; reading from `resume.from`, to give out again the records at
 * `resume.held`), cutting at `replayEnds` first (batch ends recorded before a crash), and
 * calling `checkpoints` when its batches are handed over or acknowledged.
 */
export type OpenDownstream = (
  file: TrackedFile,
  start: number,
  replayEnds: number[],
  checkpoints: { handingOver(): Promise<void>; acknowledged(): void },
  resume: { from: number; held: number[] },
  /** The outcome state its checkpoint kept at `start` (FileCheckpoint.outcome), if any. */
  outcome: unknown,
  role: FileRole,
) => Downstream;

export interface FileFollowerOptions {
  /** PostgreSQL's log_directory. */
  logDir: string;
  /**
   * The format of the files followed (one log stream): gives the default pattern. `auto`: every
   * destination PostgreSQL writes (csvlog `.csv`, jsonlog `.json`, stderr `.log`), each file read
   * in the format its name says, and each entry once: a `.json` file beside a `.csv` of the same
   * name holds the same entries (both destinations on) and is not read; a `.log` file beside one
   * of them gives only the csvlog/jsonlog records PostgreSQL diverted into it while a destination
   * was turned on or off.
   */
  format: LogFormat | "auto";
  /** Which file names belong to the stream; default by format (`*.csv`, `*.json`, `*.log`). */
  pattern?: string;
  /** Where checkpoints are kept. */
  stateDir: string;
  /**
   * Where to start in the files present at the very first start (no checkpoint state yet); default
   * `beginning`. Files that appear later, or while the source was stopped, are always read from 0.
   */
  from?: "beginning" | "end";
  /** How often the directory and files are checked when no fs event arrives; default 200 ms. */
  pollIntervalMs?: number;
  /** A file that has not grown for this long is quiet: held records are released; default 50 ms. */
  quietMs?: number;
  observer?: FollowObserver;
  logger?: SourceLogger;
  /** Where each followed file's bytes go. */
  downstream: OpenDownstream;
  /** A file finished before this start (not followed again): the outcome state its checkpoint kept at its end. */
  finished?: (outcome: unknown, role: FileRole) => void;
  /** For tests: called after each listing of the directory, before the files listed are looked at. */
  onListed?: () => void | Promise<void>;
}

/** Default file name pattern per format: what PostgreSQL's log_filename gives each destination. */
export const DEFAULT_PATTERNS: Record<LogFormat, string> = {
  csvlog: "*.csv",
  jsonlog: "*.json",
  stderr: "*.log",
  syslog: "*.log",
};
/** `format: "auto"`'s file names: every destination PostgreSQL writes to files. */
export const AUTO_PATTERN = "*.{csv,json,log}";

/** What FileSource reports about files and the directory it cannot read (logged, and in health()). */
export const FileSourceErrorCode = {
  /** A matching file could not be opened or read (permissions, I/O error): retried every scan. */
  FILE_UNREADABLE: "AUDITPIPE_ERR_FILE_UNREADABLE",
  /** The log directory could not be listed: nothing is taken as gone until a listing works again. */
  LOG_DIR_UNLISTABLE: "AUDITPIPE_ERR_LOG_DIR_UNLISTABLE",
} as const;
export type FileSourceErrorCode = (typeof FileSourceErrorCode)[keyof typeof FileSourceErrorCode];

/** What keeps the source from seeing every file now; empty when all is well. */
export interface FileSourceHealth {
  /** Checkpoints cannot be saved (the errno code, e.g. `ENOSPC`): reading waits and the save is retried. */
  checkpoints?: string;
  /** The directory listing failed (its errno code, e.g. `EACCES`); files already open are read on. */
  listing?: string;
  /** Matching files that could not be opened or read, with the errno code. */
  unreadable: { path: string; code: string }[];
}

/**
 * Checkpoints that only record acknowledgements are saved at most this often while reading goes
 * on (and at once when the source goes idle): an acknowledged range not yet checkpointed is only
 * rewritten, to the same object, after a crash. Write-ahead saves (before a batch is handed to the
 * sink) are never deferred.
 */
const ACK_CHECKPOINT_INTERVAL_MS = 1_000;
/**
 * A pass that read something but less than READ_BYTES has caught up with PostgreSQL writing as it
 * goes (one fs event per write): it waits before the next pass instead of running one per event.
 * Each pass costs stats and a checkpoint look whatever it reads; under pgbench, one pass per
 * write cost the sidecar ~50 µs of CPU per entry instead of ~10. A pass that read READ_BYTES is
 * behind and reads on at once.
 *
 * The wait is COALESCE_MS for a trickle, so an entry is metered within a few tens of ms, and
 * STEADY_COALESCE_MS once a pass reads STEADY_BYTES or more (~3 MB/s and up): between
 * PostgreSQL's bursts the sidecar's caches are cold at every pass, and at 3,000 pgbench TPS
 * (~21k entries/s) 100 ms passes cost it ~12 % less CPU than 20 ms ones.
 */
const COALESCE_MS = 20;
/**
 * A newer file of the stream is not read while an older one is unfinished, so records reach the
 * outcome join in the order they were written (a session's transaction can end in the next
 * file). An older file that has been read to its end but keeps growing is another stream's
 * (a pattern matching two): after this long the newer one is read anyway.
 */
const ORDER_WAIT_MS = 5_000;
const STEADY_BYTES = 64 << 10;
const STEADY_COALESCE_MS = 100;
/**
 * Checkpoints dropped because their file left the directory are remembered (by device and inode)
 * this many at most: a file that comes back (a remount, an NFS hiccup, a directory moved away and
 * back) resumes where it was read instead of being read again from 0. A few hundred bytes each.
 */
const FORGOTTEN_MAX = 4096;

const silentLogger: SourceLogger = { info() {}, warn() {}, error() {} };

/**
 * The source stage of the file pipeline: follows one PostgreSQL log stream in a directory, every
 * matching file, through rotation by age, size or pg_rotate_logfile(), copytruncate and
 * truncate-on-rotation, feeding each file's bytes once, in order, to its downstream. It knows no
 * record and no sink: a file's checkpoint advances only when its downstream says the sink
 * acknowledged a range; a rotated file is drained to its end before it is let go, and a deleted
 * one through its open handle.
 */
export class FileFollower {
  private readonly files = new Map<string, TrackedFile>(); // by identity (TrackedFile.fingerprint)
  private readonly matches: (name: string) => boolean;
  private readonly observer: FollowObserver;
  private readonly logger: SourceLogger;
  private checkpoints!: Checkpointer;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private watcher: FSWatcher | undefined;
  /** fs.watch failed (or is not supported here): the directory is scanned on every pass. */
  private watchUnavailable = false;
  /** A file appeared, vanished or was renamed since the last scan (inotify told us). */
  private dirChanged = true;
  private lastScan = 0;
  private firstScan = true;
  /** Why the last listing of the directory failed (errno code); undefined while listings work. */
  private listingError: string | undefined;
  /** Matching paths that could not be opened or read, with the errno code: retried every scan. */
  private readonly unreadable = new Map<string, string>();
  private lastSave = 0;
  private readonly options: FileFollowerOptions;
  /** Aborted by stop(): a checkpoint save that fails then is not retried any more. */
  private readonly stopSignal = new AbortController();
  /** Why saving checkpoints fails now (errno code); undefined while saves work. */
  private saveFailure: string | undefined;
  /** Paths truncated in place, or whose first line is being written: scanned on every pass until followed. */
  private readonly awaitingFirstLine = new Set<string>();
  /** The matching names of the last listing (siblings decide a file's role with `format: auto`). */
  private listed = new Set<string>();
  /** Files not read because another destination's file holds the same entries: device:inode → id. */
  private readonly duplicates = new Map<string, string>();
  /** Checkpoints dropped since this start (their file left the directory), by device:inode, oldest first. */
  private readonly forgotten = new Map<string, FileCheckpoint>();
  /** Files taken for deleted whose inode was listed again after their lane had ended: said once. */
  private readonly backAfterEnd = new WeakSet<TrackedFile>();

  constructor(options: FileFollowerOptions) {
    this.options = options;
    this.matches = globMatcher(
      options.pattern ?? (options.format === "auto" ? AUTO_PATTERN : DEFAULT_PATTERNS[options.format]),
    );
    this.observer = options.observer ?? {};
    this.logger = options.logger ?? silentLogger;
  }

  async start(): Promise<void> {
    const info = await stat(this.options.logDir).catch(() => undefined);
    if (!info?.isDirectory())
      throw new Error(`log directory ${this.options.logDir} does not exist or is not a directory`);
    const stateDir = this.options.stateDir;
    this.checkpoints = await Checkpointer.load(stateDir, {
      signal: this.stopSignal.signal,
      onRetry: ({ attempt, code, delayMs }) => {
        this.saveFailure = code;
        this.observer.checkpointSaveFailed?.(stateDir, code);
        const fields = { dir: stateDir, code, attempt, delayMs: Math.round(delayMs) };
        if (code === "EMFILE" || code === "ENFILE")
          this.logger.warn(fields, "cannot open the checkpoint file (out of file descriptors); retrying");
        else
          this.logger.error(
            fields,
            `cannot save checkpoints in the state directory (${code}${code === "ENOSPC" ? ": its file system is full" : ""}); reading waits, nothing is lost; retrying`,
          );
      },
    });
    for (const warning of this.checkpoints.warnings) this.logger.warn({ stateDir }, warning);
    for (const entry of this.checkpoints.entries()) this.fromLastRun.add(entry.fingerprint);
    // Record the first start at once: `from: end` applies to the files present now, never again.
    // Tried once: a state directory that refuses its first write ends the start with the reason.
    this.fresh = this.checkpoints.fresh;
    await this.checkpoints.save({ once: true }).catch((error: unknown) => {
      if (!isFileSystemError(error)) throw error;
      throw new Error(`cannot save checkpoints in ${stateDir}: ${describe(error)}`, { cause: error });
    });
    this.watch();
    this.loop = this.run();
  }

  /**
   * Watches the directory, so an append or a new file wakes an idle source at once. While the
   * source is busy it reads on a timer instead and does not watch: PostgreSQL's logger writes
   * each record with its own write(), and under load the watch woke this process thousands of
   * times a second, each wake-up taking CPU from PostgreSQL itself.
   */
  private watch(): boolean {
    if (this.watcher || this.watchUnavailable || this.stopping) return false;
    try {
      this.watcher = watch(this.options.logDir, { persistent: false }, (event) => {
        if (event === "rename") this.dirChanged = true;
        this.wake?.();
      });
      this.watcher.on("error", () => {
        this.unwatch();
        this.watchUnavailable = true; // polling alone still works
      });
      return true;
    } catch {
      this.watchUnavailable = true;
      return false;
    }
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /**
   * Stops reading, closes what was read into batches, lets each file's downstream drain (as long
   * as its deliver stage allows), saves checkpoints.
   */
  async stop(): Promise<void> {
    if (this.stopping) return this.loop;
    this.stopping = true;
    this.stopSignal.abort();
    this.unwatch();
    this.wake?.();
    await this.loop;
  }

  /** Something downstream changed (a write settled): an idle pass looks again at once. */
  nudge(): void {
    this.wake?.();
  }

  /** Files followed now: path, identity, position read and acknowledged. */
  status(): { path: string; fingerprint: string; size: number; read: number; acked: number }[] {
    return [...this.files.values()].map((f) => ({
      path: f.path,
      fingerprint: f.fingerprint,
      size: f.size,
      read: f.readPos,
      acked: f.acked,
    }));
  }

  /** What keeps the source from seeing every file now (for /readyz and metrics). */
  health(): FileSourceHealth {
    return {
      ...(this.saveFailure ? { checkpoints: this.saveFailure } : {}),
      ...(this.listingError ? { listing: this.listingError } : {}),
      unreadable: [...this.unreadable].map(([path, code]) => ({ path, code })),
    };
  }

  /** No state existed at start: the very first start, where `from: end` applies. */
  private fresh = false;
  /** Checkpoints of the last run whose file this run has not opened: gone, they went while stopped. */
  private readonly fromLastRun = new Set<string>();

  private async run(): Promise<void> {
    try {
      while (!this.stopping) {
        // Listing the directory and re-hashing first lines on every pass cost PostgreSQL's CPU
        // under load: scan when a file came or went, and otherwise once per poll interval.
        const poll = this.options.pollIntervalMs ?? 200;
        if (
          this.dirChanged ||
          this.awaitingFirstLine.size > 0 ||
          this.watchUnavailable ||
          Date.now() - this.lastScan >= poll
        ) {
          this.dirChanged = false;
          await this.scan();
          this.lastScan = Date.now();
        }
        let progressed = false;
        let bytesRead = 0;
        const now = Date.now();
        // Oldest first; files that have ended (nothing left to read) last: their deliver() may wait
        // for room at the sink, and a file rewritten in place must be read before it changes again.
        const ordered = [...this.files.values()].sort(
          (a, b) => Number(a.downstream.ended) - Number(b.downstream.ended) || a.mtimeMs - b.mtimeMs,
        );
        // The file PostgreSQL writes now, per destination (one stream: one); the others are rotated away.
        // Files by age, ties by name: one total order, so "older" and "newest" never disagree.
        const byAge = [...this.files.values()].sort(
          (a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
        );
        const newest = new Map<string, TrackedFile>();
        for (const f of byAge) if (!f.gone) newest.set(this.destinationOf(f.path), f);
        // Destinations with a file not read to its end in this pass: newer files of it wait, so
        // one file's lane fills at a time. Read side by side, a backlog of N files held N open
        // batches (and, with the sink down, N ready ones): ~6 MB each.
        const behind = new Set<string>();
        for (const file of ordered) {
          if (this.stopping) break;
          const group = this.destinationOf(file.path);
          if (behind.has(group) && !file.downstream.ended) {
            await file.downstream.deliver();
            continue;
          }
          // A newer file of the destination waits for the older ones to end, so its records reach
          // the outcome join in the order written.
          const older = byAge
            .slice(0, byAge.indexOf(file))
            .filter((f) => this.destinationOf(f.path) === group);
          const read = this.waitsForOlder(file, older, now) ? 0 : await file.read(now);
          if (read === REPLACED) {
            // Truncated or rewritten in place since the last read: finish the old content and
            // look at the directory at once, so the new content is read from its start.
            await this.truncated(file);
            this.dirChanged = true;
            progressed = true;
          } else if (read > 0) {
            progressed = true;
            bytesRead += read;
          } else {
            file.quiet(Date.now(), this.options.quietMs ?? 50);
            // Rotated away (a newer file exists) or deleted, read to the end and quiet: let it go.
            if (
              (file.gone || file !== newest.get(this.destinationOf(file.path))) &&
              Date.now() - file.lastGrowth >= (this.options.quietMs ?? 50)
            ) {
              if (await this.confirmedEnd(file)) file.finish(Date.now());
            }
          }
          if (!file.downstream.ended && file.size > file.readPos) behind.add(group);
          await file.downstream.deliver();
          this.observer.bytesBehind?.(file.path, Math.max(0, file.size - file.acked));
          if (file.settled) await this.release(file);
        }
        if (!progressed || Date.now() - this.lastSave >= ACK_CHECKPOINT_INTERVAL_MS)
          await this.saveCheckpoints();
        if (!progressed && !this.stopping) {
          // A watch opened just now misses what was appended since the last read: look once more first.
          if (!this.watch()) await this.idle();
        } else if (bytesRead < READ_BYTES && !this.stopping && !this.dirChanged) {
          this.unwatch();
          const wait = bytesRead >= STEADY_BYTES ? STEADY_COALESCE_MS : COALESCE_MS;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    } catch (error) {
      // Stopping while the state directory refuses a save: shut down without it (what it would
      // have recorded is read again at the next start, into the same objects).
      if (!(this.stopping && isFileSystemError(error))) {
        this.logger.error({ err: error }, "file source stopped on an unexpected error");
        throw error;
      }
    }
    await this.shutdown();
  }

  /**
   * Whether `file` waits for an older file of the stream to end (see ORDER_WAIT_MS): while one is
   * behind, or has not been quiet yet, and for at most ORDER_WAIT_MS once it is read to its end.
   */
  private waitsForOlder(file: TrackedFile, older: TrackedFile[], now: number): boolean {
    if (file.readPos > file.startPos) return false; // reading already
    const open = older.filter((f) => !f.downstream.ended);
    if (open.length === 0) {
      this.orderWaits.delete(file);
      return false;
    }
    if (open.some((f) => f.readPos < f.size || f.holding)) return true;
    const since = this.orderWaits.get(file) ?? now;
    this.orderWaits.set(file, since);
    if (now - since < ORDER_WAIT_MS) return true;
    this.orderWaits.delete(file);
    return false;
  }

  /** Newer files waiting for an older one that is read to its end but not finished: since when. */
  private readonly orderWaits = new Map<TrackedFile, number>();

  /** The end really is the end: nothing was appended since the last read. */
  private async confirmedEnd(file: TrackedFile): Promise<boolean> {
    const { size } = await file.handle.stat();
    return size <= file.readPos;
  }

  private idle(): Promise<void> {
    // A held record is released once its file has been quiet for quietMs: look again then, not a
    // whole poll interval later (this is most of the delay from an append to the meter).
    const quietMs = this.options.quietMs ?? 50;
    const poll = this.options.pollIntervalMs ?? 200;
    let wait = poll;
    for (const file of this.files.values())
      if (file.holding) wait = Math.min(wait, Math.max(1, quietMs - (Date.now() - file.lastGrowth)));
    return new Promise((resolve) => {
      const timer = setTimeout(done, wait);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = undefined;
        done();
      };
    });
  }

  /** Lists the directory: new files are opened and tracked; vanished or replaced ones marked gone. */
  private async scan(): Promise<void> {
    const dir = this.options.logDir;
    let listed: string[];
    try {
      listed = await readdir(dir);
    } catch (error) {
      // A failed listing says nothing about the files: taken as "no files", it let finished
      // files' checkpoints go and read them again from 0. Open files are read on meanwhile.
      const code = errnoCode(error);
      if (this.listingError !== code)
        this.logger.warn(
          { dir, code: FileSourceErrorCode.LOG_DIR_UNLISTABLE, err: code },
          "log directory cannot be listed; reading open files on and retrying",
        );
      this.listingError = code;
      return;
    }
    await this.options.onListed?.();
    if (this.listingError !== undefined) {
      this.logger.info({ dir }, "log directory can be listed again");
      this.listingError = undefined;
    }
    const names = listed.filter((n) => this.matches(n) && !n.endsWith(".gz")).sort();
    this.listed = new Set(names);
    const seen = new Set<string>();
    const inodes = new Map<string, string>(); // path → device:inode
    /** Paths that could not be looked at: what they hold is unknown, so nothing is taken as gone. */
    const unknown = new Set<string>();
    for (const name of names) {
      const path = join(dir, name);
      let info: Awaited<ReturnType<typeof stat>>;
      try {
        info = await stat(path);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") {
          unknown.add(path);
          this.markUnreadable(path, error);
        } else if (!(await lstat(path).catch(() => undefined))) {
          // Listed, then gone before this look: deleted just now, or the directory itself went
          // (a remount, renamed away). Which one the next listing tells; this one proves nothing.
          unknown.add(path);
        }
        continue;
      }
      if (!info.isFile()) continue;
      inodes.set(path, inodeKey(info.dev, info.ino));
    }
    // Paths whose inode a tracked file holds need no look: the file is known. So is one taken for
    // deleted and listed again (its content was not replaced in place): it is back.
    const trackedInodes = new Map<string, TrackedFile>();
    for (const file of this.files.values())
      if (!file.gone) trackedInodes.set(inodeKey(file.dev, file.ino), file);
    for (const file of this.files.values()) {
      const key = inodeKey(file.dev, file.ino);
      if (file.gone && !file.rewritten && !trackedInodes.has(key)) trackedInodes.set(key, file);
    }
    for (const [path, ino] of inodes) {
      const duplicate = this.duplicates.get(ino);
      if (duplicate) {
        seen.add(duplicate);
        continue;
      }
      const known = trackedInodes.get(ino);
      if (known) {
        seen.add(known.fingerprint);
        this.awaitingFirstLine.delete(path);
        if (known.gone) this.back(known, path);
        else if (known.path !== path && !inodes.has(known.path)) known.path = path; // renamed
        continue;
      }
      if (!(await this.discover(path, seen, inodes))) unknown.add(path);
    }
    for (const path of this.unreadable.keys())
      if (!names.includes(basename(path))) this.markReadable(path, "no longer in the directory");
    for (const path of this.awaitingFirstLine) if (!inodes.has(path)) this.awaitingFirstLine.delete(path);
    for (const file of this.files.values()) {
      if (file.gone) continue;
      if (!unknown.has(file.path) && inodes.get(file.path) !== inodeKey(file.dev, file.ino)) {
        // Deleted or replaced: keep reading through the open handle, then let it go.
        file.gone = true;
        this.logger.info(
          { file: file.path },
          "file removed or replaced; draining it through its open handle",
        );
      }
      const { size } = await file.handle.stat();
      // Shorter than what was read, or a different first line: truncated, or rewritten in place
      // (truncate-on-rotation reusing the name) faster than a scan could see it shrink.
      if (size < file.readPos || (!file.gone && (await readFingerprint(file.handle)) !== file.head)) {
        await this.truncated(file);
      }
    }
    // Only a listing where every matching file was identified tells which files are gone.
    if (unknown.size === 0) this.pruneCheckpoints(seen, inodes);
    this.firstScan = false;
  }

  /**
   * A file taken for deleted is listed again, same device and inode (the directory went and came
   * back): read on from where it was. If its lane has ended already, it is let go as usual (its
   * checkpoint done at the position read) and the next scan follows it again from there; until
   * then its path is known, so it is never taken for a new file and read from 0.
   */
  private back(file: TrackedFile, path: string): void {
    file.path = path;
    if (!file.downstream.ended) {
      file.gone = false;
      this.logger.info({ file: path, position: file.readPos }, "file back in the directory; reading on");
    } else if (!this.backAfterEnd.has(file)) {
      this.backAfterEnd.add(file);
      this.logger.info(
        { file: path, position: file.readPos },
        "file back in the directory after it was drained; followed again from there once let go",
      );
    }
  }

  /** A path that cannot be opened or read: reported once (and again if the reason changes), retried. */
  private markUnreadable(path: string, error: unknown): void {
    const code = errnoCode(error);
    if (this.unreadable.get(path) === code) return;
    this.unreadable.set(path, code);
    this.logger.warn(
      { file: path, code: FileSourceErrorCode.FILE_UNREADABLE, err: code },
      "log file cannot be read; following the other files and retrying it",
    );
  }

  private markReadable(path: string, why: string): void {
    if (!this.unreadable.delete(path)) return;
    this.logger.info({ file: path }, `log file no longer unreadable: ${why}`);
  }

  /**
   * A path no tracked file holds: a new log file, a copy of a known one, or a finished one. False
   * when the file could not be opened or read (reported, and tried again next scan).
   */
  private async discover(path: string, seen: Set<string>, inodes: Map<string, string>): Promise<boolean> {
    let handle: FileHandle | undefined;
    try {
      let fingerprint: string | undefined;
      try {
        handle = await open(path, "r");
        fingerprint = await readFingerprint(handle);
      } catch (error) {
        this.markUnreadable(path, error);
        return false;
      }
      this.markReadable(path, "it is read now");
      if (fingerprint === undefined) {
        // First line not written yet: the next scan looks again. One being written, or a file
        // just truncated in place, is looked at on every pass (its new content may be replaced soon).
        if ((await handle.stat()).size > 0) this.awaitingFirstLine.add(path);
        return true;
      }
      this.awaitingFirstLine.delete(path);
      const { size, ino, dev, mtimeMs } = await handle.stat();
      for (const tracked of this.files.values()) {
        if (tracked.gone || tracked.head !== fingerprint) continue;
        if (await this.isCopyOf(handle, size, tracked)) {
          seen.add(tracked.fingerprint);
          tracked.aliases.add(path); // the same content under another name (copytruncate's copy)
          return true;
        }
        tracked.aliases.delete(path); // taken for a copy while it held only the shared first lines
      }
      const checkpoint =
        (await this.checkpointOf(fingerprint, dev, ino, path, inodes)) ??
        this.remembered(fingerprint, dev, ino);
      const role = this.roleOf(path);
      if (checkpoint?.duplicateOf !== undefined || role === undefined) {
        this.skipDuplicate(path, checkpoint, fingerprint, dev, ino, seen);
        return true;
      }
      const id = checkpoint?.fingerprint ?? this.newId(path, fingerprint, dev, ino);
      if (this.files.has(id)) {
        // Rewritten in place with the same first line while its old content still drains: the
        // new content gets its own id once the old one is let go.
        this.awaitingFirstLine.add(path);
        return true;
      }
      seen.add(id);
      let start = 0;
      let inflightEnds: number[] = [];
      let resume = { from: 0, held: [] as number[] };
      let outcome: unknown;
      if (checkpoint) {
        const intact =
          size >= checkpoint.position &&
          (await readMarker(handle, checkpoint.position)) === checkpoint.marker;
        if (!intact) {
          this.observer.truncation?.(path);
          this.logger.warn(
            { file: path },
            "file no longer holds what its checkpoint says was read; reading it again from the start",
          );
          if (!checkpoint.done)
            this.givenUp(
              { path, id: checkpoint.fingerprint },
              checkpoint.position,
              checkpoint.size,
              DataLostReason.TRUNCATED,
              "truncated or rewritten while the source was stopped",
            );
        } else if (checkpoint.done && size === checkpoint.position) {
          this.options.finished?.(checkpoint.outcome, role);
          return true; // finished earlier and unchanged
        } else {
          start = checkpoint.position;
          inflightEnds = Checkpointer.inflightEnds(checkpoint);
          resume = Checkpointer.resumePoint(checkpoint);
          outcome = checkpoint.outcome;
        }
      } else if (this.firstScan && this.fresh && this.options.from === "end") {
        start = size;
      }
      if (resume.held.length === 0) resume = { from: start, held: [] };
      const file = new TrackedFile(path, handle, ino, id, resume.from, Date.now(), (followed) =>
        this.options.downstream(
          followed,
          start,
          inflightEnds,
          {
            handingOver: () => this.writeAhead(followed),
            acknowledged: () => this.checkpoint(followed),
          },
          resume,
          outcome,
          role,
        ),
      );
      file.mtimeMs = mtimeMs;
      file.size = size;
      file.dev = dev;
      file.head = fingerprint;
      handle = undefined; // owned by the tracked file now
      this.files.set(id, file);
      this.fromLastRun.delete(id);
      this.logger.info(
        {
          file: path,
          fingerprint: id,
          from: start,
          size,
          ...(this.options.format === "auto" ? { format: role.diverted ? "diverted" : role.format } : {}),
        },
        role.diverted
          ? "following file for the csvlog/jsonlog records PostgreSQL diverted into it"
          : "following file",
      );
      if (!checkpoint || checkpoint.position !== start) this.checkpoint(file, start);
      return true;
    } finally {
      await handle?.close();
    }
  }

  /** Which of PostgreSQL's destination streams a file belongs to (with `format: auto`, by its name). */
  private destinationOf(path: string): string {
    return this.options.format === "auto" ? destinationName(basename(path)).extension : "";
  }

  /**
   * How a file is read; undefined for a jsonlog file beside a csvlog file of the same name (both
   * destinations on: the same entries, read once from the csvlog file).
   */
  private roleOf(path: string): FileRole | undefined {
    if (this.options.format !== "auto") return { format: this.options.format, diverted: false };
    return destinationRole(basename(path), this.listed);
  }

  /** A file whose entries another destination's file holds: not read; said once, and kept so across restarts. */
  private skipDuplicate(
    path: string,
    checkpoint: FileCheckpoint | undefined,
    head: string,
    dev: number,
    ino: number,
    seen: Set<string>,
  ): void {
    const id = checkpoint?.fingerprint ?? this.newId(path, head, dev, ino, false);
    const { stem } = destinationName(basename(path));
    const original = checkpoint?.duplicateOf ?? `${stem}.csv`;
    this.duplicates.set(inodeKey(dev, ino), id);
    seen.add(id);
    if (!checkpoint) {
      this.checkpoints.set({
        fingerprint: id,
        path,
        position: 0,
        marker: "",
        inflightEnd: null,
        done: true,
        duplicateOf: original,
        ...(id !== head ? { head } : {}),
        dev,
        ino,
      });
    }
    this.logger.info(
      { file: path, duplicateOf: original },
      "PostgreSQL writes this file's entries to the csvlog file of the same name too (both destinations on): shipping them from the csvlog file only",
    );
  }

  /**
   * Whether a file that starts with a followed file's first line is a copy of it (copytruncate):
   * the same bytes as far as both go, or the followed file is truncated already (its copy then
   * holds the rest). Otherwise it is another file that happens to start with the same line.
   */
  private async isCopyOf(handle: FileHandle, size: number, tracked: TrackedFile): Promise<boolean> {
    const now = await tracked.handle.stat();
    if (now.size < tracked.readPos || (await readFingerprint(tracked.handle)) !== tracked.head) return true;
    return samePrefix(handle, tracked.handle, Math.min(size, now.size));
  }

  /**
   * The checkpoint of a file not followed now. Its own (same first line, device and inode) if there
   * is one; otherwise one with the same first line whose file is no longer in the directory with
   * that line (moved, or copied by copytruncate while stopped), or that recorded no inode (older
   * state). The marker check that follows tells whether the content still is what was read.
   */
  private async checkpointOf(
    head: string,
    dev: number,
    ino: number,
    path: string,
    inodes: Map<string, string>,
  ): Promise<FileCheckpoint | undefined> {
    // The common case without a list walk (every finished file in the directory comes here at every scan).
    const byHead = this.checkpoints.get(head);
    if (byHead && !this.files.has(head) && byHead.ino === ino && byHead.dev === dev) return byHead;
    const candidates = this.checkpoints
      .entries()
      .filter((c) => (c.head ?? c.fingerprint) === head && !this.files.has(c.fingerprint));
    const own = candidates.find((c) => c.ino === ino && c.dev === dev);
    if (own) return own;
    for (const c of candidates) {
      if (c.ino === undefined || c.dev === undefined) return c;
      const holder = [...inodes].find(([, key]) => key === inodeKey(c.dev!, c.ino!))?.[0];
      if (holder === undefined || holder === path) return c;
      const handle = await open(holder, "r").catch(() => undefined);
      if (!handle) continue;
      try {
        if ((await readFingerprint(handle).catch(() => undefined)) !== head) return c;
      } finally {
        await handle.close();
      }
    }
    return undefined;
  }

  /**
   * The checkpoint dropped when a file of this first line, device and inode left the directory:
   * it is back, and its checkpoint with it (the marker check that follows tells whether it still
   * holds what was read). Undefined if there is none, or its id is in use again.
   */
  private remembered(head: string, dev: number, ino: number): FileCheckpoint | undefined {
    const key = inodeKey(dev, ino);
    const entry = this.forgotten.get(key);
    if (!entry || (entry.head ?? entry.fingerprint) !== head) return undefined;
    this.forgotten.delete(key);
    if (this.files.has(entry.fingerprint) || this.checkpoints.get(entry.fingerprint)) return undefined;
    const { modified: _, ...rest } = entry;
    this.checkpoints.set(rest);
    this.logger.info(
      { file: entry.path, position: entry.position },
      "file back in the directory; its checkpoint is taken up again",
    );
    return this.checkpoints.get(entry.fingerprint);
  }

  /** The identity of a file seen for the first time: its first line's hash, unless that is taken. */
  private newId(path: string, head: string, dev: number, ino: number, warn = true): string {
    const taken = this.files.has(head) || this.checkpoints.get(head) !== undefined;
    if (!taken) return head;
    const id = collisionId(head, dev, ino);
    if (warn)
      this.logger.warn(
        { file: path, fingerprint: head, id },
        "file starts with the same line as another log file (a short log_line_prefix?); told apart by its inode",
      );
    return id;
  }

  /**
   * The file is shorter than what was read: truncated (copytruncate, truncate-on-rotation). If a
   * copy of the old content exists, finish reading from the copy; the path is then a new file.
   */
  private async truncated(file: TrackedFile): Promise<void> {
    this.observer.truncation?.(file.path);
    for (const alias of file.aliases) {
      const handle = await open(alias, "r").catch(() => undefined);
      if (!handle) continue;
      if ((await readFingerprint(handle)) === file.head && (await handle.stat()).size >= file.readPos) {
        this.logger.warn(
          { file: file.path, copy: alias },
          "file truncated; reading the rest of its old content from its copy",
        );
        await file.handle.close();
        file.handle = handle;
        const copy = await handle.stat();
        file.ino = copy.ino;
        file.dev = copy.dev;
        file.path = alias;
        file.aliases.delete(alias);
        return;
      }
      await handle.close();
    }
    this.givenUp(
      { path: file.path, id: file.fingerprint },
      file.readPos,
      file.size,
      DataLostReason.TRUNCATED,
      "truncated or rewritten in place before it was read to the end",
    );
    file.gone = true;
    file.rewritten = true;
    file.finish(Date.now());
    this.awaitingFirstLine.add(file.path);
  }

  /** A file's batches are about to go to the sink: every in-flight end is saved first (write-ahead). */
  private async writeAhead(file: TrackedFile): Promise<void> {
    this.checkpoint(file);
    await this.saveCheckpoints();
  }

  /** Notes a file's checkpoint (acknowledged position and in-flight ends), saved by the next save. */
  private checkpoint(file: TrackedFile, position = file.acked): void {
    // The marker is read when the checkpoints are saved (it needs a read of the file).
    // A replay's boundaries not reached yet stay recorded: a second crash must cut the same ranges.
    // Ready batches' ends too: a replay cut where they were cut is cut the same way.
    const inflightEnds = file.downstream.pendingEnds();
    // Records the parser still holds (or gave out into batches not yet acknowledged) that begin
    // before `position`: the next start reads from the oldest of them again.
    const resume = file.downstream.resumePoint(position);
    const outcome = file.downstream.outcomeState?.(position);
    this.pendingMarkers.set(file.fingerprint, {
      file,
      position,
      inflightEnds,
      resume,
      done: file.settled,
      outcome,
    });
  }

  private readonly pendingMarkers = new Map<
    string,
    {
      file: TrackedFile;
      position: number;
      inflightEnds: number[];
      resume: { from: number; held: number[] };
      done: boolean;
      outcome: unknown;
    }
  >();

  private async saveCheckpoints(): Promise<void> {
    // A finished file's outcome state is kept for the next file's lane to take over after a
    // restart; once a file being read has a state of its own saved, none is needed (and many
    // rotated files would each keep one, in a checkpoint file written every second).
    let ownState = false;
    for (const p of this.pendingMarkers.values()) if (!p.done && p.outcome !== undefined) ownState = true;
    if (ownState)
      for (const entry of this.checkpoints.entries())
        if (entry.done && entry.outcome !== undefined) {
          const { outcome: _, modified: __, ...rest } = entry;
          this.checkpoints.set(rest);
        }
    for (const [fingerprint, p] of this.pendingMarkers) {
      // A lane that has not started yet keeps the state its checkpoint has for the same position.
      const prev = this.checkpoints.get(fingerprint);
      const outcome = p.outcome ?? (prev?.position === p.position ? prev.outcome : undefined);
      this.checkpoints.set({
        fingerprint,
        path: p.file.path,
        position: p.position,
        marker: await readMarker(p.file.handle, p.position),
        inflightEnd: p.inflightEnds.at(-1) ?? null,
        inflightEnds: p.inflightEnds,
        ...(p.resume.held.length > 0 ? { resume: p.resume.from, held: p.resume.held } : {}),
        done: p.done,
        size: p.file.size,
        ...identity(p.file),
        ...(outcome === undefined ? {} : { outcome }),
      });
    }
    this.pendingMarkers.clear();
    this.lastSave = Date.now();
    if (await this.save()) this.observer.checkpointSaved?.();
  }

  /** A file read to its end and acknowledged: close it, keep its checkpoint (done) until it is gone. */
  private async release(file: TrackedFile): Promise<void> {
    this.pendingMarkers.delete(file.fingerprint); // superseded by the final checkpoint below
    const outcome = file.downstream.outcomeState?.(file.acked);
    // The files read after it carry the outcome state on: saved with this release, so a restart
    // never finds this file done without its state and theirs unsaved.
    for (const other of this.files.values())
      if (other !== file && other.readPos > other.startPos) this.checkpoint(other);
    this.checkpoints.set({
      fingerprint: file.fingerprint,
      path: file.path,
      position: file.acked,
      marker: await readMarker(file.handle, file.acked),
      inflightEnd: null,
      inflightEnds: [],
      done: true,
      size: file.size,
      ...identity(file),
      ...(outcome === undefined ? {} : { outcome }),
    });
    this.files.delete(file.fingerprint);
    await file.handle.close();
    this.observer.fileGone?.(file.path);
    this.logger.info({ file: file.path, position: file.acked }, "file finished");
  }

  /**
   * Checkpoints of files no longer in the directory are dropped (called only after a listing in
   * which every matching file was identified). One not finished is a file deleted, or truncated
   * or replaced, while the source was stopped or before it was opened: what it held past the
   * checkpoint is given up, and said so.
   */
  private pruneCheckpoints(seen: Set<string>, inodes: Map<string, string>): void {
    for (const entry of this.checkpoints.entries()) {
      if (seen.has(entry.fingerprint) || this.files.has(entry.fingerprint)) continue;
      // The name still there holds other content: truncated or replaced, then written anew.
      const replaced = inodes.has(entry.path);
      if (!entry.done && replaced) this.observer.truncation?.(entry.path);
      if (!entry.done)
        this.givenUp(
          { path: entry.path, id: entry.fingerprint },
          entry.position,
          entry.size,
          replaced ? DataLostReason.TRUNCATED : DataLostReason.DELETED,
          replaced
            ? "truncated or replaced before it was read to the end"
            : "gone before it was read to the end",
          // A file of the last run's, gone before this run opened it: what PostgreSQL wrote to it
          // while the source was stopped is unknown, a gap of unknown length.
          this.fromLastRun.has(entry.fingerprint),
        );
      this.checkpoints.delete(entry.fingerprint);
      this.fromLastRun.delete(entry.fingerprint);
      if (entry.dev !== undefined && entry.ino !== undefined) this.forget(entry);
    }
  }

  /** Keeps a dropped checkpoint in memory (see FORGOTTEN_MAX), the oldest let go first. */
  private forget(entry: FileCheckpoint): void {
    const key = inodeKey(entry.dev!, entry.ino!);
    this.forgotten.delete(key);
    this.forgotten.set(key, entry);
    if (this.forgotten.size > FORGOTTEN_MAX) this.forgotten.delete(this.forgotten.keys().next().value!);
  }

  /**
   * Bytes of a file that will never be read: from `from` to at least `knownEnd` (the size last
   * seen; what was appended after that, or written and replaced between two looks, is unknown).
   * Reported to the observer and logged at warn with the range, its reason and the file's id (the
   * source id of its object keys); a range known to be empty is logged at info only, unless the
   * file went while the source was stopped (`whileStopped`): then what followed is unknown.
   */
  private givenUp(
    file: { path: string; id: string },
    from: number,
    knownEnd: number | undefined,
    reason: DataLostReason,
    why: string,
    whileStopped = false,
  ): void {
    const to = Math.max(from, knownEnd ?? from);
    const fields = { file: file.path, sourceId: file.id, from, to, bytes: to - from, reason };
    if (to === from && whileStopped) {
      // Read to its last seen end, but not finished: what came after, while stopped, is unknown.
      this.observer.dataLost?.(file.path, from, to, reason);
      this.logger.warn(
        fields,
        `file ${why} while the source was stopped: what was written after byte ${from} (after the last look) is unknown and given up`,
      );
      return;
    }
    if (to === from) {
      this.logger.info(
        fields,
        `file ${why}: nothing unread was seen (what was written after the last read is unknown)`,
      );
      return;
    }
    this.observer.dataLost?.(file.path, from, to, reason);
    this.logger.warn(
      fields,
      `file ${why}: unread data from byte ${from} on is given up (at least ${to - from} bytes; what was written after the last look is unknown)`,
    );
  }

  private async shutdown(): Promise<void> {
    const now = Date.now();
    try {
      for (const file of this.files.values()) {
        file.quiet(now + 1_000_000, 0); // release held records and close every open batch
        file.closeForStop(now);
        await file.downstream.deliver(true);
      }
      await this.saveCheckpoints();
    } catch (error) {
      if (!isFileSystemError(error)) throw error;
      // Batches whose ends could not be recorded were not handed to the sink; acknowledged ones
      // not recorded are read again at the next start and rewrite the same objects.
      this.logger.error(
        { dir: this.options.stateDir, code: this.saveFailure },
        "stopping without saving checkpoints (the state directory refuses writes): the next start reads again from the last saved ones",
      );
    } finally {
      for (const file of this.files.values()) await file.handle.close();
      this.files.clear();
    }
  }

  /** Saves the checkpoints (retrying while the file system refuses; see Checkpointer.load); true when it wrote. */
  private async save(): Promise<boolean> {
    const wrote = await this.checkpoints.save();
    if (this.saveFailure !== undefined) {
      this.logger.info(
        { dir: this.options.stateDir, was: this.saveFailure },
        "checkpoints saved again; reading on",
      );
      this.saveFailure = undefined;
      this.observer.checkpointSaveFailed?.(this.options.stateDir, undefined);
    }
    return wrote;
  }
}

function inodeKey(dev: number, ino: number): string {
  return `${dev}:${ino}`;
}

/** What a checkpoint records of a file's identity besides its key. */
function identity(file: TrackedFile): Pick<FileCheckpoint, "head" | "dev" | "ino"> {
  return { ...(file.head !== file.fingerprint ? { head: file.head } : {}), dev: file.dev, ino: file.ino };
}

function errnoCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : describe(error);
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
