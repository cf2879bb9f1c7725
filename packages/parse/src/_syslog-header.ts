/**
 * The header rsyslog puts before a message, in the three layouts it writes to files:
 *   RFC 3164 (RSYSLOG_TraditionalFileFormat): `Nov 23 07:40:10 host postgres[10135]: msg`
 *   rsyslog's default file format (RSYSLOG_FileFormat): `2026-11-23T07:40:10.123456+00:00 host postgres[10135]: msg`
 *   RFC 5424 (RSYSLOG_SyslogProtocol23Format): `<134>1 2026-11-23T07:40:38.525577+00:00 host postgres 10600 - -  msg`
 * glibc's syslog(3) writes `tag: msg`, so the message rsyslog keeps begins with a space; the
 * file templates print it as is (3164) or after the structured-data field (5424, hence two spaces).
 */

export interface SyslogHeader {
  /** Program name (syslog_ident). */
  ident: string;
  /** Process id, or -1 when the line has none. */
  pid: number;
  /** Index where PostgreSQL's text (`[n-m] ...`) begins. */
  msgStart: number;
}

const SP = 0x20;

function digitsAt(s: string, i: number, end: number): number {
  let n = 0;
  if (i >= end) return -1;
  for (; i < end; i++) {
    const c = s.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/** Fills `out` and returns true, or returns false when the line is in none of the layouts. */
export function parseSyslogHeader(s: string, out: SyslogHeader): boolean {
  const c0 = s.charCodeAt(0);
  if (c0 === 0x3c) return parse5424(s, out);
  let i: number;
  if (c0 >= 0x30 && c0 <= 0x39) {
    i = s.indexOf(" ");
    if (i < 0) return false;
  } else {
    // `Mmm dd hh:mm:ss`, day padded with a space
    if (s.length < 16 || s.charCodeAt(15) !== SP || s.charCodeAt(3) !== SP) return false;
    i = 15;
  }
  const hostEnd = s.indexOf(" ", i + 1);
  if (hostEnd < 0) return false;
  const tagStart = hostEnd + 1;
  const colon = s.indexOf(":", tagStart);
  if (colon < 0) return false;
  const bracket = s.lastIndexOf("[", colon);
  if (bracket > tagStart && s.charCodeAt(colon - 1) === 0x5d) {
    out.ident = s.slice(tagStart, bracket);
    out.pid = digitsAt(s, bracket + 1, colon - 1);
  } else {
    out.ident = s.slice(tagStart, colon);
    out.pid = -1;
  }
  out.msgStart = s.charCodeAt(colon + 1) === SP ? colon + 2 : colon + 1;
  return true;
}

function parse5424(s: string, out: SyslogHeader): boolean {
  const gt = s.indexOf(">");
  if (gt < 0 || gt > 4) return false;
  const versionEnd = s.indexOf(" ", gt);
  const tsEnd = versionEnd < 0 ? -1 : s.indexOf(" ", versionEnd + 1);
  const hostEnd = tsEnd < 0 ? -1 : s.indexOf(" ", tsEnd + 1);
  const appEnd = hostEnd < 0 ? -1 : s.indexOf(" ", hostEnd + 1);
  const procEnd = appEnd < 0 ? -1 : s.indexOf(" ", appEnd + 1);
  const msgidEnd = procEnd < 0 ? -1 : s.indexOf(" ", procEnd + 1);
  if (msgidEnd < 0) return false;
  out.ident = s.slice(hostEnd + 1, appEnd);
  out.pid = s.charCodeAt(appEnd + 1) === 0x2d ? -1 : digitsAt(s, appEnd + 1, procEnd);
  let j = msgidEnd + 1;
  if (s.charCodeAt(j) === 0x2d) j++;
  else {
    // [id k="v"]... : values may hold `]` escaped as `\]`
    while (s.charCodeAt(j) === 0x5b) {
      j++;
      while (j < s.length && s.charCodeAt(j) !== 0x5d) j += s.charCodeAt(j) === 0x5c ? 2 : 1;
      j++;
    }
  }
  if (j < s.length && s.charCodeAt(j) === SP) j++;
  if (j < s.length && s.charCodeAt(j) === SP) j++; // glibc's space after `tag:`
  out.msgStart = j;
  return true;
}

/** PostgreSQL's `[seq-chunk] ` (or `[chunk] ` with syslog_sequence_numbers off) before each chunk. */
export interface ChunkHeader {
  /** Sequence number, or -1 with syslog_sequence_numbers off. */
  seq: number;
  /** Chunk number from 1, or 0 when the text had no `[..] ` header. */
  chunk: number;
  /** Index where the chunk's text begins. */
  textStart: number;
}

export function parseChunkHeader(s: string, start: number, out: ChunkHeader): void {
  out.seq = -1;
  out.chunk = 0;
  out.textStart = start;
  if (s.charCodeAt(start) !== 0x5b) return;
  const close = s.indexOf("] ", start);
  if (close < 0) return;
  const dash = s.indexOf("-", start);
  if (dash > start && dash < close) {
    const seq = digitsAt(s, start + 1, dash);
    const chunk = digitsAt(s, dash + 1, close);
    if (seq < 0 || chunk <= 0) return;
    out.seq = seq;
    out.chunk = chunk;
  } else {
    const chunk = digitsAt(s, start + 1, close);
    if (chunk <= 0) return;
    out.chunk = chunk;
  }
  out.textStart = close + 2;
}
