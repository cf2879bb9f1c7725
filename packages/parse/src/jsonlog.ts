/**
 * PostgreSQL jsonlog (15+) → LogRecord: one JSON object per line. A hand scanner reads the flat
 * objects PostgreSQL writes (string and integer values, no whitespace) without JSON.parse; any
 * line it does not recognise goes to JSON.parse, so valid JSON is never rejected for its layout.
 */
import {
  asBuffer,
  BACKSLASH,
  ByteCarry,
  decodeEscapedJson,
  isAsciiRange,
  isUtf8Range,
  LF,
  QUOTE,
  type SliceBuffer,
} from "./_bytes.ts";
import { unescapeJsonString } from "./_json-string.ts";
import { formatLocation } from "./_record.ts";
import { blankRecord } from "./blank-record.ts";
import { ParseErrorCode } from "./errors.ts";
import { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
import type { LogParser, LogRecord, ParserOptions, RecordSink } from "./types.ts";

/** jsonlog keys in the order PostgreSQL writes them (elog.c write_jsonlog). */
const KEYS = [
  "timestamp",
  "user",
  "dbname",
  "pid",
  "remote_host",
  "remote_port",
  "session_id",
  "line_num",
  "ps",
  "session_start",
  "vxid",
  "txid",
  "error_severity",
  "state_code",
  "message",
  "detail",
  "hint",
  "internal_query",
  "internal_position",
  "context",
  "statement",
  "cursor_position",
  "func_name",
  "file_name",
  "file_line_num",
  "application_name",
  "backend_type",
  "leader_pid",
  "query_id",
] as const;
type Key = (typeof KEYS)[number];
const KEY_BYTES = KEYS.map((k) => Buffer.from(k, "latin1"));
const K = Object.fromEntries(KEYS.map((k, i) => [k, i])) as Record<Key, number>;
/** Every key followed by `":`, back to back, for knownKey(): KEY_START[k], KEY_LEN[k] bytes. */
const KEY_TABLE = new Uint8Array(Buffer.from(KEYS.map((k) => `${k}":`).join(""), "latin1"));
const KEY_START = new Int32Array(KEYS.length);
const KEY_LEN = new Int32Array(KEYS.length);
for (let k = 0, at = 0; k < KEYS.length; k++) {
  KEY_START[k] = at;
  KEY_LEN[k] = KEYS[k]!.length + 2;
  at += KEY_LEN[k]!;
}

/** jsonlog omits state_code when it is 00000 (csvlog prints it): fill it in so formats agree. */
const SUCCESSFUL_COMPLETION = "00000";
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
/** Digits an integer may have for n*10+d to be exact (below 2^53). */
const MAX_EXACT_DIGITS = 15;

/** Keys whose value is a number in LogRecord (read from the digits without a string). */
const INT_KEY = new Uint8Array(KEYS.length);
for (const key of ["pid", "line_num", "internal_position", "cursor_position", "leader_pid"] as const)
  INT_KEY[K[key]] = 1;

/** Bytes a JSON string body holds as they are: all but `"`, `\\` and control characters (< 0x20). */
const PLAIN = new Uint8Array(256).fill(1);
PLAIN.fill(0, 0, 0x20);
PLAIN[QUOTE] = 0;
PLAIN[BACKSLASH] = 0;

/** Reads PostgreSQL jsonlog from chunks split anywhere. */
export function createJsonlogParser(sink: RecordSink, options: ParserOptions = {}): LogParser {
  return new JsonlogParser(sink, options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
}

class JsonlogParser implements LogParser {
  private readonly sink: RecordSink;
  private readonly maxRecordBytes: number;
  private readonly carry = new ByteCarry();
  private base = 0;
  /** Inside an over-long line: drop bytes up to its newline. */
  private skipping = false;
  private skipStart = 0;
  private nextKey = 0;
  private buf: SliceBuffer = Buffer.alloc(0) as SliceBuffer;
  private text: string | null = null;
  private textStart = 0;

  constructor(sink: RecordSink, maxRecordBytes: number) {
    this.sink = sink;
    this.maxRecordBytes = maxRecordBytes;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.carry.length === 0) {
      const buf = asBuffer(chunk);
      const used = this.process(buf, false);
      if (used < buf.length) this.carry.keep(buf, used, buf.length);
      this.base += used;
      return;
    }
    this.carry.append(chunk);
    if (chunk.indexOf(LF) < 0 && this.carry.length <= this.maxRecordBytes) return;
    const used = this.process(this.carry.buf.subarray(0, this.carry.length) as SliceBuffer, false);
    this.carry.discard(used);
    this.base += used;
  }

  end(): void {
    const used = this.process(this.carry.buf.subarray(0, this.carry.length) as SliceBuffer, true);
    this.carry.discard(used);
    this.base += used;
  }

  private process(buf: SliceBuffer, final: boolean): number {
    const len = buf.length;
    this.buf = buf;
    const ascii = isAsciiRange(buf, 0, len);
    let pos = 0;
    while (pos < len) {
      const nl = buf.indexOf(LF, pos);
      if (this.skipping) {
        if (nl < 0) {
          if (!final) return len;
          this.tooLarge(this.base + len);
          return len;
        }
        this.tooLarge(this.base + nl + 1);
        pos = nl + 1;
        continue;
      }
      if (nl < 0) {
        if (!final) {
          if (len - pos <= this.maxRecordBytes) return pos;
          this.skipping = true;
          this.skipStart = this.base + pos;
          return len;
        }
        this.malformed(ParseErrorCode.TRUNCATED_RECORD, "input ended inside a line (no newline)", pos, len);
        return len;
      }
      const end = nl + 1;
      if (end - pos > this.maxRecordBytes) {
        this.malformed(ParseErrorCode.RECORD_TOO_LARGE, "line larger than maxRecordBytes", pos, end);
      } else {
        this.line(buf, pos, nl, end, ascii);
      }
      pos = end;
    }
    return len;
  }

  private tooLarge(at: number): void {
    this.skipping = false;
    this.sink.malformed({
      code: ParseErrorCode.RECORD_TOO_LARGE,
      reason: "line larger than maxRecordBytes",
      offset: this.skipStart,
      size: at - this.skipStart,
    });
  }

  private malformed(code: string, reason: string, start: number, end: number): void {
    this.sink.malformed({ code, reason, offset: this.base + start, size: end - start });
  }

  /** One line [start, nl) whose newline ends at `end`. */
  private line(buf: SliceBuffer, start: number, nl: number, end: number, ascii: boolean): void {
    if (ascii || isAsciiRange(buf, start, nl)) {
      this.text = buf.latin1Slice(start, nl);
      this.textStart = start;
    } else if (isUtf8Range(buf, start, nl)) {
      this.text = null;
    } else {
      // Not UTF-8 (a SQL_ASCII database): kept, with the bytes escaped and the record flagged.
      this.text = null;
      const record = this.slowPath(decodeEscapedJson(buf, start, nl), start, end);
      if (record === undefined) {
        this.malformed(ParseErrorCode.INVALID_JSON, "line is not a jsonlog object", start, end);
      } else {
        record.invalidUtf8 = true;
        this.sink.record(record);
      }
      return;
    }
    const record =
      this.scan(buf, start, nl, end) ?? this.slowPath(this.text ?? buf.utf8Slice(start, nl), start, end);
    if (record === undefined) {
      this.malformed(ParseErrorCode.INVALID_JSON, "line is not a jsonlog object", start, end);
    } else {
      this.sink.record(record);
    }
  }

  private str(s: number, e: number): string {
    const text = this.text;
    return text !== null ? text.slice(s - this.textStart, e - this.textStart) : this.buf.utf8Slice(s, e);
  }

  /**
   * The key at `s` (after its opening quote) when it is one of KEYS written as PostgreSQL writes
   * it, closing quote and colon included: compared in place, trying the key PostgreSQL writes
   * next first. -1 otherwise (unknown, escaped, spaced), and `key()` decides.
   */
  private knownKey(buf: Uint8Array, s: number): number {
    const first = buf[s];
    for (let pass = 0, k = this.nextKey; pass < KEYS.length; pass++, k = k + 1 === KEYS.length ? 0 : k + 1) {
      let t = KEY_START[k]!;
      if (KEY_TABLE[t] !== first) continue;
      const n = KEY_LEN[k]!;
      let j = 1;
      t++;
      while (j < n && KEY_TABLE[t] === buf[s + j]) {
        j++;
        t++;
      }
      if (j === n) {
        this.nextKey = k + 1 === KEYS.length ? 0 : k + 1;
        return k;
      }
    }
    return -1;
  }

  /** Key index of the bytes [s, e), trying the order PostgreSQL writes first; -1 when unknown. */
  private key(buf: Uint8Array, s: number, e: number): number {
    const n = e - s;
    for (let pass = 0, k = this.nextKey; pass < KEYS.length; pass++, k = k + 1 === KEYS.length ? 0 : k + 1) {
      const kb = KEY_BYTES[k]!;
      if (kb.length !== n || kb[0] !== buf[s]) continue;
      let j = 1;
      while (j < n && kb[j] === buf[s + j]) j++;
      if (j === n) {
        this.nextKey = k + 1 === KEYS.length ? 0 : k + 1;
        return k;
      }
    }
    return -1;
  }

  // Kept whole (~100 lines): the per-record hot path, one pass over the line's keys in PostgreSQL's order; split, the cursor would go through calls.
  /** The fast path: PostgreSQL's own layout. Undefined when the line needs JSON.parse. */
  private scan(buf: SliceBuffer, start: number, nl: number, end: number): LogRecord | undefined {
    const r = blankRecord(this.base + start, end - start);
    let remotePort: string | null = null;
    let func: string | null = null;
    let file: string | null = null;
    let fileLine: string | null = null;
    let sawMessage = false;
    this.nextKey = 0;
    let i = start;
    if (buf[i] !== LBRACE) return undefined;
    i++;
    if (buf[i] !== RBRACE) {
      for (;;) {
        if (buf[i] !== QUOTE) return undefined;
        const ks = i + 1;
        let k = this.knownKey(buf, ks);
        if (k >= 0) {
          i = ks + KEY_LEN[k]!;
        } else {
          let ke = ks;
          while (ke < nl && buf[ke] !== QUOTE && buf[ke] !== BACKSLASH) ke++;
          if (buf[ke] !== QUOTE || ke >= nl) return undefined;
          k = this.key(buf, ks, ke);
          i = ke + 1;
          if (buf[i] !== COLON) return undefined;
          i++;
        }
        let text = "";
        let isString = true;
        let int: number | null = null;
        if (buf[i] === QUOTE) {
          const vs = i + 1;
          let j = vs;
          let escaped = false;
          // The line's newline (at `nl`) is not PLAIN, so this loop needs no bounds check.
          for (;;) {
            while (PLAIN[buf[j]!] === 1) j++;
            const b = buf[j]!;
            if (b === QUOTE) break;
            if (b !== BACKSLASH) return undefined; // a control character (or the newline)
            escaped = true;
            j += 2;
            if (j >= nl) return undefined;
          }
          i = j + 1;
          if (k < 0) text = "";
          else if (escaped) {
            const v = unescapeJsonString(this.str(vs, j));
            if (v === undefined) return undefined;
            text = v;
          } else text = this.str(vs, j);
        } else {
          // PostgreSQL writes only integers unquoted; anything else goes to JSON.parse.
          const vs = i;
          if (buf[i] === MINUS) i++;
          const ds = i;
          let n = 0;
          for (let d = buf[i]! - 0x30; d >= 0 && d <= 9; d = buf[i]! - 0x30) {
            n = n * 10 + d;
            i++;
          }
          if (i === ds || (buf[ds] === 0x30 && i - ds > 1)) return undefined;
          isString = false;
          if (k >= 0) {
            if (INT_KEY[k] === 1 && i - ds <= MAX_EXACT_DIGITS) int = vs === ds ? n : -n;
            else text = this.str(vs, i);
          }
        }
        if (int !== null) this.assignInt(r, k, int);
        else if (k >= 0) {
          if (!this.assign(r, k, text, isString)) {
            switch (k) {
              case K.remote_port:
                remotePort = text;
                break;
              case K.func_name:
                func = text;
                break;
              case K.file_name:
                file = text;
                break;
              case K.file_line_num:
                fileLine = text;
                break;
            }
          }
          if (k === K.message) sawMessage = true;
        }
        const c = buf[i];
        if (c === COMMA) {
          i++;
          continue;
        }
        if (c === RBRACE) break;
        return undefined;
      }
    }
    if (i + 1 !== nl) return undefined;
    if (!sawMessage || r.timestamp === null) return undefined;
    if (remotePort !== null && r.remoteHost !== null) r.remoteHost = `${r.remoteHost}:${remotePort}`;
    if (file !== null || func !== null) r.location = formatLocation(func, file, fileLine);
    if (r.sqlState === null) r.sqlState = SUCCESSFUL_COMPLETION;
    return r;
  }

  /**
   * Stores a value; false for keys that are combined afterwards (port, location parts). Case
   * labels are the KEYS indexes as literals, so the switch compiles to a jump table.
   */
  private assign(r: LogRecord, k: number, v: string, isString: boolean): boolean {
    switch (k) {
      case 0: // timestamp
        r.timestamp = v;
        return true;
      case 1: // user
        r.user = v;
        return true;
      case 2: // dbname
        r.database = v;
        return true;
      case 3: // pid
        r.pid = toInt(v, isString);
        return true;
      case 4: // remote_host
        r.remoteHost = v;
        return true;
      case 6: // session_id
        r.sessionId = v;
        return true;
      case 7: // line_num
        r.sessionLine = toInt(v, isString);
        return true;
      case 8: // ps
        r.commandTag = v;
        return true;
      case 9: // session_start
        r.sessionStart = v;
        return true;
      case 10: // vxid
        r.virtualTransactionId = v;
        return true;
      case 11: // txid
        r.transactionId = v;
        return true;
      case 12: // error_severity
        r.severity = v;
        return true;
      case 13: // state_code
        r.sqlState = v;
        return true;
      case 14: // message
        r.message = v;
        return true;
      case 15: // detail
        r.detail = v;
        return true;
      case 16: // hint
        r.hint = v;
        return true;
      case 17: // internal_query
        r.internalQuery = v;
        return true;
      case 18: // internal_position
        r.internalPosition = toInt(v, isString);
        return true;
      case 19: // context
        r.context = v;
        return true;
      case 20: // statement
        r.query = v;
        return true;
      case 21: // cursor_position
        r.queryPosition = toInt(v, isString);
        return true;
      case 25: // application_name
        r.applicationName = v;
        return true;
      case 26: // backend_type
        r.backendType = v;
        return true;
      case 27: // leader_pid
        r.leaderPid = toInt(v, isString);
        return true;
      case 28: // query_id
        r.queryId = v;
        return true;
      default:
        return false;
    }
  }

  /** An integer key's value read from its digits (1–15 of them, so exact). */
  private assignInt(r: LogRecord, k: number, n: number): void {
    switch (k) {
      case 3: // pid
        r.pid = n;
        break;
      case 7: // line_num
        r.sessionLine = n;
        break;
      case 18: // internal_position
        r.internalPosition = n;
        break;
      case 21: // cursor_position
        r.queryPosition = n;
        break;
      case 27: // leader_pid
        r.leaderPid = n;
        break;
    }
  }

  /** Any other valid JSON object: JSON.parse, keeping integers as printed (query_id is 64-bit). */
  private slowPath(line: string, start: number, end: number): LogRecord | undefined {
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      return undefined;
    }
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return undefined;
    const o = obj as Record<string, unknown>;
    if (typeof o.timestamp !== "string" || typeof o.message !== "string") return undefined;
    const r = blankRecord(this.base + start, end - start);
    let port: string | null = null;
    let func: string | null = null;
    let file: string | null = null;
    let fileLine: string | null = null;
    for (const name of Object.keys(o)) {
      const k = (K as Record<string, number | undefined>)[name];
      const value = o[name];
      if (k === undefined || value === null || value === undefined) continue;
      let v: string;
      if (typeof value === "string") v = value;
      else if (typeof value === "number") v = rawNumber(line, name) ?? String(value);
      else continue;
      if (this.assign(r, k, v, typeof value === "string")) continue;
      if (k === K.remote_port) port = v;
      else if (k === K.func_name) func = v;
      else if (k === K.file_name) file = v;
      else if (k === K.file_line_num) fileLine = v;
    }
    if (port !== null && r.remoteHost !== null) r.remoteHost = `${r.remoteHost}:${port}`;
    if (file !== null || func !== null) r.location = formatLocation(func, file, fileLine);
    if (r.sqlState === null) r.sqlState = SUCCESSFUL_COMPLETION;
    return r;
  }
}

function toInt(v: string, isString: boolean): number | null {
  if (isString && !/^-?\d+$/.test(v)) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** The digits of a numeric member as printed, so 64-bit values keep every digit. */
function rawNumber(line: string, name: string): string | undefined {
  const m = new RegExp(`"${name}"\\s*:\\s*(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)`).exec(line);
  return m?.[1];
}
