/**
 * What the file follower reports, and how: its logger and observer interfaces, why bytes were
 * given up, its error codes and health. One vocabulary for following and discovery alike.
 */

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

export const silentLogger: SourceLogger = { info() {}, warn() {}, error() {} };

/**
 * Bytes of a file that will never be read: from `from` to at least `knownEnd` (the size last
 * seen; what was appended after that, or written and replaced between two looks, is unknown).
 * Reported to the observer and logged at warn with the range, its reason and the file's id (the
 * source id of its object keys); a range known to be empty is logged at info only, unless the
 * file went while the source was stopped (`whileStopped`): then what followed is unknown.
 */
export function givenUp(
  reporter: { observer: FollowObserver; logger: SourceLogger },
  file: { path: string; id: string },
  from: number,
  knownEnd: number | undefined,
  reason: DataLostReason,
  why: string,
  whileStopped = false,
): void {
  const end = Math.max(from, knownEnd ?? from);
  const fields = { file: file.path, sourceId: file.id, from, to: end, bytes: end - from, reason };
  if (end === from && whileStopped) {
    // Read to its last seen end, but not finished: what came after, while stopped, is unknown.
    reporter.observer.dataLost?.(file.path, from, end, reason);
    reporter.logger.warn(
      fields,
      `file ${why} while the source was stopped: what was written after byte ${from} (after the last look) is unknown and given up`,
    );
    return;
  }
  if (end === from) {
    reporter.logger.info(
      fields,
      `file ${why}: nothing unread was seen (what was written after the last read is unknown)`,
    );
    return;
  }
  reporter.observer.dataLost?.(file.path, from, end, reason);
  reporter.logger.warn(
    fields,
    `file ${why}: unread data from byte ${from} on is given up (at least ${end - from} bytes; what was written after the last look is unknown)`,
  );
}
