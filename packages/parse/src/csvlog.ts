/**
 * PostgreSQL csvlog → LogRecord. Field boundaries come from a purpose-built splitter in
 * WebAssembly (CsvFieldScanner: it knows a record ends at the first newline outside quotes). Each
 * input is also read as one latin1 string (one char per byte, so indexes stay byte offsets): the
 * fields of an ASCII record are substrings of it; a record with non-ASCII bytes decodes its fields
 * from the bytes as UTF-8, and one with bytes that are not UTF-8 escapes them (decodeEscaped).
 */

import { BytePool } from "./_byte-pool.ts";
import {
  asBuffer,
  ByteCarry,
  decodeEscaped,
  isAsciiRange,
  isUtf8Range,
  LF,
  parseIntBytes,
  QUOTE,
  type SliceBuffer,
} from "./_bytes.ts";
import {
  CsvFieldScanner,
  FIELD_ESCAPED,
  FIELD_UNQUOTED,
  SCAN_BAD_QUOTE,
  SCAN_INCOMPLETE_QUOTED,
} from "./_csv-fields.ts";
import { findTimestampLine, NO_PENDING_LINE } from "./_resync.ts";
import { AUDIT_PREFIX, AuditPayloadError, parseAuditPayloadAt } from "./audit-payload.ts";
import { ParseErrorCode } from "./errors.ts";
import { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
import type {
  AuditEntry,
  AuditMarker,
  AuditView,
  AuditViewSink,
  LogParser,
  LogRecord,
  ParserOptions,
  RecordSink,
} from "./types.ts";

/** Column counts PostgreSQL writes: ≤12 (23), 13 (24, backend_type), 14–17 (26, leader_pid, query_id). */
const COLUMNS_PG12 = 23;
const COLUMNS_PG13 = 24;
const COLUMNS_PG14 = 26;
/** The message's column. */
const MESSAGE = 13;
/** Columns an AuditView reads. */
const TIMESTAMP = 0;
const USER = 1;
const DATABASE = 2;
const PID = 3;
const SESSION_ID = 5;
const VXID = 9;
const COMMA = 44;
/** The view's uses of its BytePool: the columns of few values (user and database as 1 and 2). */
const USE_AUDIT_TYPE = 3;
const USE_CLASS = 4;
const USE_COMMAND = 5;
const USE_OBJECT_TYPE = 6;
const USE_OBJECT_NAME = 7;
const USES = 8;
/** `AUDIT: ` as bytes. */
const AUDIT_BYTES = [...AUDIT_PREFIX].map((c) => c.charCodeAt(0));
const MARKERS: readonly AuditMarker[] = ["<not logged>", "<none>", "<previously logged>"];

/** Reads PostgreSQL csvlog (23, 24 or 26 columns) from chunks split anywhere. */
export function createCsvlogParser(sink: RecordSink, options: ParserOptions = {}): LogParser {
  const lean = options.omitUntalliedFields === true;
  return new CsvlogParser(
    sink,
    options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES,
    lean || options.omitUnreadFields === true,
    lean,
    options.decodeAuditEntries === true,
    options.auditView,
  );
}

class CsvlogParser implements LogParser {
  private readonly sink: RecordSink;
  private readonly maxRecordBytes: number;
  /** Leave UNREAD_FIELDS null (ParserOptions.omitUnreadFields). */
  private readonly omit: boolean;
  /** Leave UNTALLIED_FIELDS null too (ParserOptions.omitUntalliedFields). */
  private readonly omitUntallied: boolean;
  /** Decode pgAudit entries from `chars` (ParserOptions.decodeAuditEntries). */
  private readonly decode: boolean;
  private readonly carry = new ByteCarry();
  /** Absolute source offset of the first byte of the carry (or of the chunk being parsed). */
  private base = 0;
  /** Quote parity over the carry, so a record split over many chunks is scanned once. */
  private parityPos = 0;
  private parityInQuote = false;
  /** Skipping bad input until a line that starts like a record. */
  private skipping = false;
  private skipStart = 0;
  private skipScan = 0;
  private skipCode = "";
  private skipReason = "";
  /** Field boundaries of the record being read (indexes into `buf`). */
  private readonly fields = new CsvFieldScanner();
  // The input being parsed, as bytes and as latin1 text (same indexes).
  private buf: SliceBuffer = Buffer.alloc(0) as SliceBuffer;
  private chars = "";
  /** Whether the record being decoded is ASCII: its fields are substrings of `chars`. */
  private asciiRecord = false;
  /** Whether the record being decoded is not UTF-8: its fields are decoded with escapes. */
  private escaped = false;
  /** ParserOptions.auditView, the view it is given, and the tables its strings come from. */
  private readonly viewSink: AuditViewSink | undefined;
  private readonly view: AuditView = {
    offset: 0,
    size: 0,
    pid: 0,
    timestamp: null,
    user: null,
    database: null,
    sessionId: "",
    virtualTransactionId: null,
    auditType: "",
    statementId: 0,
    substatementId: 0,
    class: "",
    command: "",
    objectType: "",
    objectName: "",
    statement: "",
    parameter: "<none>",
  };
  private readonly pool = new BytePool(USES);

  constructor(
    sink: RecordSink,
    maxRecordBytes: number,
    omit: boolean,
    omitUntallied: boolean,
    decode: boolean,
    viewSink: AuditViewSink | undefined,
  ) {
    this.sink = sink;
    this.maxRecordBytes = maxRecordBytes;
    this.omit = omit;
    this.omitUntallied = omitUntallied;
    this.decode = decode;
    this.viewSink = viewSink;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.carry.length === 0) {
      const buf = asBuffer(chunk);
      const used = this.process(buf, false);
      if (used < buf.length) this.carry.keep(buf, used, buf.length);
      this.base += used;
    } else {
      this.carry.append(chunk);
      if (!this.skipping && !this.recordMayBeComplete()) return;
      const used = this.process(this.carry.buf.subarray(0, this.carry.length) as SliceBuffer, false);
      this.carry.discard(used);
      this.base += used;
    }
    this.parityPos = 0;
    this.parityInQuote = false;
  }

  end(): void {
    const used = this.process(this.carry.buf.subarray(0, this.carry.length) as SliceBuffer, true);
    this.carry.discard(used);
    this.base += used;
    this.parityPos = 0;
    this.parityInQuote = false;
  }

  /**
   * Whether the carried partial record may now end: a newline outside quotes appeared (or the
   * record outgrew the limit). Resumes where the last call stopped.
   */
  private recordMayBeComplete(): boolean {
    const b = this.carry.buf;
    const len = this.carry.length;
    if (len > this.maxRecordBytes) return true;
    let i = this.parityPos;
    let inQuote = this.parityInQuote;
    let found = false;
    while (i < len) {
      if (inQuote) {
        const q = b.indexOf(QUOTE, i);
        if (q < 0 || q >= len) {
          i = len;
          break;
        }
        inQuote = false;
        i = q + 1;
      } else {
        const c = b[i++];
        if (c === QUOTE) inQuote = true;
        else if (c === LF) {
          found = true;
          break;
        }
      }
    }
    this.parityPos = i;
    this.parityInQuote = inQuote;
    return found;
  }

  /** Parses whole records in `buf`; returns how many bytes it consumed (the rest is carried). */
  private process(buf: SliceBuffer, final: boolean): number {
    const len = buf.length;
    this.buf = buf;
    const ascii = isAsciiRange(buf, 0, len);
    this.chars = buf.latin1Slice(0, len);
    this.fields.load(buf);
    let pos = 0;
    while (pos < len) {
      if (this.skipping) {
        const from = Math.max(pos, this.skipScan - this.base);
        const next = findTimestampLine(buf, from, len);
        if (next >= 0) {
          this.endSkip(this.base + next);
          pos = next;
          continue;
        }
        if (final) break;
        // Keep only the newline whose line could not be judged yet; the skipped bytes are counted.
        const keep = next === NO_PENDING_LINE ? len : -next - 2;
        this.skipScan = this.base + keep;
        return keep;
      }
      const end = this.fields.scan(pos, len);
      if (end >= 0) {
        const size = end - pos;
        if (size > this.maxRecordBytes) {
          this.startSkip(pos, ParseErrorCode.RECORD_TOO_LARGE, "record larger than maxRecordBytes");
        } else if (this.emit(buf, pos, end, ascii)) {
          pos = end;
        }
        continue;
      }
      if (end === SCAN_BAD_QUOTE) {
        this.startSkip(pos, ParseErrorCode.BAD_CSV, "a quote where csvlog has none: not a record");
        continue;
      }
      if (!final) {
        if (len - pos > this.maxRecordBytes) {
          this.startSkip(pos, ParseErrorCode.RECORD_TOO_LARGE, "record larger than maxRecordBytes");
          continue;
        }
        return pos;
      }
      // A quote still open at the end swallowed later records when a record start follows it;
      // otherwise the last record was simply cut off.
      if (end === SCAN_INCOMPLETE_QUOTED && findTimestampLine(buf, pos, len) >= 0) {
        this.startSkip(pos, ParseErrorCode.UNTERMINATED_QUOTE, "quoted field not closed before end of input");
        continue;
      }
      this.sink.malformed({
        code: ParseErrorCode.TRUNCATED_RECORD,
        reason: "input ended inside a record (no terminating newline)",
        offset: this.base + pos,
        size: len - pos,
      });
      return len;
    }
    if (final && this.skipping) this.endSkip(this.base + len);
    return len;
  }

  private startSkip(pos: number, code: string, reason: string): void {
    this.skipping = true;
    this.skipStart = this.base + pos;
    this.skipScan = this.base + pos;
    this.skipCode = code;
    this.skipReason = reason;
  }

  private endSkip(at: number): void {
    this.skipping = false;
    this.sink.malformed({
      code: this.skipCode,
      reason: this.skipReason,
      offset: this.skipStart,
      size: at - this.skipStart,
    });
  }

  /** Builds and sends the record whose fields `scan` found; false (skipping) when it is malformed. */
  private emit(buf: SliceBuffer, start: number, end: number, ascii: boolean): boolean {
    const n = this.fields.count;
    if (n !== COLUMNS_PG14 && n !== COLUMNS_PG13 && n !== COLUMNS_PG12) {
      this.startSkip(
        start,
        ParseErrorCode.BAD_FIELD_COUNT,
        `record has ${n} columns, csvlog has 23, 24 or 26`,
      );
      return false;
    }
    this.escaped = false;
    if (ascii || isAsciiRange(buf, start, end)) {
      this.asciiRecord = true;
    } else if (isUtf8Range(buf, start, end)) {
      this.asciiRecord = false;
    } else {
      // Not UTF-8 (a SQL_ASCII database): kept, with the bytes escaped and the record flagged.
      this.asciiRecord = false;
      this.escaped = true;
    }
    if (
      this.viewSink !== undefined &&
      this.asciiRecord &&
      this.readView(start, end) &&
      this.viewSink.entry(this.view)
    )
      return true;
    // One object shape either way; the fields of UNREAD_FIELDS (UNTALLIED_FIELDS) stay null when omitted.
    const all = !this.omit;
    const tallied = !this.omitUntallied;
    const record: LogRecord = {
      offset: this.base + start,
      size: end - start,
      timestamp: this.str(0),
      user: this.str(1),
      database: this.str(2),
      pid: this.int(3),
      remoteHost: tallied ? this.str(4) : null,
      sessionId: this.str(5),
      sessionLine: tallied ? this.int(6) : null,
      commandTag: all ? this.str(7) : null,
      sessionStart: all ? this.str(8) : null,
      virtualTransactionId: this.str(9),
      transactionId: all ? this.str(10) : null,
      severity: this.str(11) ?? "",
      sqlState: this.str(12),
      message: this.str(13) ?? "",
      detail: all ? this.str(14) : null,
      hint: all ? this.str(15) : null,
      internalQuery: all ? this.str(16) : null,
      internalPosition: all ? this.int(17) : null,
      context: all ? this.str(18) : null,
      query: this.str(19),
      queryPosition: all ? this.int(20) : null,
      location: all ? this.str(21) : null,
      applicationName: tallied ? this.str(22) : null,
      backendType: all && n >= COLUMNS_PG13 ? this.str(23) : null,
      leaderPid: all && n === COLUMNS_PG14 ? this.int(24) : null,
      queryId: all && n === COLUMNS_PG14 ? this.str(25) : null,
    };
    if (this.escaped) record.invalidUtf8 = true;
    if (this.decode && this.asciiRecord) this.sink.record(record, this.auditEntry());
    else this.sink.record(record);
    return true;
  }

  /**
   * The pgAudit entry of the ASCII record being decoded, read from `chars` where its message lies
   * (ParserOptions.decodeAuditEntries); undefined for the sink to decode: no `AUDIT: `, doubled
   * quotes (the message is unescaped first), or a payload that is not pgAudit's (reported there).
   */
  private auditEntry(): AuditEntry | undefined {
    const f = this.fields;
    const s = f.starts[MESSAGE]!;
    const e = f.ends[MESSAGE]!;
    if (
      f.kinds[MESSAGE] === FIELD_ESCAPED ||
      !this.chars.startsWith(AUDIT_PREFIX, s) ||
      e - s < AUDIT_PREFIX.length
    )
      return undefined;
    try {
      return parseAuditPayloadAt(this.chars, s, e);
    } catch (error) {
      if (error instanceof AuditPayloadError) return undefined;
      throw error;
    }
  }

  /**
   * Fills `view` from the ASCII record being decoded when it is an entry AuditView describes,
   * read from the bytes; false (nothing to offer) otherwise. Declines rather than decides: every
   * record it declines is built and decoded as before, so a payload is refused only there. Not
   * split: one pass over the payload in the decoder's order, its spans locals until all is known.
   */
  private readView(start: number, end: number): boolean {
    const f = this.fields;
    const kinds = f.kinds;
    const starts = f.starts;
    const ends = f.ends;
    const buf = this.buf;
    // A message with doubled quotes (csvlog's escape) is read where its only quotes are those of
    // a quoted statement without quotes: each leading field then holds no quote at all.
    const escaped = kinds[MESSAGE] === FIELD_ESCAPED;
    if (
      kinds[TIMESTAMP] === FIELD_ESCAPED ||
      kinds[USER] === FIELD_ESCAPED ||
      kinds[DATABASE] === FIELD_ESCAPED ||
      kinds[SESSION_ID] === FIELD_ESCAPED ||
      kinds[VXID] === FIELD_ESCAPED
    )
      return false;
    const ms = starts[MESSAGE]!;
    const limit = ends[MESSAGE]!;
    if (limit - ms < AUDIT_BYTES.length) return false;
    for (let i = 0; i < AUDIT_BYTES.length; i++) if (buf[ms + i] !== AUDIT_BYTES[i]) return false;
    const pid = this.int(PID);
    const ss = starts[SESSION_ID]!;
    const se = ends[SESSION_ID]!;
    if (pid === null || ss === se) return false;
    // The payload: the leading fields unquoted, each ended by a comma.
    let p = ms + AUDIT_BYTES.length;
    const typeAt = p;
    p = escaped ? plainFieldEnd(buf, p, limit) : fieldEnd(buf, p, limit);
    if (p < 0) return false;
    const typeEnd = p++;
    const statementId = counterAt(buf, p, limit);
    if (statementId < 0) return false;
    while (buf[p] !== COMMA) p++;
    p++;
    const substatementId = counterAt(buf, p, limit);
    if (substatementId < 0) return false;
    while (buf[p] !== COMMA) p++;
    const classAt = ++p;
    p = escaped ? plainFieldEnd(buf, p, limit) : fieldEnd(buf, p, limit);
    if (p < 0) return false;
    const classEnd = p;
    const commandAt = ++p;
    p = escaped ? plainFieldEnd(buf, p, limit) : fieldEnd(buf, p, limit);
    if (p < 0) return false;
    const commandEnd = p;
    const objectTypeAt = ++p;
    p = escaped ? plainFieldEnd(buf, p, limit) : fieldEnd(buf, p, limit);
    if (p < 0) return false;
    const objectTypeEnd = p;
    const objectNameAt = ++p;
    p = escaped ? plainFieldEnd(buf, p, limit) : fieldEnd(buf, p, limit);
    if (p < 0) return false;
    const objectNameEnd = p++;
    // The statement: unquoted, or quoted without doubled quotes; a comma after it.
    const chars = this.chars;
    let statementAt = p;
    let statementEnd: number;
    if (escaped) {
      // `""text"",`: the statement quoted, its text without quotes.
      if (p + 1 >= limit || buf[p] !== QUOTE || buf[p + 1] !== QUOTE) return false;
      const q = chars.indexOf('"', p + 2);
      if (q < 0 || q + 2 >= limit || buf[q + 1] !== QUOTE || buf[q + 2] !== COMMA) return false;
      statementAt = p + 2;
      statementEnd = q;
      p = q + 3;
    } else if (p < limit && buf[p] === QUOTE) {
      const q = chars.indexOf('"', p + 1);
      if (q < 0 || q + 1 >= limit || buf[q + 1] !== COMMA) return false;
      statementAt = p + 1;
      statementEnd = q;
      p = q + 2;
    } else {
      const c = chars.indexOf(",", p);
      if (c < 0 || c >= limit) return false;
      statementEnd = c;
      p = c + 1;
    }
    // PARAMETER, a marker, last (no ROWS).
    const parameter = markerAt(buf, p, limit);
    if (parameter === undefined) return false;
    const v = this.view;
    v.offset = this.base + start;
    v.size = end - start;
    v.pid = pid;
    const ts = starts[TIMESTAMP]!;
    const te = ends[TIMESTAMP]!;
    v.timestamp = te === ts && kinds[TIMESTAMP] === FIELD_UNQUOTED ? null : chars.slice(ts, te);
    v.user = this.name(USER);
    v.database = this.name(DATABASE);
    v.sessionId = chars.slice(ss, se);
    const vs = starts[VXID]!;
    const ve = ends[VXID]!;
    v.virtualTransactionId = ve === vs && kinds[VXID] === FIELD_UNQUOTED ? null : chars.slice(vs, ve);
    v.auditType = this.pool.of(USE_AUDIT_TYPE, buf, typeAt, typeEnd);
    v.statementId = statementId;
    v.substatementId = substatementId;
    v.class = this.pool.of(USE_CLASS, buf, classAt, classEnd);
    v.command = this.pool.of(USE_COMMAND, buf, commandAt, commandEnd);
    v.objectType =
      objectTypeEnd === objectTypeAt ? "" : this.pool.of(USE_OBJECT_TYPE, buf, objectTypeAt, objectTypeEnd);
    v.objectName =
      objectNameEnd === objectNameAt ? "" : this.pool.of(USE_OBJECT_NAME, buf, objectNameAt, objectNameEnd);
    v.statement = chars.slice(statementAt, statementEnd);
    v.parameter = parameter;
    return true;
  }

  /** Field k (user, database) from the names' table; null for an empty unquoted field. */
  private name(k: number): string | null {
    const f = this.fields;
    const s = f.starts[k]!;
    const e = f.ends[k]!;
    if (s === e) return f.kinds[k] === FIELD_UNQUOTED ? null : "";
    return this.pool.of(k, this.buf, s, e);
  }

  /** Field k as text; null for an empty unquoted field. */
  private str(k: number): string | null {
    const f = this.fields;
    const s = f.starts[k]!;
    const e = f.ends[k]!;
    const kind = f.kinds[k]!;
    if (kind === FIELD_UNQUOTED && s === e) return null;
    const v = this.asciiRecord
      ? this.chars.slice(s, e)
      : this.escaped
        ? decodeEscaped(this.buf, s, e)
        : this.buf.utf8Slice(s, e);
    return kind === FIELD_ESCAPED ? v.replaceAll('""', '"') : v;
  }

  private int(k: number): number | null {
    return parseIntBytes(this.buf, this.fields.starts[k]!, this.fields.ends[k]!);
  }
}

