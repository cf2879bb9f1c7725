/**
 * syslog as rsyslog writes it to files (RFC 3164, rsyslog's file format, RFC 5424), and the
 * message-level reassembly a network receiver can reuse.
 *
 * PostgreSQL sends each message (its head line plus DETAIL/HINT/STATEMENT... lines, all one
 * sequence number) as chunks `[seq-n] text`, split at every newline and at 900 bytes; chunks of
 * different processes interleave. We rebuild each message per pid, then read it like stderr.
 * A message is complete when the same pid starts its next message, or at end(): records are
 * therefore emitted in order per pid, not in global file order. A record's offset is the offset
 * of its first chunk's line; its size is the sum of its chunk lines' bytes, though lines of
 * other processes may sit between them.
 */

import { LineSplitter } from "./_stderr-lines.ts";
import {
  type ChunkHeader,
  parseChunkHeader,
  parseSyslogHeader,
  type SyslogHeader,
} from "./_syslog-header.ts";
import { startsNewLine, unescapeRsyslog } from "./_syslog-join.ts";
import { messagesToRecords } from "./_syslog-records.ts";
import { ParseErrorCode } from "./errors.ts";
import { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
import { type CompiledPrefix, compilePrefix, createPrefixFields } from "./prefix.ts";
import { DEFAULT_PREFIX, decodeUtf8 } from "./stderr.ts";
import type { LogParser, MalformedRecord, ParserOptions, RecordSink } from "./types.ts";

export interface SyslogParserOptions extends ParserOptions {
  /** syslog_ident: the program name PostgreSQL logs as; lines of other programs are skipped. Default `postgres`. */
  ident?: string;
}

/** What the syslog reader saw, for metrics. */
export interface SyslogStats {
  /** Syslog lines (messages) read. */
  lines: number;
  /** Lines of other programs, skipped. */
  foreignLines: number;
  /** PostgreSQL messages rebuilt from their chunks. */
  messages: number;
  /** Messages reported as SYSLOG_INCOMPLETE (a chunk missing). */
  incompleteMessages: number;
}

/** One PostgreSQL message rebuilt from its syslog chunks. */
export interface SyslogMessage {
  pid: number;
  /** Sequence number, or -1 with syslog_sequence_numbers off. */
  seq: number;
  /** The message's lines as PostgreSQL wrote them to stderr: continuation lines keep their leading tab. */
  lines: string[];
  /** Source offset of the first chunk. */
  offset: number;
  /** Bytes of all its chunks. */
  size: number;
  chunks: number;
}

export interface SyslogMessageSink {
  message(message: SyslogMessage): void;
  malformed(error: MalformedRecord): void;
}

export interface SyslogReassembler {
  /**
   * One syslog message (a file line without its newline, or a datagram without framing).
   * `offset`/`size` locate it in its source; by default they count on from the previous one.
   */
  push(line: string | Uint8Array, offset?: number, size?: number): void;
  /** Completes every message still open. */
  end(): void;
  /**
   * Completes every message that got no chunk since the previous sweep(). A network receiver
   * calls it on a timer: a process's last message is otherwise held until that pid logs again.
   */
  sweep(): void;
  /** Source offsets of the messages begun and not yet completed, oldest first. */
  held(): number[];
  readonly stats: SyslogStats;
}

export interface SyslogParser extends LogParser {
  readonly stats: SyslogStats;
}

interface Pending {
  pid: number;
  seq: number;
  nextChunk: number;
  lines: string[];
  /** The last chunk's text: its UTF-8 length tells a length cut from a newline cut (measured only when a next chunk comes). */
  lastText: string;
  offset: number;
  size: number;
  chunks: number;
  /** Error code when the message cannot become a record. */
  bad: string | null;
  /** A chunk arrived since the last sweep(). */
  touched: boolean;
}

const REASONS: Record<string, string> = {
  [ParseErrorCode.BAD_SYSLOG_LINE]: "line is neither RFC 3164 nor RFC 5424 as rsyslog writes them",
  [ParseErrorCode.SYSLOG_INCOMPLETE]: "a chunk of this PostgreSQL syslog message is missing",
  [ParseErrorCode.INVALID_UTF8]: "message contains bytes that are not valid UTF-8",
  [ParseErrorCode.RECORD_TOO_LARGE]: "message is larger than maxRecordBytes",
  [ParseErrorCode.TRUNCATED_RECORD]: "input ended inside a syslog line (no newline)",
};

function malformed(code: string, offset: number, size: number): MalformedRecord {
  return { code, reason: REASONS[code] ?? code, offset, size };
}

class Reassembler implements SyslogReassembler {
  readonly stats: SyslogStats = { lines: 0, foreignLines: 0, messages: 0, incompleteMessages: 0 };
  private readonly open = new Map<number, Pending>();
  private readonly header: SyslogHeader = { ident: "", pid: -1, msgStart: 0 };
  private readonly chunk: ChunkHeader = { seq: -1, chunk: 0, textStart: 0 };
  private readonly ident: string;
  private readonly max: number;
  private nextOffset = 0;
  private readonly startsLine: (text: string) => boolean;
  private readonly sink: SyslogMessageSink;

  constructor(sink: SyslogMessageSink, options: SyslogParserOptions, prefix: CompiledPrefix) {
    this.sink = sink;
    this.ident = options.ident ?? "postgres";
    this.max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
    const fields = createPrefixFields();
    this.startsLine = (text) => prefix.match(text, 0, fields) >= 0;
  }

  push(line: string | Uint8Array, offset?: number, size?: number): void {
    let text: string | null;
    let bytes: number;
    if (typeof line === "string") {
      text = line;
      bytes = size ?? Buffer.byteLength(line) + 1;
    } else {
      const buf = Buffer.isBuffer(line) ? line : Buffer.from(line.buffer, line.byteOffset, line.byteLength);
      text = decodeUtf8(buf, 0, buf.length);
      bytes = size ?? buf.length + 1;
      if (text === null) {
        // Still find whose message it is, to drop that message as a whole.
        this.line(buf.toString("utf8"), offset ?? this.nextOffset, bytes, ParseErrorCode.INVALID_UTF8);
        return;
      }
    }
    this.line(text, offset ?? this.nextOffset, bytes, null);
  }

  /** One decoded line; `bad` marks its message as unusable. */
  line(s: string, offset: number, size: number, bad: string | null): void {
    this.nextOffset = offset + size;
    this.stats.lines++;
    const h = this.header;
    if (!parseSyslogHeader(s, h)) {
      this.sink.malformed(malformed(ParseErrorCode.BAD_SYSLOG_LINE, offset, size));
      return;
    }
    if (h.ident !== this.ident) {
      this.stats.foreignLines++;
      return;
    }
    const c = this.chunk;
    parseChunkHeader(s, h.msgStart, c);
    const text = unescapeRsyslog(c.textStart === 0 ? s.slice(h.msgStart) : s.slice(c.textStart));
    const pid = h.pid;
    let p = this.open.get(pid);
    if (c.chunk <= 1) {
      if (p !== undefined) this.complete(p, false);
      // No `[..] ` at all: syslog_split_messages is off; newlines came through as #012.
      const lines = c.chunk === 0 ? text.split("\n") : [text];
      p = {
        pid,
        seq: c.seq,
        nextChunk: 2,
        lines,
        lastText: text,
        offset,
        size,
        chunks: 1,
        bad,
        touched: true,
      };
      this.open.set(pid, p);
      return;
    }
    if (p === undefined || p.seq !== c.seq || c.chunk < p.nextChunk) {
      // A continuation whose first chunk we never saw.
      if (p !== undefined) this.complete(p, false);
      p = {
        pid,
        seq: c.seq,
        nextChunk: c.chunk + 1,
        lines: [],
        lastText: "",
        offset,
        size,
        chunks: 1,
        bad: ParseErrorCode.SYSLOG_INCOMPLETE,
        touched: true,
      };
      this.open.set(pid, p);
      return;
    }
    if (c.chunk > p.nextChunk) p.bad = ParseErrorCode.SYSLOG_INCOMPLETE;
    p.nextChunk = c.chunk + 1;
    p.chunks++;
    p.touched = true;
    p.size += size;
    if (bad !== null && p.bad === null) p.bad = bad;
    if (p.size > this.max && p.bad === null) p.bad = ParseErrorCode.RECORD_TOO_LARGE;
    if (p.bad !== null) return;
    const lines = p.lines;
    if (startsNewLine(Buffer.byteLength(p.lastText), text, this.startsLine)) lines.push(text);
    else lines[lines.length - 1] += text;
    p.lastText = text;
  }

  end(): void {
    for (const p of this.open.values()) this.complete(p, false);
    this.open.clear();
  }

  sweep(): void {
    for (const p of this.open.values()) {
      if (p.touched) p.touched = false;
      else this.complete(p); // deleting the entry being visited is safe in a Map iteration
    }
  }

  held(): number[] {
    const offsets: number[] = [];
    for (const p of this.open.values()) offsets.push(p.offset);
    return offsets.sort((a, b) => a - b);
  }

  /** Reports the message held for `p.pid` and forgets it. */
  private complete(p: Pending, forget = true): void {
    if (forget) this.open.delete(p.pid);
    if (p.bad !== null) {
      if (p.bad === ParseErrorCode.SYSLOG_INCOMPLETE) this.stats.incompleteMessages++;
      this.sink.malformed(malformed(p.bad, p.offset, p.size));
      return;
    }
    this.stats.messages++;
    this.sink.message({
      pid: p.pid,
      seq: p.seq,
      lines: p.lines,
      offset: p.offset,
      size: p.size,
      chunks: p.chunks,
    });
  }
}

/**
 * Rebuilds PostgreSQL messages from syslog messages fed one at a time (e.g. by a UDP/TCP
 * receiver). `options.prefix` helps tell a chunk cut at a newline from one cut at 900 bytes.
 */
export function createSyslogReassembler(
  sink: SyslogMessageSink,
  options: SyslogParserOptions = {},
): SyslogReassembler {
  return new Reassembler(sink, options, compilePrefix(options.prefix ?? DEFAULT_PREFIX));
}

/**
 * Like createSyslogReassembler, but the rebuilt messages come out as LogRecords exactly as
 * createSyslogParser makes them: for a receiver fed one syslog message at a time (UDP/TCP).
 */
export function createSyslogRecordReassembler(
  sink: RecordSink,
  options: SyslogParserOptions = {},
): SyslogReassembler {
  const prefix = compilePrefix(options.prefix ?? DEFAULT_PREFIX);
  const max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  return new Reassembler(messagesToRecords(sink, prefix, max), options, prefix);
}

/** An incremental parser for syslog files written by rsyslog (RFC 3164, its file format, or RFC 5424). */
export function createSyslogParser(sink: RecordSink, options: SyslogParserOptions = {}): SyslogParser {
  const prefix = compilePrefix(options.prefix ?? DEFAULT_PREFIX);
  const max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const reassembler = new Reassembler(messagesToRecords(sink, prefix, max), options, prefix);
  const splitter = new LineSplitter(
    {
      line(buf, start, end, offset) {
        const size = end - start + 1;
        const s = decodeUtf8(buf, start, end);
        if (s === null)
          reassembler.line(buf.toString("utf8", start, end), offset, size, ParseErrorCode.INVALID_UTF8);
        else reassembler.line(s, offset, size, null);
      },
      partial(_buf, _start, _end, offset) {
        sink.malformed(malformed(ParseErrorCode.TRUNCATED_RECORD, offset, _end - _start));
      },
      tooLong(offset, size) {
        sink.malformed(malformed(ParseErrorCode.RECORD_TOO_LARGE, offset, size));
      },
    },
    max,
  );
  return {
    stats: reassembler.stats,
    push(chunk: Uint8Array): void {
      splitter.push(chunk);
    },
    end(): void {
      splitter.end();
      reassembler.end();
    },
    idle(): void {
      // PostgreSQL sends every chunk of a message in one go: once the file is quiet, what each
      // pid has sent so far is all of its message.
      if (splitter.atLineBoundary) reassembler.end();
    },
    held(): number[] {
      return reassembler.held();
    },
  };
}
