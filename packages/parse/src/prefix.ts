/**
 * log_line_prefix compiler: turns a `log_line_prefix` setting into a matcher that finds where
 * the prefix ends on a stderr (or syslog) line, what each escape printed, and the severity word
 * (`LOG:  `) that PostgreSQL writes right after it.
 *
 * Formats follow PostgreSQL 15's `log_status_format()` in src/backend/utils/error/elog.c:
 * `%m` = `%Y-%m-%d %H:%M:%S.mmm %Z`, `%t`/`%s` without milliseconds, `%n` = epoch `secs.mmm`,
 * `%c` = `%lx.%x`, `%r` = `host(port)`, `%v` = `backendId/lxid` or nothing, `%P` = the parallel
 * leader's pid or nothing, `%Q` = `%lld`, `%a %u %d` print `[unknown]` when unset in a session
 * and nothing outside one, `%q` ends the prefix in processes without a client connection.
 * Padding `%-10u` / `%10u` pads with spaces to a width in bytes (C's `%*s`).
 */

/** The values a log_line_prefix carried on one line; null when the prefix has no such escape. */
export interface PrefixFields {
  timestamp: string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  /** `%r` as `host:port` (csvlog's connection_from), or `%h` alone. */
  remoteHost: string | null;
  sessionId: string | null;
  sessionLine: number | null;
  commandTag: string | null;
  sessionStart: string | null;
  virtualTransactionId: string | null;
  transactionId: string | null;
  sqlState: string | null;
  applicationName: string | null;
  backendType: string | null;
  leaderPid: number | null;
  queryId: string | null;
  /** The word before `:  ` after the prefix: LOG, ERROR, DETAIL, STATEMENT, ... */
  severity: string;
  /** Index in the line where the prefix ended (where the severity word starts). */
  prefixEnd: number;
}

export interface CompiledPrefix {
  /** The log_line_prefix this was compiled from. */
  readonly source: string;
  /**
   * Matches `line` from `start`: on success fills `out` and returns the index just after
   * `SEVERITY:  ` (where the message text begins); returns -1 when the line does not start
   * with this prefix followed by a severity word.
   */
  match(line: string, start: number, out: PrefixFields): number;
}

/** A fresh, all-null PrefixFields (one shape for every caller, so V8 keeps it monomorphic). */
export function createPrefixFields(): PrefixFields {
  return {
    timestamp: null,
    user: null,
    database: null,
    pid: null,
    remoteHost: null,
    sessionId: null,
    sessionLine: null,
    commandTag: null,
    sessionStart: null,
    virtualTransactionId: null,
    transactionId: null,
    sqlState: null,
    applicationName: null,
    backendType: null,
    leaderPid: null,
    queryId: null,
    severity: "",
    prefixEnd: 0,
  };
}

const LITERAL = 0;
const FIELD = 1;
const STOP_Q = 2;

interface Token {
  kind: number;
  /** Literal text, or the escape letter. */
  text: string;
  /** The escape letter's char code (0 for literals), for integer switches on the hot path. */
  code: number;
  /** Padding width: >0 right-aligned, <0 left-aligned, 0 none. */
  pad: number;
  /** A free-text escape (may contain spaces), matched against what follows it. */
  free: boolean;
}

const KNOWN_ESCAPES = "aubdrhpPtmnilcesvxQ";
const FREE_TEXT = "audrhbi";

