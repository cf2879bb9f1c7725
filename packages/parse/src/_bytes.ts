/**
 * Byte helpers shared by the parsers: a growable carry buffer for records split across chunks,
 * UTF-8 checks, and string decoding of byte ranges. Internal: not exported from index.ts.
 */
import { isAscii, isUtf8 } from "node:buffer";

/**
 * Node's Buffer has fast slice-to-string methods that @types/node does not declare; they skip the
 * argument checks of `toString(encoding, start, end)`, which matters at millions of calls a second.
 */
export interface SliceBuffer extends Buffer {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

export const LF = 0x0a;
export const CR = 0x0d;
export const QUOTE = 0x22;
export const COMMA = 0x2c;
export const BACKSLASH = 0x5c;

/** A Buffer view of any Uint8Array, sharing its memory. */
export function asBuffer(chunk: Uint8Array): SliceBuffer {
  return (
    Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  ) as SliceBuffer;
}

/** True when bytes [start, end) are all ASCII (SIMD in Node's simdutf). */
export function isAsciiRange(buf: Buffer, start: number, end: number): boolean {
  return isAscii(start === 0 && end === buf.length ? buf : buf.subarray(start, end));
}

/** True when bytes [start, end) are well-formed UTF-8 (no overlongs, surrogates or truncation). */
export function isUtf8Range(buf: Buffer, start: number, end: number): boolean {
  return isUtf8(start === 0 && end === buf.length ? buf : buf.subarray(start, end));
}

/**
 * The unfinished tail of the input, kept between push() calls. Only the tail is copied, into a
 * buffer that grows by doubling, so a record split over many chunks costs linear time.
 */
export class ByteCarry {
  buf: SliceBuffer = Buffer.allocUnsafe(0) as SliceBuffer;
  length = 0;

  append(chunk: Uint8Array): void {
    const need = this.length + chunk.length;
    if (need > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2, 65536)) as SliceBuffer;
      this.buf.copy(next, 0, 0, this.length);
      this.buf = next;
    }
    this.buf.set(chunk, this.length);
    this.length = need;
  }

  /** Drops bytes before `from`, keeping the rest at the front. */
  discard(from: number): void {
    if (from <= 0) return;
    if (from >= this.length) {
      this.length = 0;
    } else {
      this.buf.copyWithin(0, from, this.length);
      this.length -= from;
    }
    // Give back a large buffer once an oversized record is gone.
    if (this.length === 0 && this.buf.length > 1 << 22) this.buf = Buffer.allocUnsafe(0) as SliceBuffer;
  }

  /** Replaces the content with bytes [start, end) of `src`. */
  keep(src: Uint8Array, start: number, end: number): void {
    this.length = 0;
    this.append(src.subarray(start, end));
  }
}

/** Decimal integer from ASCII digits in [start, end), optional leading '-'; null when not one. */
export function parseIntBytes(buf: Uint8Array, start: number, end: number): number | null {
  if (start >= end) return null;
  let i = start;
  let neg = false;
  if (buf[i] === 0x2d) {
    neg = true;
    i++;
    if (i === end) return null;
  }
  let n = 0;
  for (; i < end; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) return null;
    n = n * 10 + d;
  }
  return neg ? -n : n;
}
