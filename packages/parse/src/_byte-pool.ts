/**
 * Strings of ASCII byte spans for csvlog's AuditView, so that equal spans mostly give the same
 * string object: each use (a column of few values: class, command, user…) compares the span with
 * the few strings it gave last before making a new one. Bounded (CANDIDATES strings per use); a
 * miss only costs the string a parser would have made anyway. The strings are flat copies
 * (latin1Slice), never views of the parser's text.
 */
import type { SliceBuffer } from "./_bytes.ts";

/** Strings kept per use: a column's distinct values in a stretch of log (class, command…). */
const CANDIDATES = 8;

export class BytePool {
  /** Per use, the strings it gave last (CANDIDATES each). */
  private readonly kept: string[];
  /** Per use, the slot to replace next. */
  private readonly next: Uint8Array;

  /** `uses`: how many uses the caller has. */
  constructor(uses: number) {
    this.kept = new Array<string>(uses * CANDIDATES).fill("");
    this.next = new Uint8Array(uses);
  }

  /** The string of `buf[s, e)` (ASCII), for use `k`. */
  of(k: number, buf: SliceBuffer, s: number, e: number): string {
    const kept = this.kept;
    const at = k * CANDIDATES;
    const len = e - s;
    for (let i = at; i < at + CANDIDATES; i++) {
      const c = kept[i]!;
      if (c.length === len && sameBytes(c, buf, s)) return c;
    }
    const v = buf.latin1Slice(s, e);
    const slot = this.next[k]!;
    kept[at + slot] = v;
    this.next[k] = (slot + 1) % CANDIDATES;
    return v;
  }
}

/** Whether `k` (ASCII) equals the bytes at `s` of its length; compared from the end, where spans most often differ. */
function sameBytes(k: string, buf: SliceBuffer, s: number): boolean {
  for (let i = k.length - 1; i >= 0; i--) if (k.charCodeAt(i) !== buf[s + i]) return false;
  return true;
}
