/**
 * Splits a byte stream into `\n`-terminated lines with their absolute offsets. Chunks may split
 * anywhere (inside a line or a UTF-8 sequence): a partial line is kept until its newline comes.
 * Shared by the stderr and syslog parsers; lines are handed out as (buffer, start, end) so the
 * callers decode only what they need.
 */

export interface LineHandler {
  /** A complete line `buf[start, end)`; its `\n` is at `end`. `offset` is the source offset of `start`. */
  line(buf: Buffer, start: number, end: number, offset: number): void;
  /** The input ended inside a line (no `\n`): `buf[start, end)` is all there is. */
  partial(buf: Buffer, start: number, end: number, offset: number): void;
  /** A line longer than the limit, skipped whole; reported once its end (or the input's) is seen. */
  tooLong(offset: number, size: number): void;
}

const NL = 0x0a;

export function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

export class LineSplitter {
  /** Bytes of an unfinished line, kept as the chunks that carried them (joined once, at its newline). */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  /** Source offset of the first byte not yet handed out. */
  private offset = 0;
  /** Skipping the rest of an over-long line: its start offset, or -1. */
  private skipFrom = -1;
  private readonly handler: LineHandler;
  private readonly maxLineBytes: number;

  constructor(handler: LineHandler, maxLineBytes: number) {
    this.handler = handler;
    this.maxLineBytes = maxLineBytes;
  }

  push(chunk: Uint8Array): void {
    const buf = asBuffer(chunk);
    const n = buf.length;
    let pos = 0;
    if (this.partsBytes > 0 || this.skipFrom >= 0) {
      const nl = buf.indexOf(NL);
      if (nl < 0) {
        this.keep(buf, 0, n);
        return;
      }
      if (this.skipFrom >= 0) {
        const end = this.offset + this.partsBytes + nl + 1;
        this.handler.tooLong(this.skipFrom, end - this.skipFrom);
        this.skipFrom = -1;
        this.offset = end;
        this.partsBytes = 0;
      } else {
        this.parts.push(buf.subarray(0, nl + 1));
        const line = Buffer.concat(this.parts, this.partsBytes + nl + 1);
        this.parts = [];
        this.partsBytes = 0;
        const start = this.offset;
        this.offset += line.length;
        this.handler.line(line, 0, line.length - 1, start);
      }
      pos = nl + 1;
    }
    const handler = this.handler;
    const offset = this.offset - pos;
    for (;;) {
      const nl = buf.indexOf(NL, pos);
      if (nl < 0) break;
      handler.line(buf, pos, nl, offset + pos);
      pos = nl + 1;
    }
    this.offset = offset + pos;
    if (pos < n) this.keep(buf, pos, n);
  }

  /** Whether everything pushed so far ended with a newline (nothing partial is held). */
  get atLineBoundary(): boolean {
    return this.partsBytes === 0 && this.skipFrom < 0;
  }

  end(): void {
    if (this.skipFrom >= 0) {
      this.handler.tooLong(this.skipFrom, this.offset + this.partsBytes - this.skipFrom);
    } else if (this.partsBytes > 0) {
      const line = Buffer.concat(this.parts, this.partsBytes);
      this.handler.partial(line, 0, line.length, this.offset);
    }
    this.offset += this.partsBytes;
    this.parts = [];
    this.partsBytes = 0;
    this.skipFrom = -1;
  }

  private keep(buf: Buffer, start: number, end: number): void {
    if (this.skipFrom >= 0) {
      this.partsBytes += end - start;
      return;
    }
    // Copy: the caller may reuse its chunk's memory once push() returns.
    this.parts.push(Buffer.from(buf.subarray(start, end)));
    this.partsBytes += end - start;
    if (this.partsBytes > this.maxLineBytes) {
      this.skipFrom = this.offset;
      this.parts = [];
    }
  }
}
