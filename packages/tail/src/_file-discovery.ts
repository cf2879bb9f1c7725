/**
 * Discovery, for the file follower: lists the log directory and tells its files apart — a new
 * file, the one followed under a new name (rotation by rename), a copy of one (copytruncate), a
 * file rewritten in place, one that left and came back (by device and inode, with the checkpoint
 * it had, remembered after it was pruned), a duplicate of another destination's file — and prunes
 * the checkpoints of files gone. It reads no record: a file found is handed to the follower
 * (FileFollower, file-follower.ts), which reads it and keeps its checkpoint.
 */
import type { FileHandle } from "node:fs/promises";
import { lstat, open, readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import { Checkpointer, type FileCheckpoint } from "./_checkpoint.ts";
import { destinationName, destinationRole, type FileRole } from "./_destinations.ts";
import { collisionId, readFingerprint, readMarker, samePrefix } from "./_file-identity.ts";
import { type Downstream, TrackedFile } from "./_tracked-file.ts";
import {
  DataLostReason,
  FileSourceErrorCode,
  type FileSourceHealth,
  type FollowObserver,
  givenUp,
  type SourceLogger,
} from "./follow-reports.ts";

/**
 * Checkpoints dropped because their file left the directory are remembered (by device and inode)
 * this many at most: a file that comes back (a remount, an NFS hiccup, a directory moved away and
 * back) resumes where it was read instead of being read again from 0. A few hundred bytes each.
 */
const FORGOTTEN_MAX = 4096;

/** The follower's options discovery reads (FileFollowerOptions has them all). */
export interface DiscoveryOptions {
  logDir: string;
  format: LogFormat | "auto";
  from?: "beginning" | "end";
  finished?: (outcome: unknown, role: FileRole) => void;
  onListed?: () => void | Promise<void>;
}

/** What discovery asks of the follower. */
export interface Follower {
  /** The downstream (lane) of a file found, reading from `start`. */
  open(
    file: TrackedFile,
    start: number,
    inflightEnds: number[],
    resume: { from: number; held: number[] },
    outcome: unknown,
    role: FileRole,
  ): Downstream;
  /** Notes a file's checkpoint at `position`, saved with the next save. */
  checkpoint(file: TrackedFile, position: number): void;
  /** The file was truncated or rewritten in place: finish its old content (from a copy if there is one). */
  truncated(file: TrackedFile): Promise<void>;
}

/** Lists the log directory and tells its files apart (see the file's header). */
export class FileDiscovery {
  /** Why the last listing of the directory failed (errno code); undefined while listings work. */
  private listingError: string | undefined;
  /** Matching paths that could not be opened or read, with the errno code: retried every scan. */
  private readonly unreadable = new Map<string, string>();
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
  private firstScan = true;
  /** No state existed at start: the very first start, where `from: end` applies. */
  private readonly fresh: boolean;
  /** Checkpoints of the last run whose file this run has not opened: gone, they went while stopped. */
  private readonly fromLastRun = new Set<string>();
  private readonly reporter: { observer: FollowObserver; logger: SourceLogger };
  private readonly options: DiscoveryOptions;
  private readonly matches: (name: string) => boolean;
  /** The files followed now, by identity (TrackedFile.fingerprint): the follower's, shared. */
  private readonly files: Map<string, TrackedFile>;
  private readonly checkpoints: Checkpointer;
  private readonly follower: Follower;
  private readonly observer: FollowObserver;
  private readonly logger: SourceLogger;

  constructor(
    options: DiscoveryOptions,
    matches: (name: string) => boolean,
    files: Map<string, TrackedFile>,
    checkpoints: Checkpointer,
    follower: Follower,
    observer: FollowObserver,
    logger: SourceLogger,
  ) {
    this.options = options;
    this.matches = matches;
    this.files = files;
    this.checkpoints = checkpoints;
    this.follower = follower;
    this.observer = observer;
    this.logger = logger;
    this.reporter = { observer, logger };
    this.fresh = checkpoints.fresh;
    for (const entry of checkpoints.entries()) this.fromLastRun.add(entry.fingerprint);
  }

  /** Whether a path waits for its first line (or was truncated in place): scanned on every pass. */
  get awaiting(): boolean {
    return this.awaitingFirstLine.size > 0;
  }

  /** A path truncated or rewritten in place: looked at on every pass until its new content is followed. */
  awaitFirstLine(path: string): void {
    this.awaitingFirstLine.add(path);
  }

  /** The directory's and the files' part of FileSourceHealth. */
  health(): Omit<FileSourceHealth, "checkpoints"> {
    return {
      ...(this.listingError ? { listing: this.listingError } : {}),
      unreadable: [...this.unreadable].map(([path, code]) => ({ path, code })),
    };
  }

  /** Lists the directory: new files are opened and tracked; vanished or replaced ones marked gone. */
  async scan(): Promise<void> {
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
        await this.follower.truncated(file);
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
      const from = await this.startOf(path, handle, size, checkpoint, role);
      if (!from) return true; // finished earlier and unchanged
      const { start, inflightEnds, resume, outcome } = from;
      const file = new TrackedFile(path, handle, ino, id, resume.from, Date.now(), (followed) =>
        this.follower.open(followed, start, inflightEnds, resume, outcome, role),
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
      if (!checkpoint || checkpoint.position !== start) this.follower.checkpoint(file, start);
      return true;
    } finally {
      await handle?.close();
    }
  }

  /**
   * Where a file found is read from. With a checkpoint whose marker the file still holds: where it
   * was acknowledged, with the replay's batch ends, the records held and the outcome state kept
   * there; undefined if it was finished then and has not grown. A checkpoint the file no longer
   * matches is reported (truncated while stopped) and the file read from 0. Without one: 0, or
   * the file's end on the very first start with `from: end`.
   */
  private async startOf(
    path: string,
    handle: FileHandle,
    size: number,
    checkpoint: FileCheckpoint | undefined,
    role: FileRole,
  ): Promise<
    | { start: number; inflightEnds: number[]; resume: { from: number; held: number[] }; outcome: unknown }
    | undefined
  > {
    let start = 0;
    let inflightEnds: number[] = [];
    let resume = { from: 0, held: [] as number[] };
    let outcome: unknown;
    if (checkpoint) {
      const intact =
        size >= checkpoint.position && (await readMarker(handle, checkpoint.position)) === checkpoint.marker;
      if (!intact) {
        this.observer.truncation?.(path);
        this.logger.warn(
          { file: path },
          "file no longer holds what its checkpoint says was read; reading it again from the start",
        );
        if (!checkpoint.done)
          givenUp(
            this.reporter,
            { path, id: checkpoint.fingerprint },
            checkpoint.position,
            checkpoint.size,
            DataLostReason.TRUNCATED,
            "truncated or rewritten while the source was stopped",
          );
      } else if (checkpoint.done && size === checkpoint.position) {
        this.options.finished?.(checkpoint.outcome, role);
        return undefined;
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
    return { start, inflightEnds, resume, outcome };
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
        givenUp(
          this.reporter,
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
}

/** Which of PostgreSQL's destination streams a file belongs to (with `format: auto`, by its name). */
export function destinationOf(format: LogFormat | "auto", path: string): string {
  return format === "auto" ? destinationName(basename(path)).extension : "";
}

function inodeKey(dev: number, ino: number): string {
  return `${dev}:${ino}`;
}

function errnoCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : describe(error);
}

/** An error as one line: its name and message. */
export function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
