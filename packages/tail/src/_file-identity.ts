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
  const head = await readAt(handle, 0, FINGERPRINT_MAX_BYTES);
  const newline = head.indexOf(0x0a);
  if (newline >= 0) return digest(head.subarray(0, newline + 1));
  return head.length === FINGERPRINT_MAX_BYTES ? digest(head) : undefined;
}

/** A hash of the bytes just before `position`: proves on restart that the file still holds what was read. */
export async function readMarker(handle: FileHandle, position: number): Promise<string> {
  if (position === 0) return "";
  const start = Math.max(0, position - MARKER_BYTES);
  const bytes = await readAt(handle, start, position - start);
  return bytes.length === position - start ? digest(bytes) : "";
}
