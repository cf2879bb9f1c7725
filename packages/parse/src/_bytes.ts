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

/** Length of the well-formed UTF-8 sequence at `i` (1–4), or 0 when the byte there starts none. */
function utf8SequenceLength(buf: Uint8Array, i: number, end: number): number {
  const b = buf[i]!;
  if (b < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean =>
    i + k < end && buf[i + k]! >= lo && buf[i + k]! <= hi;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((b >= 0xe1 && b <= 0xec) || b === 0xee || b === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (b === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0; // no UTF-16 surrogates
  if (b === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b >= 0xf1 && b <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

const HEX = "0123456789abcdef";

/**
 * Bytes [start, end) as text with nothing lost, for a record that is not all UTF-8 (a SQL_ASCII
 * database logs its clients' bytes as they came): well-formed UTF-8 is decoded, every other byte
 * becomes the four characters `\xNN` (lowercase hex), and every backslash is doubled, so the
 * original bytes can be told apart from the escapes and restored. The shipped-record docs
 * (docs/archive.md) describe it with the `invalid_utf8` flag that marks such records.
 */
export function decodeEscaped(buf: SliceBuffer, start: number, end: number): string {
  let out = "";
  let run = start; // start of the pending stretch of well-formed UTF-8 without backslashes
  let i = start;
  while (i < end) {
    const b = buf[i]!;
    const n = b === BACKSLASH ? 0 : utf8SequenceLength(buf, i, end);
    if (n > 0) {
      i += n;
      continue;
    }
    out += buf.utf8Slice(run, i);
    out += b === BACKSLASH ? "\\\\" : `\\x${HEX[b >> 4]}${HEX[b & 15]}`;
    i += 1;
    run = i;
  }
  return out + buf.utf8Slice(run, end);
}

/**
 * decodeEscaped for a line of JSON text, whose strings must come out of JSON.parse escaped the
 * same way: a byte that is not UTF-8 becomes the JSON text `\\xNN` (the value `\xNN`), and an
 * escaped backslash `\\` becomes `\\\\` (the value `\\`); JSON's other escapes pass through.
 */
export function decodeEscapedJson(buf: SliceBuffer, start: number, end: number): string {
  let out = "";
  let run = start;
  let i = start;
  while (i < end) {
    const b = buf[i]!;
    if (b === BACKSLASH) {
      if (buf[i + 1] === BACKSLASH) {
        out += `${buf.utf8Slice(run, i)}\\\\\\\\`;
        run = i + 2;
      }
      i += 2; // an escape: the next byte is ASCII (" \ / b f n r t u)
      continue;
    }
    const n = utf8SequenceLength(buf, i, end);
    if (n > 0) {
      i += n;
      continue;
    }
    out += `${buf.utf8Slice(run, i)}\\\\x${HEX[b >> 4]}${HEX[b & 15]}`;
    i += 1;
    run = i;
  }
  return out + buf.utf8Slice(run, end);
}

/** `text` with every backslash doubled: the same convention for text decoded before a bad byte showed up. */
export function doubleBackslashes(text: string): string {
  return text.replaceAll("\\", "\\\\");
}