/** Tokenizes like log_status_format: unknown escapes print nothing, a dangling `%` or `%-5` ends the prefix. */
function tokenize(prefix: string): Token[] {
  const tokens: Token[] = [];
  let literal = "";
  const flush = (): void => {
    if (literal !== "") tokens.push({ kind: LITERAL, text: literal, code: 0, pad: 0, free: false });
    literal = "";
  };
  for (let i = 0; i < prefix.length; i++) {
    const ch = prefix[i]!;
    if (ch !== "%") {
      literal += ch;
      continue;
    }
    i++;
    if (i >= prefix.length) break;
    if (prefix[i] === "%") {
      literal += "%";
      continue;
    }
    let pad = 0;
    // elog.c: `if (*p > '9') padding = 0; else process_log_prefix_padding(...)`.
    if (prefix.charCodeAt(i) <= 0x39) {
      let sign = 1;
      if (prefix[i] === "-") {
        sign = -1;
        i++;
        if (i >= prefix.length) break;
      }
      while (i < prefix.length && prefix.charCodeAt(i) >= 0x30 && prefix.charCodeAt(i) <= 0x39) {
        pad = pad * 10 + prefix.charCodeAt(i) - 0x30;
        i++;
      }
      if (i >= prefix.length) break;
      pad *= sign;
    }
    const esc = prefix[i]!;
    if (esc === "q") {
      flush();
      tokens.push({ kind: STOP_Q, text: "q", code: 0x71, pad: 0, free: false });
    } else if (KNOWN_ESCAPES.includes(esc)) {
      flush();
      tokens.push({ kind: FIELD, text: esc, code: esc.charCodeAt(0), pad, free: FREE_TEXT.includes(esc) });
    }
    // anything else: "format error - ignore it", prints nothing
  }
  flush();
  return tokens;
}

const SPACE = 0x20;
const COLON = 0x3a;

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x61 && c <= 0x66);
}
function isUpperAlnum(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || isDigit(c);
}
function isZoneChar(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || isDigit(c) || c === 0x2b || c === 0x2d;
}

/** Byte length of a JS string as UTF-8 (padding widths are in bytes). */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // 2 bytes below U+0800, 3 above, 4 for a surrogate pair (2 units, 2 bytes each)
    if (c >= 0x80) n += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return n;
}

const SEVERITIES: Record<string, string> = {};
for (const s of [
  "LOG",
  "ERROR",
  "FATAL",
  "PANIC",
  "WARNING",
  "NOTICE",
  "INFO",
  "DEBUG",
  "DEBUG1",
  "DEBUG2",
  "DEBUG3",
  "DEBUG4",
  "DEBUG5",
  "DETAIL",
  "HINT",
  "QUERY",
  "CONTEXT",
  "LOCATION",
  "STATEMENT",
  "BACKTRACE",
])
  SEVERITIES[s] = s;

/**
 * At `pos`: an upper-case word then `:  `. Returns the index after the two spaces, or -1.
 * Upper-case ASCII covers English and the Latin-script translations PostgreSQL ships.
 */
function matchSeverity(line: string, pos: number, out: PrefixFields): number {
  let i = pos;
  const n = line.length;
  while (i < n && isUpperAlnum(line.charCodeAt(i))) i++;
  if (i === pos || i + 2 >= n || line.charCodeAt(i) !== COLON) return -1;
  if (line.charCodeAt(i + 1) !== SPACE || line.charCodeAt(i + 2) !== SPACE) return -1;
  // LOG (every pgAudit entry) without slicing and looking the word up.
  if (
    i - pos === 3 &&
    line.charCodeAt(pos) === 0x4c &&
    line.charCodeAt(pos + 1) === 0x4f &&
    line.charCodeAt(pos + 2) === 0x47
  ) {
    out.severity = "LOG";
  } else {
    const word = line.slice(pos, i);
    out.severity = SEVERITIES[word] ?? word;
  }
  out.prefixEnd = pos;
  return i + 3;
}

/** End of a typed (fixed-shape) value starting at `pos`, or -1. */
function scanTyped(esc: number, line: string, pos: number): number {
  const n = line.length;
  let i = pos;
  switch (esc) {
    case 0x70: // p
    case 0x6c: // l
    case 0x78: // x
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      return i > pos ? i : -1;
    case 0x50: // P
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      return i; // may be empty: not a parallel worker
    case 0x51: // Q
      if (i < n && line.charCodeAt(i) === 0x2d) i++;
      {
        const d = i;
        while (i < n && isDigit(line.charCodeAt(i))) i++;
        return i > d ? i : -1;
      }
    case 0x63: {
      // c
      while (i < n && isHex(line.charCodeAt(i))) i++;
      if (i === pos || line.charCodeAt(i) !== 0x2e) return -1;
      const d = ++i;
      while (i < n && isHex(line.charCodeAt(i))) i++;
      return i > d ? i : -1;
    }
    case 0x76: {
      // v
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      if (i === pos) return pos; // empty: no virtual transaction
      if (line.charCodeAt(i) !== 0x2f) return -1;
      const d = ++i;
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      return i > d ? i : -1;
    }
    case 0x65: // e
      for (; i < pos + 5; i++) if (i >= n || !isUpperAlnum(line.charCodeAt(i))) return -1;
      return i;
    case 0x6e: {
      // n
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      if (i === pos || line.charCodeAt(i) !== 0x2e) return -1;
      const d = ++i;
      while (i < n && isDigit(line.charCodeAt(i))) i++;
      return i === d + 3 ? i : -1;
    }
    case 0x6d: // m
    case 0x74: // t
    case 0x73: // s
      return scanTimestamp(line, pos, esc === 0x6d);
    default:
      return -2; // free text
  }
}

