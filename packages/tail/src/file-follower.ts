import { type FSWatcher, watch } from "node:fs";
import { open, stat } from "node:fs/promises";
import type { LogFormat } from "@auditpipe/parse";
import { Checkpointer, type FileCheckpoint, isFileSystemError } from "./_checkpoint.ts";
import type { FileRole } from "./_destinations.ts";
import { describe, destinationOf, FileDiscovery } from "./_file-discovery.ts";
import { readFingerprint, readMarker } from "./_file-identity.ts";
import { type Downstream, READ_BYTES, REPLACED, type TrackedFile } from "./_tracked-file.ts";
import {
  DataLostReason,
  type FileSourceHealth,
  type FollowObserver,
  givenUp,
  type SourceLogger,
  silentLogger,
} from "./follow-reports.ts";
import { globMatcher } from "./glob.ts";

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
 * The source stage of the file pipeline: follows one PostgreSQL log stream in a directory, every
 * matching file, through rotation by age, size or pg_rotate_logfile(), copytruncate and
 * truncate-on-rotation, feeding each file's bytes once, in order, to its downstream. It knows no
 * record and no sink: a file's checkpoint advances only when its downstream says the sink
 * acknowledged a range; a rotated file is drained to its end before it is let go, and a deleted
 * one through its open handle. Which files there are, and which is which, FileDiscovery
 * (_file-discovery.ts) finds; this class reads them and keeps their checkpoints.
 */
export class FileFollower {
  private readonly files = new Map<string, TrackedFile>(); // by identity (TrackedFile.fingerprint)
  private readonly matches: (name: string) => boolean;
  /** Lists the directory and hands the files it finds to this follower; made once checkpoints are loaded. */
  private discovery!: FileDiscovery;
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
  private lastSave = 0;
  private readonly options: FileFollowerOptions;
  /** Aborted by stop(): a checkpoint save that fails then is not retried any more. */
  private readonly stopSignal = new AbortController();
  /** Why saving checkpoints fails now (errno code); undefined while saves work. */
  private saveFailure: string | undefined;

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
    // Before the first save: discovery takes whether this is the first start, and the last run's files.
    this.discovery = new FileDiscovery(
      this.options,
      this.matches,
      this.files,
      this.checkpoints,
      {
        open: (file, start, inflightEnds, resume, outcome, role) =>
          this.options.downstream(
            file,
            start,
            inflightEnds,
            {
              handingOver: () => this.writeAhead(file),
              acknowledged: () => this.checkpoint(file),
            },
            resume,
            outcome,
            role,
          ),
        checkpoint: (file, position) => this.checkpoint(file, position),
        truncated: (file) => this.truncated(file),
      },
      this.observer,
      this.logger,
    );
    // Record the first start at once: `from: end` applies to the files present now, never again.
    // Tried once: a state directory that refuses its first write ends the start with the reason.
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
      // Before start() nothing has been listed yet.
      ...(this.discovery?.health() ?? { unreadable: [] }),
    };
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopping) {
        // Listing the directory and re-hashing first lines on every pass cost PostgreSQL's CPU
        // under load: scan when a file came or went, and otherwise once per poll interval.
        const poll = this.options.pollIntervalMs ?? 200;
        if (
          this.dirChanged ||
          this.discovery.awaiting ||
          this.watchUnavailable ||
          Date.now() - this.lastScan >= poll
        ) {
          this.dirChanged = false;
          await this.discovery.scan();
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
        for (const f of byAge) if (!f.gone) newest.set(destinationOf(this.options.format, f.path), f);
        // Destinations with a file not read to its end in this pass: newer files of it wait, so
        // one file's lane fills at a time. Read side by side, a backlog of N files held N open
        // batches (and, with the sink down, N ready ones): ~6 MB each.
        const behind = new Set<string>();
        for (const file of ordered) {
          if (this.stopping) break;
          const group = destinationOf(this.options.format, file.path);
          if (behind.has(group) && !file.downstream.ended) {
            await file.downstream.deliver();
            continue;
          }
          // A newer file of the destination waits for the older ones to end, so its records reach
          // the outcome join in the order written.
          const older = byAge
            .slice(0, byAge.indexOf(file))
            .filter((f) => destinationOf(this.options.format, f.path) === group);
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
              (file.gone || file !== newest.get(destinationOf(this.options.format, file.path))) &&
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
    givenUp(
      { observer: this.observer, logger: this.logger },
      { path: file.path, id: file.fingerprint },
      file.readPos,
      file.size,
      DataLostReason.TRUNCATED,
      "truncated or rewritten in place before it was read to the end",
    );
    file.gone = true;
    file.rewritten = true;
    file.finish(Date.now());
    this.discovery.awaitFirstLine(file.path);
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

/** What a checkpoint records of a file's identity besides its key. */
function identity(file: TrackedFile): Pick<FileCheckpoint, "head" | "dev" | "ino"> {
  return { ...(file.head !== file.fingerprint ? { head: file.head } : {}), dev: file.dev, ino: file.ino };
}
