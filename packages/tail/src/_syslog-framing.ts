/**
 * RFC 6587 framing of syslog over TCP: a byte stream → syslog messages.
 *
 * Senders use one of two framings and rsyslog can be set to either, so each frame is read by
 * what its first byte is: a digit starts octet counting (`<len> <msg>`, RFC 6587 3.4.1); `<`
 * (a PRI) or anything else starts non-transparent framing, a message up to LF (3.4.2). Stray
 * CR/LF/NUL between frames are skipped (some senders end octet-counted frames with LF too).
 *
 * Memory is bounded by `maxFrameBytes`: an octet-counted frame announcing more is skipped as it
 * streams by (its length says where the next frame starts), an LF frame that grows past it is
 * dropped up to its LF. Only an octet count that is not a number loses the stream: nothing says
 * where the next frame starts, so the caller closes the connection.
 */

/** rsyslog's largest configurable message is far beyond this; PostgreSQL's chunks are <= 1 KiB. */
export const MAX_FRAME_BYTES: number = 64 * 1024;

/** Digits of an octet count: 64 KiB needs 5; more than 9 cannot be a sane frame. */
const MAX_COUNT_DIGITS = 9;

const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const NUL = 0x00;
const ZERO = 0x30;
const NINE = 0x39;

export type FramingError =
  /** A frame larger than maxFrameBytes; skipped. */
  | "too-large"
  /** An octet count that is not digits then a space; the stream cannot be resynchronised. */
  | "bad-count"
  /** The stream ended inside a frame. */
  | "truncated";

export interface FrameSink {
  /** One syslog message without its framing; `size` is the bytes it took on the wire, framing included. */
  frame(message: Buffer, size: number): void;
  /** A frame that could not be read; `size` wire bytes were skipped. */
  error(error: FramingError, size: number): void;
}

const Mode = {
  /** Between frames. */
  Start: 0,
  /** Reading the digits of an octet count. */
  Count: 1,
  /** Reading `remaining` bytes of an octet-counted message. */
  Octets: 2,
  /** Skipping `remaining` bytes of an octet-counted message too large to keep. */
  SkipOctets: 3,
  /** Reading a message up to LF. */
  Line: 4,
  /** Skipping an LF-terminated message too large to keep, up to its LF. */
  SkipLine: 5,
  /** After a bad count: everything is ignored. */
  Lost: 6,
} as const;
type Mode = (typeof Mode)[keyof typeof Mode];

/** Splits one connection's byte stream into syslog messages; feed it chunks split anywhere. */
export class SyslogFramer {
  private mode: Mode = Mode.Start;
  private parts: Buffer[] = [];
  private held = 0;
  /** Wire bytes of the current frame so far (count header and skipped separators included). */
  private wire = 0;
  private count = 0;
  private digits = 0;
  private remaining = 0;
  private readonly sink: FrameSink;
  private readonly maxFrameBytes: number;

  constructor(sink: FrameSink, maxFrameBytes: number = MAX_FRAME_BYTES) {
    this.sink = sink;
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Whether the stream is still readable; false after a bad octet count (close the connection). */
  get ok(): boolean {
    return this.mode !== Mode.Lost;
  }

  push(chunk: Buffer): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      switch (this.mode) {
        case Mode.Start: {
          const b = chunk[i]!;
          if (b === LF || b === CR || b === NUL) {
            this.wire++;
            i++;
          } else if (b >= ZERO && b <= NINE) {
            this.mode = Mode.Count;
            this.count = 0;
            this.digits = 0;
          } else {
            this.mode = Mode.Line;
          }
          break;
        }
        case Mode.Count: {
          const b = chunk[i++]!;
          this.wire++;
          if (b >= ZERO && b <= NINE && this.digits < MAX_COUNT_DIGITS) {
            this.count = this.count * 10 + (b - ZERO);
            this.digits++;
          } else if (b === SP && this.digits > 0 && this.count > 0) {
            this.remaining = this.count;
            this.mode = this.count > this.maxFrameBytes ? Mode.SkipOctets : Mode.Octets;
          } else {
            this.mode = Mode.Lost;
            this.sink.error("bad-count", this.wire + n - i);
            this.wire = 0;
            return;
          }
          break;
        }
        case Mode.Octets:
        case Mode.SkipOctets: {
          const take = Math.min(this.remaining, n - i);
          if (this.mode === Mode.Octets) this.hold(chunk.subarray(i, i + take));
          i += take;
          this.wire += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            if (this.mode === Mode.Octets) this.emit();
            else this.fail("too-large");
          }
          break;
        }
        case Mode.Line:
        case Mode.SkipLine: {
          const lf = chunk.indexOf(LF, i);
          const end = lf < 0 ? n : lf;
          if (this.mode === Mode.Line) {
            if (this.held + end - i > this.maxFrameBytes) {
              // Drop what is held now rather than buffer up to the LF, which may never come.
              this.parts = [];
              this.held = 0;
              this.mode = Mode.SkipLine;
            } else this.hold(chunk.subarray(i, end));
          }
          this.wire += end - i;
          i = end;
          if (lf >= 0) {
            i++;
            this.wire++;
            if (this.mode === Mode.Line) this.emit();
            else this.fail("too-large");
          }
          break;
        }
        case Mode.Lost:
          return;
      }
    }
  }

  /** End of the stream: a frame still open is reported as truncated. */
  end(): void {
    if (this.mode !== Mode.Start && this.mode !== Mode.Lost) this.fail("truncated");
    this.mode = Mode.Lost;
  }

  private hold(part: Buffer): void {
    if (part.length === 0) return;
    // A view, not a copy: Node gives every 'data' event a buffer of its own.
    this.parts.push(part);
    this.held += part.length;
  }

  private emit(): void {
    const message = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.held);
    const size = this.wire;
    this.reset();
    this.sink.frame(message, size);
  }

  private fail(error: FramingError): void {
    const size = this.wire;
    this.reset();
    this.sink.error(error, size);
  }

  private reset(): void {
    this.parts = [];
    this.held = 0;
    this.wire = 0;
    this.mode = Mode.Start;
  }
}
