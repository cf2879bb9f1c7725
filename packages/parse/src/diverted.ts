/**
 * The csvlog and jsonlog records PostgreSQL writes into its stderr log file while csvlog or jsonlog
 * is its destination. Its logging collector writes a structured record whose file is not open to
 * the stderr file instead (syslogger.c, write_syslogger_file: "There are also race conditions
 * during a parameter change whereby backends might send us structured output before we open the
 * logFile or after we close it"): when log_destination changes, the records that backends sent
 * before the collector opened (or after it closed) the csvlog or jsonlog file land in the .log
 * file beside it, in their own format, between the stderr lines written there.
 *
 * This parser reads such a file for those records only: a line starting like a csvlog record
 * (`YYYY-MM-DD HH:MM:SS.mmm ZONE,`) begins one, read to its end by csvlog's quoting; a line starting
 * `{"timestamp":"` is a jsonlog record. Each goes through the csvlog or jsonlog parser and comes
 * out with its offset in the file. Every other line is the file's own stderr output (nothing
 * pgAudit writes while stderr is not a destination; duplicates of the structured file when it is)
 * and is passed over without a report.
 */
import { createCsvlogParser } from "./csvlog.ts";
import { ParseErrorCode } from "./errors.ts";
import { createJsonlogParser } from "./jsonlog.ts";
import { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
import type { LogParser, LogRecord, MalformedRecord, ParserOptions, RecordSink } from "./types.ts";

const LF = 0x0a;
const QUOTE = 0x22;
/** `2026-11-27 14:15:37.965 UTC,`: csvlog's log_time (%m's form) and the comma after it. */
const CSV_START = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [A-Za-z0-9+:-]+,/;
const JSON_START = Buffer.from('{"timestamp":"', "latin1");
/** Bytes of a line looked at to tell its kind. */
const PEEK_BYTES = 64;

/** A structured-format parser fed one whole record at a time, its output moved to file offsets. */
class Relay {
  readonly parser: LogParser;
  /** Bytes fed to the parser so far (its offsets count from its own start). */
  private fed = 0;
  /** File offset of the record being fed, and where it starts in the parser's stream. */
  private fileOffset = 0;
  private streamOffset = 0;

  constructor(
    create: (sink: RecordSink, options: ParserOptions) => LogParser,
    sink: RecordSink,
    options: ParserOptions,
  ) {
    this.parser = create(
      {
        record: (record: LogRecord) => {
          record.offset = this.fileOffset + (record.offset - this.streamOffset);
          sink.record(record);
        },
        malformed: (error: MalformedRecord) =>
          sink.malformed({ ...error, offset: this.fileOffset + (error.offset - this.streamOffset) }),
      },
      options,
    );
  }

  feed(bytes: Uint8Array, fileOffset: number): void {
    this.fileOffset = fileOffset;
    this.streamOffset = this.fed;
    this.fed += bytes.length;
    this.parser.push(bytes);
  }
}

// Kept whole (~100 lines): a parser object whose state is this closure's variables, shared by its three short parts (lineDone, push, end).
/** An incremental parser for the records PostgreSQL diverted into its stderr file (see above). */
export function createDivertedParser(sink: RecordSink, options: ParserOptions = {}): LogParser {
  const max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const csv = new Relay(createCsvlogParser, sink, options);
  const json = new Relay(createJsonlogParser, sink, options);
  /** Offset of the next byte pushed. */
  let offset = 0;
  /** The line being read (copied: the caller reuses its buffer), and its offset. */
  let lineParts: Buffer[] = [];
  let lineBytes = 0;
  let lineOffset = 0;
  /** The lines of a csvlog record whose quoted field spans lines, and its offset. */
  let record: Buffer[] = [];
  let recordBytes = 0;
  let recordOffset = 0;
  let quotes = 0;
  /** Passing over the rest of a line that made a record too large, from this offset. */
  let skipping = false;
  let skipFrom = 0;

  const lineDone = (): void => {
    const text = lineParts.length === 1 ? lineParts[0]! : Buffer.concat(lineParts, lineBytes);
    lineParts = [];
    lineBytes = 0;
    if (record.length === 0) {
      if (text.subarray(0, JSON_START.length).equals(JSON_START)) {
        json.feed(text, lineOffset);
        return;
      }
      if (!CSV_START.test(text.toString("latin1", 0, Math.min(text.length, PEEK_BYTES)))) {
        sink.skipped?.(lineOffset, text.length); // the file's own stderr output
        return;
      }
      recordOffset = lineOffset;
      quotes = 0;
    }
    record.push(text);
    recordBytes += text.length;
    for (const byte of text) if (byte === QUOTE) quotes++;
    if (quotes % 2 === 1) return; // a newline inside a quoted field: the record goes on
    const bytes = record.length === 1 ? record[0]! : Buffer.concat(record, recordBytes);
    record = [];
    recordBytes = 0;
    csv.feed(bytes, recordOffset);
  };

  return {
    push(chunk: Uint8Array): void {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let at = 0;
      while (at < bytes.length) {
        const newline = bytes.indexOf(LF, at);
        const end = newline < 0 ? bytes.length : newline + 1;
        if (lineBytes === 0) lineOffset = offset + at;
        if (!skipping) {
          const piece = Buffer.from(bytes.subarray(at, end));
          lineParts.push(piece);
          lineBytes += piece.length;
          if (recordBytes + lineBytes > max) {
            sink.malformed({
              code: ParseErrorCode.RECORD_TOO_LARGE,
              reason: "record larger than maxRecordBytes",
              offset: record.length > 0 ? recordOffset : lineOffset,
              size: recordBytes + lineBytes,
            });
            lineParts = [];
            lineBytes = 0;
            record = [];
            recordBytes = 0;
            skipping = true;
            skipFrom = offset + end;
          }
        }
        if (newline >= 0) {
          if (!skipping) lineDone();
          else {
            skipping = false;
            if (offset + end > skipFrom) sink.skipped?.(skipFrom, offset + end - skipFrom);
          }
        }
        at = end;
      }
      offset += bytes.length;
    },
    end(): void {
      const left = recordBytes + lineBytes;
      if (left > 0 && (record.length > 0 || lineParts.length > 0)) {
        const first = record.length > 0 ? recordOffset : lineOffset;
        // A last line without its newline, or a csvlog record cut inside a quoted field.
        if (record.length > 0 || isRecordStart(Buffer.concat(lineParts)))
          sink.malformed({
            code: ParseErrorCode.TRUNCATED_RECORD,
            reason: "input ended inside a record",
            offset: first,
            size: left,
          });
      }
      lineParts = [];
      record = [];
      csv.parser.end();
      json.parser.end();
    },
  };
}

function isRecordStart(line: Buffer): boolean {
  return (
    line.subarray(0, JSON_START.length).equals(JSON_START) ||
    CSV_START.test(line.toString("latin1", 0, Math.min(line.length, PEEK_BYTES)))
  );
}