/** `YYYY-MM-DD HH:MM:SS[.mmm] ZONE`. */
function scanTimestamp(line: string, pos: number, millis: boolean): number {
  const n = line.length;
  const fixed = millis ? 24 : 20;
  if (pos + fixed > n) return -1;
  for (let k = 0; k < fixed; k++) {
    const c = line.charCodeAt(pos + k);
    const ok =
      k === 4 || k === 7
        ? c === 0x2d
        : k === 10 || k === fixed - 1
          ? c === SPACE
          : k === 13 || k === 16
            ? c === COLON
            : millis && k === 19
              ? c === 0x2e
              : isDigit(c);
    if (!ok) return -1;
  }
  let i = pos + fixed;
  while (i < n && isZoneChar(line.charCodeAt(i))) i++;
  return i > pos + fixed ? i : -1;
}

/** The record's prefix fields from the values the escapes matched. */
function assignFields(tokens: Token[], values: (string | null)[], out: PrefixFields): void {
  const count = tokens.length;
  // %m (milliseconds) is what csvlog's log_time prints; prefer it, then %t, then %n.
  let m: string | null = null;
  let tt: string | null = null;
  let n: string | null = null;
  for (let t = 0; t < count; t++) {
    const tok = tokens[t]!;
    if (tok.kind !== FIELD) continue;
    const v = values[t] ?? null;
    switch (tok.code) {
      case 0x61: // %a
        out.applicationName = v === "[unknown]" ? null : v;
        break;
      case 0x75: // %u
        out.user = v === "[unknown]" ? null : v;
        break;
      case 0x64: // %d
        out.database = v === "[unknown]" ? null : v;
        break;
      case 0x72: // %r
        out.remoteHost = v === null ? null : hostPort(v);
        break;
      case 0x68: // %h
        if (out.remoteHost === null) out.remoteHost = v;
        break;
      case 0x62: // %b
        out.backendType = v;
        break;
      case 0x70: // %p
        out.pid = v === null ? null : Number(v);
        break;
      case 0x50: // %P
        out.leaderPid = v === null ? null : Number(v);
        break;
      case 0x6d: // %m
        m = v;
        break;
      case 0x74: // %t
        tt = v;
        break;
      case 0x6e: // %n
        n = v;
        break;
      case 0x69: // %i
        out.commandTag = v;
        break;
      case 0x65: // %e
        out.sqlState = v;
        break;
      case 0x63: // %c
        out.sessionId = v;
        break;
      case 0x6c: // %l
        out.sessionLine = v === null ? null : Number(v);
        break;
      case 0x73: // %s
        out.sessionStart = v;
        break;
      case 0x76: // %v
        out.virtualTransactionId = v;
        break;
      case 0x78: // %x
        out.transactionId = v;
        break;
      case 0x51: // %Q
        out.queryId = v;
        break;
    }
  }
  out.timestamp = m ?? tt ?? n;
}

/** Stores a padded field's value (trimmed of its padding) in `values[t]`, or rejects it. */
function setPadded(values: (string | null)[], t: number, raw: string, pad: number): boolean {
  if (pad === 0) {
    values[t] = raw === "" ? null : raw;
    return true;
  }
  const width = pad > 0 ? pad : -pad;
  const len = utf8Length(raw);
  if (len < width) return false;
  let v = raw;
  if (len === width) {
    let a = 0;
    let b = raw.length;
    if (pad > 0) while (a < b && raw.charCodeAt(a) === SPACE) a++;
    else while (b > a && raw.charCodeAt(b - 1) === SPACE) b--;
    v = raw.slice(a, b);
  }
  values[t] = v === "" ? null : v;
  return true;
}

