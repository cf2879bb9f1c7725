import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";

/** A file's identity is its first line (PostgreSQL starts every file with a timestamped record), up to this many bytes. */
export const FINGERPRINT_MAX_BYTES = 1024;
/** The checkpoint's marker covers this many bytes just before the saved position. */
export const MARKER_BYTES = 64;

function digest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex").slice(0, 16);
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

/**
 * The fingerprint of a file: a hash of its first line (or first FINGERPRINT_MAX_BYTES). Undefined
 * while the first line is still being written: the identity is not settled yet.
 */
export async function readFingerprint(handle: FileHandle): Promise<string | undefined> {
  return firstLineHash(await readAt(handle, 0, FINGERPRINT_MAX_BYTES));
}

/** The fingerprint of the bytes a file starts with (see readFingerprint); undefined while its first line is incomplete. */
export function firstLineHash(start: Uint8Array): string | undefined {
  const line = firstLine(start);
  return line === undefined ? undefined : digest(line);
}

/** The bytes a fingerprint hashes: the first line (or first FINGERPRINT_MAX_BYTES); undefined while incomplete. */
function firstLine(start: Uint8Array): Uint8Array | undefined {
  const newline = start.subarray(0, FINGERPRINT_MAX_BYTES).indexOf(0x0a);
  if (newline >= 0) return start.subarray(0, newline + 1);
  return start.length >= FINGERPRINT_MAX_BYTES ? start.subarray(0, FINGERPRINT_MAX_BYTES) : undefined;
}

/**
 * Whether a file still starts with the line it was identified by. The first look reads up to
 * FINGERPRINT_MAX_BYTES and hashes; it keeps the line, and later looks read that many bytes and
 * compare them (a few hundred bytes from the page cache, no hash).
 */
export class HeadCheck {
  private line: Buffer | undefined;
  private readonly fingerprint: string;

  constructor(fingerprint: string) {
    this.fingerprint = fingerprint;
  }

  async holds(handle: FileHandle): Promise<boolean> {
    if (this.line === undefined) {
      const line = firstLine(await readAt(handle, 0, FINGERPRINT_MAX_BYTES));
      if (line === undefined || digest(line) !== this.fingerprint) return false;
      this.line = Buffer.from(line);
      return true;
    }
    return (await readAt(handle, 0, this.line.length)).equals(this.line);
  }
}

/** A hash of the bytes just before `position`: proves on restart that the file still holds what was read. */
export async function readMarker(handle: FileHandle, position: number): Promise<string> {
  if (position === 0) return "";
  const start = Math.max(0, position - MARKER_BYTES);
  const bytes = await readAt(handle, start, position - start);
  return bytes.length === position - start ? digest(bytes) : "";
}

/**
 * Bytes compared before a file whose first line is a tracked file's is taken for a copy of it
 * (copytruncate's) rather than another file: with a short log_line_prefix (`[%p] `) two files
 * can start with the same line, and they part within a few lines.
 */
export const COPY_COMPARE_BYTES: number = 16 << 10;

/** Whether two files hold the same bytes over the first `length` bytes (up to COPY_COMPARE_BYTES). */
export async function samePrefix(a: FileHandle, b: FileHandle, length: number): Promise<boolean> {
  const n = Math.min(length, COPY_COMPARE_BYTES);
  const [x, y] = await Promise.all([readAt(a, 0, n), readAt(b, 0, n)]);
  return x.equals(y);
}

/**
 * The identity of a second file that starts with the same line as one already known (by
 * checkpoint or followed): the first-line hash salted with its device and inode, so that
 * checkpoints and object keys stay apart. Same form as a fingerprint.
 */
export function collisionId(fingerprint: string, dev: number, ino: number): string {
  return digest(Buffer.from(`${fingerprint}:${dev}:${ino}`));
}
