/**
 * stderr log files as PostgreSQL's logging collector writes them: each message starts with a
 * line `<log_line_prefix>SEVERITY:  text`; a newline inside a message is followed by a tab;
 * DETAIL/HINT/QUERY/CONTEXT/LOCATION/STATEMENT lines repeat the prefix and belong to the message
 * before them.
 *
 * A record is complete only when the next head line (or end()) shows nothing continues it, so
 * the parser holds one record back. Offsets and sizes count every line of a record, newlines
 * included. Lines that do not match the prefix (an extension writing raw to stderr, garbage)
 * are reported as PREFIX_MISMATCH together with any tab-led lines after them; a line with bytes
 * that are not UTF-8 (a SQL_ASCII database) is kept with them escaped and its record flagged
 * `invalidUtf8` (see decodeEscaped). PostgreSQL ends every line with `\n`,
 * so a last line without one is TRUNCATED_RECORD (the record it belongs to is dropped with it).
 */
import { isUtf8 } from "node:buffer";
import { decodeEscaped, doubleBackslashes, type SliceBuffer } from "./_bytes.ts";
import { LineSplitter } from "./_stderr-lines.ts";
import { appendTo, finishRecord, newRecord, secondaryKind } from "./_stderr-record.ts";
import { ParseErrorCode } from "./errors.ts";
import { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
import { type CompiledPrefix, createPrefixFields, type PrefixFields } from "./prefix.ts";
import { AMBIGUOUS, NO_PREFIX, PrefixHistory } from "./prefix-history.ts";
import type { LogParser, LogRecord, ParserOptions, RecordSink } from "./types.ts";

/** PostgreSQL 15's default log_line_prefix. */
export const DEFAULT_PREFIX = "%m [%p] ";

const TAB = 0x09;
const REPLACEMENT = "\ufffd";

const REASONS: Record<string, string> = {
  [ParseErrorCode.PREFIX_MISMATCH]: "line does not start with the configured log_line_prefix and a severity",
  [ParseErrorCode.AMBIGUOUS_PREFIX]:
    "line reads differently with the log_line_prefix values in effect around a reload, and nothing tells which wrote it",
  [ParseErrorCode.INVALID_UTF8]: "record contains bytes that are not valid UTF-8",
  [ParseErrorCode.TRUNCATED_RECORD]: "input ended inside a record (last line has no newline)",
  [ParseErrorCode.RECORD_TOO_LARGE]: "record is larger than maxRecordBytes",
};

/** Decodes `buf[start, end)`; null when the bytes are not UTF-8 (checked only when a U+FFFD shows up). */
export function decodeUtf8(buf: Buffer, start: number, end: number): string | null {
  // utf8Slice: toString("utf8", start, end) without its argument checks, at one call per line.
  const s = (buf as SliceBuffer).utf8Slice(start, end);
  if (s.includes(REPLACEMENT) && !isUtf8(buf.subarray(start, end))) return null;
  return s;
}

/**
 * The per-line state machine, fed decoded lines; also used by the syslog parser on the lines of
 * a reassembled message.
 */
export class StderrAssembler {
  private readonly fields: PrefixFields = createPrefixFields();
  /** The record being built (held back until the next head line), or null. */
  private record: LogRecord | null = null;
  /** Field that tab-led lines continue. */
  private kind = 0;
  /** Set when the pending stretch is to be reported as malformed instead of as a record. */
  private bad: string | null = null;
  private offset = 0;
  private size = 0;
  private pending = false;
  private readonly sink: RecordSink;
  private readonly prefixes: PrefixHistory;
  private readonly maxRecordBytes: number;

  /** `prefix`: one log_line_prefix, or the history of a stream's prefixes (shared with its other files' parsers). */
  constructor(sink: RecordSink, prefix: CompiledPrefix | PrefixHistory, maxRecordBytes: number) {
    this.sink = sink;
    this.prefixes = prefix instanceof PrefixHistory ? prefix : new PrefixHistory(prefix.source);
    this.maxRecordBytes = maxRecordBytes;
  }

  /**
   * A line starting with a tab: `text` is the line without it (null: not UTF-8 and not escaped;
   * `escaped`: decoded by decodeEscaped).
   */
  continuation(text: string | null, offset: number, size: number, escaped = false): void {
    if (!this.pending) {
      this.startBad(ParseErrorCode.PREFIX_MISMATCH, offset, size);
      return;
    }
    this.size += size;
    if (this.bad !== null) return;
    if (text === null) this.bad = ParseErrorCode.INVALID_UTF8;
    else if (this.size > this.maxRecordBytes) this.bad = ParseErrorCode.RECORD_TOO_LARGE;
    else if (this.record !== null) appendTo(this.record, this.kind, this.sameEscaping(text, escaped), false);
  }

  /**
   * Text of a line for the record being built: once one line of a record was escaped, backslashes
   * are doubled in all of it (the escaping of decodeEscaped covers the whole record).
   */
  private sameEscaping(text: string, escaped: boolean): string {
    const rec = this.record;
    if (rec === null || escaped === (rec.invalidUtf8 === true)) return text;
    if (!escaped) return doubleBackslashes(text);
    const fields = rec as unknown as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      const value = fields[key];
      if (typeof value === "string") fields[key] = doubleBackslashes(value);
    }
    rec.invalidUtf8 = true;
    return text;
  }

  /** Any other line (null: not UTF-8 and not escaped; `escaped`: decoded by decodeEscaped). */
  head(line: string | null, offset: number, size: number, escaped = false): void {
    if (line === null) {
      this.startBad(ParseErrorCode.INVALID_UTF8, offset, size);
      return;
    }
    const f = this.fields;
    let msgStart = this.prefixes.read(line, f);
    if (msgStart === NO_PREFIX) msgStart = this.prefixes.learnFrom(line, f);
    if (msgStart < 0) {
      this.startBad(
        msgStart === AMBIGUOUS ? ParseErrorCode.AMBIGUOUS_PREFIX : ParseErrorCode.PREFIX_MISMATCH,
        offset,
        size,
      );
      return;
    }
    const kind = secondaryKind(f.severity);
    const rec = this.record;
    if (kind >= 0 && rec !== null && (rec.pid === f.pid || rec.pid === null || f.pid === null)) {
      this.size += size;
      if (this.bad !== null) return;
      if (this.size > this.maxRecordBytes) {
        this.bad = ParseErrorCode.RECORD_TOO_LARGE;
        return;
      }
      this.kind = kind;
      appendTo(rec, kind, this.sameEscaping(line.slice(msgStart), escaped), true);
      return;
    }
    this.flush();
    this.pending = true;
    this.offset = offset;
    this.size = size;
    this.kind = 0;
    this.record = newRecord(offset, f, line.slice(msgStart));
    if (escaped) this.record.invalidUtf8 = true;
    // The postmaster saying a reload changed log_line_prefix: lines are read with both from here.
    if (line.charCodeAt(msgStart) === 0x70 && f.severity === "LOG")
      this.prefixes.noteMessage(line.slice(msgStart), f.timestamp);
    this.bad = size > this.maxRecordBytes ? ParseErrorCode.RECORD_TOO_LARGE : null;
  }

  /** The input ended inside a line: whatever it belongs to is truncated. */
  truncated(isContinuation: boolean, offset: number, size: number): void {
    if (isContinuation && this.pending) {
      this.size += size;
      this.bad = ParseErrorCode.TRUNCATED_RECORD;
      this.flush();
      return;
    }
    this.startBad(ParseErrorCode.TRUNCATED_RECORD, offset, size);
    this.flush();
  }

  /** A line skipped for its length. */
  tooLong(offset: number, size: number): void {
    this.startBad(ParseErrorCode.RECORD_TOO_LARGE, offset, size);
  }

  /** Emits the held-back record or malformed stretch. */
  flush(): void {
    if (!this.pending) return;
    this.pending = false;
    const rec = this.record;
    this.record = null;
    if (this.bad !== null) {
      const code = this.bad;
      this.bad = null;
      this.sink.malformed({ code, reason: REASONS[code] ?? code, offset: this.offset, size: this.size });
      return;
    }
    if (rec !== null) {
      rec.size = this.size;
      finishRecord(rec);
      this.sink.record(rec);
    }
  }

  private startBad(code: string, offset: number, size: number): void {
    // Consecutive lines of one kind of damage are one stretch; tab-led lines join it too.
    if (this.pending && this.record === null && this.bad === code && this.offset + this.size === offset) {
      this.size += size;
      return;
    }
    this.flush();
    this.pending = true;
    this.record = null;
    this.bad = code;
    this.offset = offset;
    this.size = size;
  }
}

