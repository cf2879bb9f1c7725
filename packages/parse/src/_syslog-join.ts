/**
 * Undoing what happened to a PostgreSQL message on its way into a syslog file.
 *
 * rsyslog writes control characters as `#` and three octal digits (`#011` for a tab). It does
 * not escape `#` itself, so a literal `#011` in a statement comes back as a tab: the escape is
 * lossy and we take the common reading.
 *
 * write_syslog() (elog.c) splits a message at each newline (dropping it) and where a line
 * exceeds PG_SYSLOG_LIMIT (900) bytes: cut at 900, backed off to a UTF-8 character boundary,
 * then back to the last whitespace if the next byte is not one (the next chunk then starts with
 * that whitespace). The chunks do not say which cut made them, so we infer it:
 * - inside a message, PostgreSQL puts a tab after every newline, and a new line of the buffer
 *   (DETAIL, STATEMENT...) starts with the log_line_prefix;
 * - a length cut leaves the previous chunk at >= 897 bytes, or starts the next chunk with the
 *   whitespace it backed off to, followed by a run of non-whitespace long enough that the
 *   900-byte window had no other whitespace.
 * A tab exactly where a line would have been cut is the one case both readings fit; we take the
 * length cut there.
 */

/** PG_SYSLOG_LIMIT in elog.c. */
export const PG_SYSLOG_LIMIT = 900;
/** A length cut backs off at most 3 bytes to a UTF-8 character boundary. */
const MIN_LENGTH_CUT = PG_SYSLOG_LIMIT - 3;

export function unescapeRsyslog(s: string): string {
  if (!s.includes("#")) return s;
  return s.replace(/#([0-3][0-7][0-7])/g, (m, oct: string) => {
    const code = Number.parseInt(oct, 8);
    return code < 0x20 || code === 0x7f ? String.fromCharCode(code) : m;
  });
}

/** C isspace() in the C locale. */
function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

/** UTF-8 bytes of the non-whitespace run starting at `from`, counting up to `enough`. */
function runBytes(s: string, from: number, enough: number): number {
  let n = 0;
  for (let i = from; i < s.length && n < enough; i++) {
    const c = s.charCodeAt(i);
    if (isSpace(c)) break;
    n += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3;
  }
  return n;
}

/**
 * Whether chunk `next` starts a new line of the message (its chunk before was cut at a newline)
 * rather than continuing the same line. `prevBytes` is the UTF-8 length of the chunk before;
 * `startsLine` tells whether a text starts with the log_line_prefix and a severity.
 */
export function startsNewLine(
  prevBytes: number,
  next: string,
  startsLine: (text: string) => boolean,
): boolean {
  if (next.length === 0) return false;
  const c0 = next.charCodeAt(0);
  const lengthCut =
    prevBytes >= MIN_LENGTH_CUT ||
    (isSpace(c0) && runBytes(next, 1, MIN_LENGTH_CUT) >= MIN_LENGTH_CUT - 1 - prevBytes);
  if (!lengthCut) return true;
  if (isSpace(c0)) return false;
  return startsLine(next);
}
