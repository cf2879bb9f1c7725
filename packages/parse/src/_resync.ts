/**
 * Where to resume after bad input in formats whose records start with PostgreSQL's log time.
 * A line starting `YYYY-MM-DD HH:MM:SS` is taken as a plausible record start: csvlog's log_time
 * and stderr's `%m`/`%t` both print that way.
 */
import { LF } from "./_bytes.ts";

/** Bytes of `YYYY-MM-DD HH:MM:SS`. */
export const TIMESTAMP_PREFIX_BYTES = 19;

const D = 1;
/** 1 = digit, otherwise the exact byte expected. */
const PATTERN = [D, D, D, D, 0x2d, D, D, 0x2d, D, D, 0x20, D, D, 0x3a, D, D, 0x3a, D, D];

/** 1 when a timestamp starts at `i`, 0 when not, -1 when the bytes before `len` cannot tell yet. */
export function timestampAt(buf: Uint8Array, i: number, len: number): 1 | 0 | -1 {
  for (let k = 0; k < TIMESTAMP_PREFIX_BYTES; k++) {
    if (i + k >= len) return -1;
    const c = buf[i + k]!;
    const p = PATTERN[k]!;
    if (p === D ? c < 0x30 || c > 0x39 : c !== p) return 0;
  }
  return 1;
}

/** findTimestampLine found no line start it could not decide: nothing needs keeping. */
export const NO_PENDING_LINE = -1;

/**
 * The start of the first line after `from` (a line starting at `from` itself does not count) that
 * begins with a timestamp. Returns its index; or, when a line start cannot be decided with the
 * bytes before `len`, `-(k + 2)` where k is the newline before it (keep bytes from k and ask
 * again with more input); or NO_PENDING_LINE.
 */
export function findTimestampLine(buf: Uint8Array, from: number, len: number): number {
  let i = from;
  for (;;) {
    const nl = buf.indexOf(LF, i);
    if (nl < 0 || nl >= len) return NO_PENDING_LINE;
    const t = timestampAt(buf, nl + 1, len);
    if (t === 1) return nl + 1;
    if (t === -1) return -(nl + 2);
    i = nl + 1;
  }
}
