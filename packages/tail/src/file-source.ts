import { type FSWatcher, watch } from "node:fs";
import { type FileHandle, open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import type { RedactionMode, Sink } from "@auditpipe/ship";
import { readFingerprint, readMarker } from "./_file-identity.ts";
import {
  type BatchLimits,
  type InFlightBatch,
  READ_BYTES,
  type SourceObserver,
  TrackedFile,
} from "./_tracked-file.ts";
import { Checkpointer } from "./checkpoint.ts";

export type { BatchLimits, SourceObserver } from "./_tracked-file.ts";

/** The small logger interface FileSource needs (pino fits). Messages never carry record text. */
export interface SourceLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface FileSourceOptions {
  /** PostgreSQL's log_directory. */
  logDir: string;
  /** The format of the files followed (one log stream). */
  format: LogFormat;
  /** Which file names belong to the stream; default by format (`*.csv`, `*.json`, `*.log`). */
  pattern?: string;
  /** log_line_prefix, for stderr and syslog files. */
  prefix?: string;
  /** Where checkpoints are kept. */
  stateDir: string;
  sink: Sink;
  /**
   * Redactions applied to each record before it is encoded for the sink (`--redact`); absent or
   * all false: none. The observer (metering) sees the original records.
   */
  redact?: RedactionMode;
  /** Where to start in a file seen for the first time at start-up; default `beginning`. */
  from?: "beginning" | "end";
  /** How often the directory and files are checked when no fs event arrives; default 200 ms. */
  pollIntervalMs?: number;
  /** A file that has not grown for this long is quiet: held records are released; default 50 ms. */
  quietMs?: number;
  batch?: Partial<BatchLimits>;
  observer?: SourceObserver;
  logger?: SourceLogger;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxEntries: 10_000, maxBytes: 8 << 20, maxAgeMs: 1_000 };
/** Default file name pattern per format: what PostgreSQL's log_filename gives each destination. */
export const DEFAULT_PATTERNS: Record<LogFormat, string> = {
  csvlog: "*.csv",
  jsonlog: "*.json",
  stderr: "*.log",
  syslog: "*.log",
};
/** Sink retries back off exponentially up to this, with jitter. */
const MAX_RETRY_DELAY_MS = 30_000;
/** stop() gives up waiting for the sink after this long; what is unacknowledged is re-read next start. */
const STOP_DEADLINE_MS = 8_000;
/**
 * Batches handed to the sink and not yet acknowledged, over all files. Reading and parsing go on
 * while fewer are out, so the next batch is parsed while the previous ones are encoded, gzipped
 * and written; memory stays bounded (this many batches, plus the open one and one read's worth).
 */
export const MAX_IN_FLIGHT_BATCHES = 3;
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
const STEADY_BYTES = 64 << 10;
const STEADY_COALESCE_MS = 100;

const silentLogger: SourceLogger = { info() {}, warn() {}, error() {} };

/** A shell-style glob on a file name (`*`, `?`, `[...]`, `{a,b}`) as a RegExp. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "{") {
      const close = glob.indexOf("}", i);
      if (close < 0) re += "\\{";
      else {
        re += `(?:${glob
          .slice(i + 1, close)
          .split(",")
          .map((part) => part.replace(/[.+^$()|\\[\]]/g, "\\$&").replaceAll("*", "[^/]*"))
          .join("|")})`;
        i = close;
      }
    } else if (c === "[") {
      const close = glob.indexOf("]", i);
      if (close < 0) re += "\\[";
      else {
        re += `[${glob.slice(i + 1, close).replace(/^!/, "^")}]`;
        i = close;
      }
    } else re += c.replace(/[.+^$()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/**
 * Follows one PostgreSQL log stream in a directory: every matching file, through rotation by
 * age, size or pg_rotate_logfile(), copytruncate and truncate-on-rotation, reading each audit
 * entry once and handing batches to the sink. A file's checkpoint advances only over ranges the
 * sink acknowledged; a rotated file is drained to its end before it is let go, and a deleted one
 * through its open handle.
 */
export class FileSource {
  private readonly files = new Map<string, TrackedFile>(); // by fingerprint
  private readonly limits: BatchLimits;
  private readonly pattern: RegExp;
  private readonly observer: SourceObserver;
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
  private stopDeadline = Number.POSITIVE_INFINITY;
  /** Sink writes under way, over all files. */
  private readonly writes = new Set<Promise<void>>();
  private lastSave = 0;

  constructor(private readonly options: FileSourceOptions) {
    this.limits = { ...DEFAULT_BATCH_LIMITS, ...options.batch };
    this.pattern = globToRegExp(options.pattern ?? DEFAULT_PATTERNS[options.format]);
    this.observer = options.observer ?? {};
    this.logger = options.logger ?? silentLogger;
  }

  async start(): Promise<void> {
    const info = await stat(this.options.logDir).catch(() => undefined);
    if (!info?.isDirectory())
      throw new Error(`log directory ${this.options.logDir} does not exist or is not a directory`);
    this.checkpoints = await Checkpointer.load(this.options.stateDir, {
      onRetry: ({ attempt, code, delayMs }) =>
        this.logger.warn(
          { dir: this.options.stateDir, code, attempt, delayMs: Math.round(delayMs) },
          "cannot open the checkpoint file (out of file descriptors); retrying",
        ),
    });
    for (const warning of this.checkpoints.warnings)
      this.logger.warn({ stateDir: this.options.stateDir }, warning);
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

  /** Stops reading, writes what was read, waits (bounded) for the sink's acks, saves checkpoints. */
  async stop(): Promise<void> {
    if (this.stopping) return this.loop;
    this.stopping = true;
    this.stopDeadline = Date.now() + STOP_DEADLINE_MS;
    this.unwatch();
    this.wake?.();
    await this.loop;
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

  private async run(): Promise<void> {
    try {
      while (!this.stopping) {
        // Listing the directory and re-hashing first lines on every pass cost PostgreSQL's CPU
        // under load: scan when a file came or went, and otherwise once per poll interval.
        const poll = this.options.pollIntervalMs ?? 200;
        if (this.dirChanged || this.watchUnavailable || Date.now() - this.lastScan >= poll) {
          this.dirChanged = false;
          await this.scan();
          this.lastScan = Date.now();
        }
        let progressed = false;
        let bytesRead = 0;
        const now = Date.now();
        const ordered = [...this.files.values()].sort((a, b) => a.mtimeMs - b.mtimeMs);
        const newest = ordered.filter((f) => !f.gone).at(-1);
        for (const file of ordered) {
          if (this.stopping) break;
          const read = await file.read(now);
          if (read > 0) {
            progressed = true;
            bytesRead += read;
          } else {
            file.quiet(Date.now(), this.options.quietMs ?? 50);
            // Rotated away (a newer file exists) or deleted, read to the end and quiet: let it go.
            if (
              (file.gone || file !== newest) &&
              Date.now() - file.lastGrowth >= (this.options.quietMs ?? 50)
            ) {
              if (await this.confirmedEnd(file)) file.finish(Date.now());
            }
          }
          await this.deliver(file);
          this.observer.bytesBehind?.(file.path, Math.max(0, file.size - file.acked));
          if (file.settled) await this.release(file);
        }
        if (!progressed || Date.now() - this.lastSave >= ACK_CHECKPOINT_INTERVAL_MS)
          await this.saveCheckpoints();
        if (!progressed && !this.stopping) {
          // A watch opened just now misses what was appended since the last read: look once more first.
          if (!this.watch()) await this.idle();
        } else if (bytesRead < READ_BYTES && !this.stopping) {
          this.unwatch();
          const wait = bytesRead >= STEADY_BYTES ? STEADY_COALESCE_MS : COALESCE_MS;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
      await this.shutdown();
    } catch (error) {
      this.logger.error({ err: error }, "file source stopped on an unexpected error");
      throw error;
    }
  }

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
    const names = (await readdir(dir).catch(() => [] as string[]))
      .filter((n) => this.pattern.test(n) && !n.endsWith(".gz"))
      .sort();
    const seen = new Set<string>();
    const inodes = new Map<string, number>();
    for (const name of names) {
      const path = join(dir, name);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) continue;
      inodes.set(path, info.ino);
    }
    // Paths whose inode a tracked file holds need no look: the file is known.
    const trackedInodes = new Map<number, TrackedFile>();
    for (const file of this.files.values()) if (!file.gone) trackedInodes.set(file.ino, file);
    for (const [path, ino] of inodes) {
      const known = trackedInodes.get(ino);
      if (known) {
        seen.add(known.fingerprint);
        if (known.path !== path && !inodes.has(known.path)) known.path = path; // renamed
        continue;
      }
      await this.discover(path, seen);
    }
    for (const file of this.files.values()) {
      if (file.gone) continue;
      if (inodes.get(file.path) !== file.ino) {
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
      if (size < file.readPos || (!file.gone && (await readFingerprint(file.handle)) !== file.fingerprint)) {
        await this.truncated(file);
      }
    }
    this.pruneCheckpoints(seen);
    this.firstScan = false;
  }

  /** A path no tracked file holds: a new log file, a copy of a known one, or a finished one. */
  private async discover(path: string, seen: Set<string>): Promise<void> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(path, "r");
      const fingerprint = await readFingerprint(handle);
      if (fingerprint === undefined) return; // first line not written yet: next scan
      seen.add(fingerprint);
      const tracked = this.files.get(fingerprint);
      if (tracked) {
        tracked.aliases.add(path); // the same content under another name (copytruncate's copy)
        return;
      }
      const { size, ino, mtimeMs } = await handle.stat();
      const checkpoint = this.checkpoints.get(fingerprint);
      let start = 0;
      let inflightEnds: number[] = [];
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
        } else if (checkpoint.done && size === checkpoint.position) {
          return; // finished earlier and unchanged
        } else {
          start = checkpoint.position;
          inflightEnds = Checkpointer.inflightEnds(checkpoint);
        }
      } else if (this.firstScan && this.options.from === "end") {
        start = size;
      }
      const now = Date.now();
      const file = new TrackedFile(
        path,
        handle,
        ino,
        fingerprint,
        this.options.format,
        this.options.prefix,
        start,
        inflightEnds,
        this.limits,
        this.observer,
        now,
        this.options.redact?.literals || this.options.redact?.parameters ? this.options.redact : undefined,
      );
      file.mtimeMs = mtimeMs;
      file.size = size;
      handle = undefined; // owned by the tracked file now
      this.files.set(fingerprint, file);
      this.logger.info({ file: path, fingerprint, from: start, size }, "following file");
      if (!checkpoint || checkpoint.position !== start) this.checkpoint(file, start);
    } finally {
      await handle?.close();
    }
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
      if (
        (await readFingerprint(handle)) === file.fingerprint &&
        (await handle.stat()).size >= file.readPos
      ) {
        this.logger.warn(
          { file: file.path, copy: alias },
          "file truncated; reading the rest of its old content from its copy",
        );
        await file.handle.close();
        file.handle = handle;
        file.ino = (await handle.stat()).ino;
        file.path = alias;
        file.aliases.delete(alias);
        return;
      }
      await handle.close();
    }
    this.logger.warn(
      { file: file.path, lostAfter: file.readPos },
      "file truncated before it was read to the end; what was written after the last read is lost",
    );
    file.gone = true;
    file.finish(Date.now());
  }

  /**
   * Hands a file's ready batches to the sink while fewer than MAX_IN_FLIGHT_BATCHES are out, and
   * takes acknowledgements from the front of its in-flight queue: the checkpoint advances only over
   * a contiguous acknowledged prefix, whatever order the writes finish in. Returns when the file
   * may be read on (nothing ready is left waiting), or with `drain`, when nothing is in flight.
   */
  private async deliver(file: TrackedFile, drain = false): Promise<void> {
    for (;;) {
      this.collectAcks(file);
      const pastDeadline = this.stopping && Date.now() > this.stopDeadline;
      if (file.ready.length > 0 && this.writes.size < MAX_IN_FLIGHT_BATCHES && !pastDeadline) {
        await this.dispatch(file);
        continue;
      }
      const mine = file.inflight.filter((f) => f.state === "writing");
      if (!drain && (file.ready.length === 0 || pastDeadline)) return;
      if (drain && mine.length === 0 && (file.ready.length === 0 || pastDeadline)) return;
      // Backpressure (a batch is ready and the sink has enough) or draining: wait for a write.
      const waitFor = drain && mine.length > 0 ? mine.map((f) => f.written) : [...this.writes];
      if (waitFor.length === 0) return;
      await Promise.race(waitFor);
    }
  }

  /** Acknowledged batches at the front of the queue: the file's acknowledged position moves past them. */
  private collectAcks(file: TrackedFile): void {
    let moved = false;
    while (file.inflight[0]?.state === "acked") {
      file.acked = file.inflight.shift()!.batch.range.end;
      moved = true;
    }
    if (moved) this.checkpoint(file);
  }

  /** Hands ready batches to the sink after a durable write-ahead record of every in-flight end. */
  private async dispatch(file: TrackedFile): Promise<void> {
    const batches = file.ready.splice(0, MAX_IN_FLIGHT_BATCHES - this.writes.size);
    const started = batches.map(
      (batch): InFlightBatch => ({ batch, state: "writing", written: Promise.resolve() }),
    );
    file.inflight.push(...started);
    // Write ahead every in-flight batch's end, so a replay after a crash cuts the same ranges.
    this.checkpoint(file);
    await this.saveCheckpoints();
    for (const f of started) {
      const written = this.write(file, f);
      f.written = written;
      this.writes.add(written);
      void written.finally(() => {
        this.writes.delete(written);
        this.wake?.();
      });
    }
  }

  /** Writes one batch, retrying with backoff until acknowledged (or, stopping, past the deadline). */
  private async write(file: TrackedFile, f: InFlightBatch): Promise<void> {
    const sink = this.options.sink;
    const batch = f.batch;
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      try {
        await sink.write(batch);
        f.state = "acked";
        file.recycle(batch);
        this.observer.sinkAck?.(sink.name, batch.entries, batch.bytes, Date.now() - started);
        return;
      } catch (error) {
        this.observer.sinkError?.(sink.name, error);
        this.logger.error(
          {
            sink: sink.name,
            file: file.path,
            range: [batch.range.start, batch.range.end],
            attempt,
            err: describe(error),
          },
          "sink write failed; retrying",
        );
        const delay =
          Math.min(MAX_RETRY_DELAY_MS, 100 * 2 ** Math.min(attempt, 12)) * (0.5 + Math.random() / 2);
        const until = Date.now() + delay;
        // Sleep in short steps, so a stop() during a long backoff is seen within half a second.
        while (Date.now() < until && !(this.stopping && Date.now() >= until - delay + 500))
          await new Promise((resolve) => setTimeout(resolve, Math.min(100, until - Date.now())));
        if (this.stopping && Date.now() > this.stopDeadline) {
          f.state = "abandoned"; // not acknowledged: re-read from the checkpoint next start
          return;
        }
      }
    }
  }

  /** Notes a file's checkpoint (acknowledged position and in-flight ends), saved by the next save. */
  private checkpoint(file: TrackedFile, position = file.acked): void {
    // The marker is read when the checkpoints are saved (it needs a read of the file).
    // A replay's boundaries not reached yet stay recorded: a second crash must cut the same ranges.
    // Ready batches' ends too: a replay cut where they were cut is cut the same way.
    const inflightEnds = [
      ...file.inflight.map((f) => f.batch.range.end),
      ...file.ready.map((b) => b.range.end),
      ...file.replayEnds,
    ];
    this.pendingMarkers.set(file.fingerprint, { file, position, inflightEnds, done: file.settled });
  }

  private readonly pendingMarkers = new Map<
    string,
    { file: TrackedFile; position: number; inflightEnds: number[]; done: boolean }
  >();

  private async saveCheckpoints(): Promise<void> {
    for (const [fingerprint, p] of this.pendingMarkers) {
      this.checkpoints.set({
        fingerprint,
        path: p.file.path,
        position: p.position,
        marker: await readMarker(p.file.handle, p.position),
        inflightEnd: p.inflightEnds.at(-1) ?? null,
        inflightEnds: p.inflightEnds,
        done: p.done,
      });
    }
    this.pendingMarkers.clear();
    this.lastSave = Date.now();
    if (await this.checkpoints.save()) this.observer.checkpointSaved?.();
  }

  /** A file read to its end and acknowledged: close it, keep its checkpoint (done) until it is gone. */
  private async release(file: TrackedFile): Promise<void> {
    this.pendingMarkers.delete(file.fingerprint); // superseded by the final checkpoint below
    this.checkpoints.set({
      fingerprint: file.fingerprint,
      path: file.path,
      position: file.acked,
      marker: await readMarker(file.handle, file.acked),
      inflightEnd: null,
      inflightEnds: [],
      done: true,
    });
    this.files.delete(file.fingerprint);
    await file.handle.close();
    this.observer.fileGone?.(file.path);
    this.logger.info({ file: file.path, position: file.acked }, "file finished");
  }

  /** Checkpoints of files that are finished and no longer in the directory are dropped. */
  private pruneCheckpoints(seen: Set<string>): void {
    for (const entry of this.checkpoints.entries()) {
      if (entry.done && !seen.has(entry.fingerprint) && !this.files.has(entry.fingerprint)) {
        this.checkpoints.delete(entry.fingerprint);
      }
    }
  }

  private async shutdown(): Promise<void> {
    const now = Date.now();
    for (const file of this.files.values()) {
      file.quiet(now + 1_000_000, 0); // release held records and close every open batch
      file.closeForStop(now);
      await this.deliver(file, true);
    }
    await this.saveCheckpoints();
    for (const file of this.files.values()) await file.handle.close();
    this.files.clear();
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
