import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
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