/**
 * Where the unquoted payload field at `p` ends (its comma), or -1: it is quoted (readField would
 * unquote it) or the payload ends first (too few fields: the decoder refuses it).
 */
function fieldEnd(buf: SliceBuffer, p: number, limit: number): number {
  if (p < limit && buf[p] === QUOTE) return -1;
  for (let i = p; i < limit; i++) if (buf[i] === COMMA) return i;
  return -1;
}

/** fieldEnd of a field that must hold no quote at all (an escaped message's). */
function plainFieldEnd(buf: SliceBuffer, p: number, limit: number): number {
  for (let i = p; i < limit; i++) {
    const c = buf[i];
    if (c === COMMA) return i;
    if (c === QUOTE) return -1;
  }
  return -1;
}

/** The counter of 1-15 digits at `p` ended by a comma (the decoder's fast path), or -1. */
function counterAt(buf: SliceBuffer, p: number, limit: number): number {
  let n = 0;
  let k = p;
  for (; k < limit; k++) {
    const d = buf[k]! - 48;
    if (d < 0 || d > 9) break;
    n = n * 10 + d;
  }
  const digits = k - p;
  return digits === 0 || digits > 15 || k >= limit || buf[k] !== COMMA ? -1 : n;
}

/** The marker that is the whole of `[p, limit)`, or undefined. */
function markerAt(buf: SliceBuffer, p: number, limit: number): AuditMarker | undefined {
  const n = limit - p;
  const m = n === 6 ? MARKERS[1]! : n === 12 ? MARKERS[0]! : n === 19 ? MARKERS[2]! : undefined;
  if (m === undefined) return undefined;
  for (let i = 0; i < n; i++) if (m.charCodeAt(i) !== buf[p + i]) return undefined;
  return m;
}
