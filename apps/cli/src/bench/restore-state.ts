/**
 * What bench changed on an existing server, saved before the first change so a later start (or
 * `--restore`) can put it back after a kill -9. Written with ship's writeFileDurably (temp →
 * fsync → rename → fsync dir), mode 0600.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { writeFileDurably } from "@auditpipe/ship";

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

export async function saveRestoreState(path: string, state: RestoreState): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFileDurably(path, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
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
