/**
 * PostgreSQL csvlog → LogRecord. Field boundaries come from a purpose-built splitter in
 * WebAssembly (CsvFieldScanner: it knows a record ends at the first newline outside quotes). Each
 * input is also read as one latin1 string (one char per byte, so indexes stay byte offsets): the
 * fields of an ASCII record are substrings of it; a record with non-ASCII bytes decodes its fields
 * from the bytes as UTF-8, and one with bytes that are not UTF-8 escapes them (decodeEscaped).
 */
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
import type { AuditEntry, LogParser, LogRecord, ParserOptions, RecordSink } from "./types.ts";

/** Column counts PostgreSQL writes: ≤12 (23), 13 (24, backend_type), 14–17 (26, leader_pid, query_id). */
const COLUMNS_PG12 = 23;
const COLUMNS_PG13 = 24;
const COLUMNS_PG14 = 26;
/** The message's column. */
const MESSAGE = 13;

/** Reads PostgreSQL csvlog (23, 24 or 26 columns) from chunks split anywhere. */
export function createCsvlogParser(sink: RecordSink, options: ParserOptions = {}): LogParser {
  const lean = options.omitUntalliedFields === true;
  return new CsvlogParser(
    sink,
    options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES,
    lean || options.omitUnreadFields === true,
    lean,
    options.decodeAuditEntries === true,
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

  constructor(
    sink: RecordSink,
    maxRecordBytes: number,
    omit: boolean,
    omitUntallied: boolean,
    decode: boolean,
  ) {
    this.sink = sink;
    this.maxRecordBytes = maxRecordBytes;
    this.omit = omit;
    this.omitUntallied = omitUntallied;
    this.decode = decode;
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