export interface StderrParserOptions extends ParserOptions {}

/** An incremental parser for stderr log files written with the given log_line_prefix. */
export function createStderrParser(sink: RecordSink, options: StderrParserOptions = {}): LogParser {
  const prefix = options.prefixHistory ?? new PrefixHistory(options.prefix ?? DEFAULT_PREFIX);
  const max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const asm = new StderrAssembler(sink, prefix, max);
  const lines = new LineSplitter(
    {
      line(buf, start, end, offset) {
        const from = buf[start] === TAB ? start + 1 : start;
        let text = decodeUtf8(buf, from, end);
        const escaped = text === null;
        if (text === null) text = decodeEscaped(buf as SliceBuffer, from, end);
        if (from > start) asm.continuation(text, offset, end - start + 1, escaped);
        else asm.head(text, offset, end - start + 1, escaped);
      },
      partial(buf, start, end, offset) {
        asm.truncated(buf[start] === TAB, offset, end - start);
      },
      tooLong(offset, size) {
        asm.tooLong(offset, size);
      },
    },
    max,
  );
  return {
    push(chunk: Uint8Array): void {
      lines.push(chunk);
    },
    end(): void {
      lines.end();
      asm.flush();
    },
    idle(): void {
      // The logging collector writes a whole message (with its DETAIL/STATEMENT lines) at once,
      // so a quiet file that ends at a newline ends the held record too.
      if (lines.atLineBoundary) asm.flush();
    },
  };
}