/**
 * Compiles a log_line_prefix. Free-text escapes (`%a %u %d %r %h %b %i`) may contain spaces, so
 * they are matched against the literal text that follows them, trying the shortest value first
 * and backtracking when the rest of the line does not fit. Two free-text escapes separated by a
 * literal that also occurs inside the first value (`%a %u` with an application name holding a
 * space) cannot be told apart from the line alone; the shortest first value wins.
 */
export function compilePrefix(prefix: string): CompiledPrefix {
  const tokens = tokenize(prefix);
  const count = tokens.length;
  const values: (string | null)[] = new Array(count).fill(null);

  function step(line: string, t: number, pos: number, out: PrefixFields): number {
    if (t === count) return matchSeverity(line, pos, out);
    const tok = tokens[t]!;
    if (tok.kind === LITERAL) {
      return line.startsWith(tok.text, pos) ? step(line, t + 1, pos + tok.text.length, out) : -1;
    }
    if (tok.kind === STOP_Q) {
      const r = step(line, t + 1, pos, out);
      if (r >= 0) return r;
      // Not a session process: PostgreSQL stopped printing the prefix here.
      for (let k = t + 1; k < count; k++) values[k] = null;
      return matchSeverity(line, pos, out);
    }
    if (!tok.free) {
      // Typed value: skip right-alignment spaces, scan its shape, skip left-alignment spaces.
      let i = pos;
      if (tok.pad > 0) while (line.charCodeAt(i) === SPACE && i - pos < tok.pad) i++;
      let e = scanTyped(tok.code, line, i);
      if (e < 0 && tok.pad > 0) e = i; // all padding: the value was absent (%P, %v)
      if (e < 0) return -1;
      const raw = line.slice(pos, e);
      let end = e;
      if (tok.pad < 0) while (end - pos < -tok.pad && line.charCodeAt(end) === SPACE) end++;
      const r = step(line, t + 1, end, out);
      if (r >= 0) setPadded(values, t, tok.pad < 0 ? line.slice(pos, end) : raw, tok.pad);
      return r;
    }
    // Free text: candidate ends are the occurrences of what follows.
    const next = t + 1 < count ? tokens[t + 1]! : null;
    if (next !== null && next.kind === LITERAL) {
      for (let idx = line.indexOf(next.text, pos); idx >= 0; idx = line.indexOf(next.text, idx + 1)) {
        const r = step(line, t + 1, idx, out);
        if (r >= 0 && setPadded(values, t, line.slice(pos, idx), tok.pad)) return r;
      }
      return -1;
    }
    // Followed by another escape or by the severity: try every end (rare prefixes only).
    for (let idx = pos; idx <= line.length; idx++) {
      const r = step(line, t + 1, idx, out);
      if (r >= 0 && setPadded(values, t, line.slice(pos, idx), tok.pad)) return r;
    }
    return -1;
  }

  return {
    source: prefix,
    match(line: string, start: number, out: PrefixFields): number {
      for (let t = 0; t < count; t++) values[t] = null;
      const r = step(line, 0, start, out);
      if (r < 0) return -1;
      resetFields(out);
      assignFields(tokens, values, out);
      return r;
    },
  };
}

function resetFields(out: PrefixFields): void {
  out.timestamp = null;
  out.user = null;
  out.database = null;
  out.pid = null;
  out.remoteHost = null;
  out.sessionId = null;
  out.sessionLine = null;
  out.commandTag = null;
  out.sessionStart = null;
  out.virtualTransactionId = null;
  out.transactionId = null;
  out.sqlState = null;
  out.applicationName = null;
  out.backendType = null;
  out.leaderPid = null;
  out.queryId = null;
}

/** `%r` prints `host(port)`; csvlog's connection_from is `host:port`. `[local]` has no port. */
function hostPort(v: string): string {
  if (v.charCodeAt(v.length - 1) !== 0x29) return v;
  const open = v.lastIndexOf("(");
  if (open <= 0) return v;
  return `${v.slice(0, open)}:${v.slice(open + 1, -1)}`;
}
