/**
 * What bench changed on an existing server, saved before the first change so a later start (or
 * `--restore`) can put it back after a kill -9. Written temp → fsync → rename → fsync dir.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export interface RestoreState {
  version: 1;
  /** host:port/user of the server (never a password). */
  server: string;
  savedAt: string;
  /**
   * Each setting bench may change → its value in postgresql.auto.conf before, or null when it
   * was not set there (then ALTER SYSTEM RESET puts it back).
   */
  settings: Record<string, string | null>;
  /** The database bench created (dropped on restore). */
  database: string;
  /** The role object auditing granted to (dropped on restore), or null. */
  role: string | null;
}

/** Default directory of the saved state: $XDG_STATE_HOME/auditpipe or ~/.local/state/auditpipe. */
export function defaultStateDir(): string {
  return join(process.env.XDG_STATE_HOME ?? join(homedir(), ".local", "state"), "auditpipe");
}

export function stateFile(dir: string, server: string): string {
  return join(dir, `bench-restore-${server.replace(/[^A-Za-z0-9._-]+/g, "_")}.json`);
}

// The manifest journal in @auditpipe/ship has the async twin of this; bench needs it synchronous
// (it also runs from a signal handler's path) and must not depend on the ship package's internals.
function writeDurably(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

export function saveRestoreState(path: string, state: RestoreState): void {
  writeDurably(path, `${JSON.stringify(state, null, 2)}\n`);
}

export function loadRestoreState(path: string): RestoreState | null {
  if (!existsSync(path)) return null;
  const parsed = JSON.parse(readFileSync(path, "utf8")) as RestoreState;
  if (parsed.version !== 1 || typeof parsed.settings !== "object")
    throw new Error(`${path}: not a bench restore file (version 1)`);
  return parsed;
}

export function clearRestoreState(path: string): void {
  rmSync(path, { force: true });
}
