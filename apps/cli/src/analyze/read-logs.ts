import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import type { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { type VolumeReport, VolumeTally } from "@auditpipe/meter/volume";
import {
  type AuditEntry,
  createParser,
  decodeAuditEntry,
  guessPrefixes,
  isGzip,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
  type PrefixGuess,
  type RecordSink,
  sniffFormat,
} from "@auditpipe/parse";
import { type OutcomeHint, OutcomeReading, type OutcomeReadingOptions } from "./outcomes.ts";

export interface AnalyzeOptions {
  format: LogFormat | "auto";
  /** log_line_prefix for stderr and syslog. */
  prefix?: string;
  /** Called with each malformed stretch; the record text is never included. */
  onMalformed?: (file: string, error: MalformedRecord) => void;
  /** Called as bytes are read (on-disk bytes, so compressed for .gz). */
  onProgress?: (done: number, total: number) => void;
  /** Called with every decoded audit entry and its record (advise). */
  onEntry?: (entry: AuditEntry, record: LogRecord) => void;
  /**
   * No prefix was given for a stderr/syslog file: called with what its first lines say (undefined
   * when no common prefix reads them). Returns the prefix to read the file with, or throws.
   */
  onPrefixGuess?: (file: string, guess: PrefixGuess | undefined) => string | undefined;
  /** Called after each file with what it held: a file with bytes but no record could not be read. */
  onFileRead?: (file: string, summary: FileSummary) => void;
  /** The outcome of every entry and the attempts (outcomes.ts). */
  outcomes?: OutcomeReadingOptions;
  /** Called at the end with the settings that would make more outcomes knowable. */
  onOutcomeHints?: (hints: OutcomeHint[]) => void;
}

export interface FileSummary {
  /** The format it was read as, and the one its first line looks like. */
  format: LogFormat;
  sniffed: LogFormat | undefined;
  /** Whether the format came from --format rather than from the file. */
  formatGiven: boolean;
  prefix: string | undefined;
  records: number;
  malformed: number;
}

/** Bytes per read: large enough that per-chunk overhead vanishes, small enough for steady progress. */
const CHUNK_BYTES = 1 << 20;

function readHead(path: string, bytes: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(bytes);
    const n = readSync(fd, head, 0, bytes, 0);
    return head.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * What a file is, from its first chunk (its first READ_BYTES, gunzipped for .gz): its format
 * (sniffed unless given) and, for stderr and syslog without --prefix, the prefix its first lines
 * read cleanly with (onPrefixGuess may refuse them).
 */
function describeFile(file: string, head: Buffer, options: AnalyzeOptions): FileSummary {
  const sniffed = sniffFormat(head);
  const format = options.format === "auto" ? (sniffed ?? "stderr") : options.format;
  let prefix = options.prefix;
  if (prefix === undefined && (format === "stderr" || format === "syslog")) {
    // No --prefix: try the prefixes servers commonly write on the first whole lines.
    const guess = guessPrefixes(format, head);
    prefix = options.onPrefixGuess ? options.onPrefixGuess(file, guess) : guess?.prefix;
  }
  return { format, sniffed, formatGiven: options.format !== "auto", prefix, records: 0, malformed: 0 };
}

/**
 * What analyzeFiles finds a file to be before reading it (describeFile, from the same first
 * chunk), and whether it is gzip; undefined for a file with nothing in it. For readers that cut
 * files into ranges (parallel.ts).
 */
export async function fileStart(
  file: string,
  options: AnalyzeOptions,
): Promise<{ summary: FileSummary; gzip: boolean } | undefined> {
  const gzip = isGzip(readHead(file, 2));
  let head: Buffer | undefined;
  if (gzip) {
    const raw = createReadStream(file, { highWaterMark: CHUNK_BYTES });
    const input = raw.pipe(createGunzip({ chunkSize: CHUNK_BYTES }));
    raw.on("error", (error) => input.destroy(error));
    for await (const chunk of input as AsyncIterable<Buffer>) {
      head = chunk;
      break;
    }
    raw.destroy();
    input.destroy();
  } else {
    const first = readHead(file, CHUNK_BYTES);
    if (first.length > 0) head = first;
  }
  return head === undefined ? undefined : { summary: describeFile(file, head, options), gzip };
}

/**
 * Reads log files in the order given (the files of one log stream), decodes every pgAudit entry
 * and tallies the volume. A file's format is sniffed from its first bytes unless given; .gz
 * input is read through gunzip, recognised by its magic number rather than its name.
 */
export async function analyzeFiles(files: string[], options: AnalyzeOptions): Promise<VolumeReport> {
  const tally = new VolumeTally();
  const outcomes = new OutcomeReading(tally, options.outcomes);
  const total = files.reduce((sum, f) => sum + statSync(f).size, 0);
  let done = 0;

  for (const file of files) {
    const gzip = isGzip(readHead(file, 2));
    const raw = createReadStream(file, { highWaterMark: CHUNK_BYTES });
    raw.on("data", (chunk) => {
      done += chunk.length;
      options.onProgress?.(done, total);
    });
    const input: Readable = gzip ? raw.pipe(createGunzip({ chunkSize: CHUNK_BYTES })) : raw;
    if (gzip) raw.on("error", (error) => input.destroy(error));

    let parser: LogParser | undefined;
    let format: LogFormat = "stderr";
    let summary: FileSummary | undefined;
    let records = 0;
    let malformed = 0;
    /** A record whose pgAudit payload is not pgAudit's CSV (decodeAuditEntry's policy). */
    const badPayload = (error: MalformedRecord): void => {
      tally.addMalformed();
      options.onMalformed?.(file, error);
    };
    const sink: RecordSink = {
      record(record: LogRecord): void {
        tally.addRecord();
        records++;
        const entry = decodeAuditEntry(record, badPayload);
        outcomes.record(format, record, entry);
        if (entry === undefined) return;
        tally.addEntry(entry, record);
        options.onEntry?.(entry, record);
      },
      malformed(error: MalformedRecord): void {
        tally.addMalformed();
        malformed++;
        options.onMalformed?.(file, error);
      },
    };
    for await (const chunk of input as AsyncIterable<Buffer>) {
      if (!parser) {
        summary = describeFile(file, chunk, options);
        format = summary.format;
        const prefix = summary.prefix;
        outcomes.file(format, prefix);
        parser = createParser(format, sink, prefix === undefined ? {} : { prefix });
      }
      parser.push(chunk);
    }
    parser?.end();
    if (summary) options.onFileRead?.(file, { ...summary, records, malformed });
  }
  outcomes.end();
  const report = tally.report();
  options.onOutcomeHints?.(outcomes.hints(report.unknownReasons));
  return report;
}
