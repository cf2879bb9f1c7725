/**
 * The modes of what `run` writes: the spool, the syslog journal, a local archive, checkpoints and
 * manifests hold audited statements, which can hold personal data, so none of it is more readable
 * than PostgreSQL's own log files. Files are 0600 and directories 0700, unless the logs are group-
 * or world-readable (log_file_mode 0640 or 0644): then the same read bits are given, never more.
 *
 * The modes are applied through the process umask, set once at start before anything is created:
 * every writer (writeFileDurably, the journals' appends, mkdir, the lock's socket) creates files
 * with the usual 0666/0777 and the umask takes away what the logs do not allow. A umask already
 * stricter than that is kept.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import { AUTO_PATTERN, DEFAULT_PATTERNS } from "@auditpipe/tail";
import { globMatcher } from "@auditpipe/tail/glob";
import type { Logger } from "pino";
import { PgdataSettingError, readPgdataSetting } from "./pgdata-settings.ts";

/** Owner read and write only: when nothing tells how readable the logs are. */
const PRIVATE_FILE_MODE = 0o600;
const READ_BITS = 0o044;

/** The file and directory modes for what is written, from the logs' mode: no read bit the logs lack. */
export function dataModes(sourceMode: number): { file: number; dir: number } {
  const read = sourceMode & READ_BITS;
  // A directory a reader may list is one it may enter too: r gives x.
  return { file: PRIVATE_FILE_MODE | read, dir: 0o700 | read | (read >> 2) };
}

/** The umask that gives `modes` to new files (0666) and directories (0777), kept at least as strict as `current`. */
export function umaskFor(modes: { file: number; dir: number }, current: number): number {
  return (current | (0o777 & ~(modes.file | modes.dir))) & 0o777;
}

/** How readable the logs are: the current log file's mode, else log_file_mode; undefined when unknown. */
export function sourceLogMode(options: {
  pgdata?: string | undefined;
  stream?: { logDir: string; format: LogFormat | "auto" } | undefined;
  pattern?: string | undefined;
}): { mode: number; from: string } | undefined {
  const file = currentLogFile(options);
  if (file) {
    const mode = statSync(file, { throwIfNoEntry: false })?.mode;
    if (mode !== undefined) return { mode: mode & 0o777, from: file };
  }
  if (options.pgdata) {
    try {
      const { value, from } = readPgdataSetting(options.pgdata, "log_file_mode", "0600");
      const mode = Number.parseInt(value, 8);
      if (Number.isInteger(mode) && mode >= 0 && mode <= 0o777)
        return { mode, from: `log_file_mode (${from})` };
    } catch (error) {
      if (!(error instanceof PgdataSettingError)) throw error;
    }
  }
  return undefined;
}

/** The file PostgreSQL writes now: from current_logfiles, else the newest matching file in the directory. */
function currentLogFile(options: Parameters<typeof sourceLogMode>[0]): string | undefined {
  if (options.pgdata) {
    const text = readText(join(options.pgdata, "current_logfiles"));
    const path = text?.split("\n")[0]?.split(" ").slice(1).join(" ");
    if (path) return isAbsolute(path) ? path : join(options.pgdata, path);
  }
  const stream = options.stream;
  if (!stream) return undefined;
  const pattern =
    options.pattern ?? (stream.format === "auto" ? AUTO_PATTERN : DEFAULT_PATTERNS[stream.format]);
  const matches = globMatcher(pattern);
  let newest: { path: string; mtimeMs: number } | undefined;
  let names: string[];
  try {
    names = readdirSync(stream.logDir);
  } catch {
    return undefined;
  }
  for (const name of names.filter(matches)) {
    const path = join(stream.logDir, name);
    const info = statSync(path, { throwIfNoEntry: false });
    if (info?.isFile() && (!newest || info.mtimeMs > newest.mtimeMs))
      newest = { path, mtimeMs: info.mtimeMs };
  }
  return newest?.path;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

const octal = (mode: number): string => `0${mode.toString(8).padStart(3, "0")}`;

/**
 * Sets the process umask so that everything `run` creates is no more readable than the logs
 * (see above), and says so. Call before the state directory is touched.
 */
export function restrictFileModes(source: { mode: number; from: string } | undefined, logger: Logger): void {
  const modes = dataModes(source?.mode ?? PRIVATE_FILE_MODE);
  const current = process.umask(0o077); // read (the one-argument form): set at once below
  const mask = umaskFor(modes, current);
  process.umask(mask);
  logger.info(
    {
      files: octal(0o666 & ~mask),
      dirs: octal(0o777 & ~mask),
      logs: source ? octal(source.mode) : "unknown",
      from: source?.from ?? "no log file to compare with",
    },
    "files written are no more readable than PostgreSQL's logs",
  );
}

/** Warns when a signing key file is readable by others than its owner (as ssh does). */
export function warnIfReadableKey(path: string, setting: string, logger: Logger): void {
  const mode = statSync(path, { throwIfNoEntry: false })?.mode;
  if (mode === undefined || (mode & 0o077) === 0) return;
  logger.warn(
    { file: path, mode: octal(mode & 0o777) },
    `${setting}: the manifest signing key is readable by other users: whoever can read it can sign manifests in this host's name; make it readable by its owner only (chmod 600, or defaultMode: 0400 for a Kubernetes secret)`,
  );
}
