/**
 * PostgreSQL's log destinations as files (FileFollower's `format: "auto"`): which stream a file
 * belongs to, and how it is read, from its name and its siblings' names. PostgreSQL names every
 * destination's file from one `log_filename`: stderr's as given, csvlog's and jsonlog's with `.log`
 * replaced by `.csv` / `.json` (or those appended), all rotated together, so files written at
 * the same time share a stem.
 */
import type { LogFormat } from "@auditpipe/parse";

/**
 * How one followed file is read: its format, and whether it is a stderr file beside a csvlog or
 * jsonlog one, of which only the records PostgreSQL diverted into it are read (see
 * @auditpipe/parse createDivertedParser).
 */
export interface FileRole {
  format: LogFormat;
  diverted: boolean;
}

/** A log file's stem and destination extension (`.csv`, `.json`, `.log`); a copy's `.1` suffix is left aside. */
export function destinationName(name: string): { stem: string; extension: string } {
  const base = name.replace(/\.\d+$/, "");
  const match = /\.(csv|json|log)$/.exec(base);
  return match ? { stem: base.slice(0, match.index), extension: match[0] } : { stem: base, extension: "" };
}

/**
 * How a file of `format: auto` is read, given the names listed beside it; undefined for a jsonlog
 * file beside a csvlog file of the same stem (both destinations on: the same entries, read once
 * from the csvlog file).
 */
export function destinationRole(name: string, listed: ReadonlySet<string>): FileRole | undefined {
  const { stem, extension } = destinationName(name);
  const sibling = (ext: string): boolean => listed.has(`${stem}${ext}`);
  if (extension === ".json") return sibling(".csv") ? undefined : { format: "jsonlog", diverted: false };
  if (extension === ".log") return { format: "stderr", diverted: sibling(".csv") || sibling(".json") };
  return { format: "csvlog", diverted: false };
}
