import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";

export interface DurableWriteOptions {
  /**
   * The temp file written first; it must be in the same directory as the target (rename is atomic
   * only within one filesystem). Default: `<path>.tmp-<pid>-<random>`, unique per write. A fixed
   * name lets a reader that starts after a crash between fsync and rename find the newer state.
   */
  tempPath?: string;
  /** Mode of the new file (before the umask), e.g. 0o600 for a secret; default 0o666. */
  mode?: number;
}

/** fsync of a directory, so a rename or a new file in it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `path` atomically and durably: writes a temp file beside it, fsyncs it, renames it over
 * `path`, fsyncs the directory. A reader, or a restart after a crash at any step, finds the old
 * file whole or the new one whole, never a part. On failure the temp file is removed and the
 * error rethrown; the directory must exist.
 */
export async function writeFileDurably(
  path: string,
  data: string | Uint8Array | readonly Uint8Array[],
  options: DurableWriteOptions = {},
): Promise<void> {
  const temp = options.tempPath ?? `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    const handle = await open(temp, "w", options.mode);
    try {
      // writeFile (unlike writev) loops over short writes; on a handle it continues where the last ended.
      if (typeof data === "string" || data instanceof Uint8Array) await handle.writeFile(data);
      else for (const chunk of data) await handle.writeFile(chunk);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    await fsyncDir(dirname(path));
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

/**
 * Creates `dir` and any missing parents. Node's recursive mkdir reports a read-only file system
 * as `ENOENT: no such file or directory, mkdir '<first missing>'`; this one says what is wrong:
 * EROFS (read-only), EACCES (not writable by this user) or ENOTDIR, naming the directory where
 * creation stopped.
 */
export async function ensureDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw await explainMkdirError(dir, error);
  }
}

async function explainMkdirError(dir: string, error: unknown): Promise<unknown> {
  // The nearest part of the path that exists is where creation stopped.
  let existing = dir;
  for (;;) {
    const info = await stat(existing).catch(() => undefined);
    if (info) {
      if (!info.isDirectory())
        return fsError("ENOTDIR", `cannot create ${dir}: ${existing} is not a directory`, error);
      break;
    }
    const up = dirname(existing);
    if (up === existing) return error;
    existing = up;
  }
  const denied = await access(existing, constants.W_OK).then(
    () => undefined,
    (e: unknown) => (e as { code?: string }).code,
  );
  if (denied === "EROFS")
    return fsError("EROFS", `cannot create ${dir}: ${existing} is on a read-only file system`, error);
  if (denied === "EACCES" || denied === "EPERM")
    return fsError(
      denied,
      `cannot create ${dir}: ${existing} is not writable by this user (uid ${process.getuid?.() ?? "?"})`,
      error,
    );
  return error;
}

function fsError(code: string, message: string, cause: unknown): Error {
  return Object.assign(new Error(`${code}: ${message}`, { cause }), { code });
}
