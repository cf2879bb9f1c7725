import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { type VolumeReport, VolumeTally } from "@auditpipe/meter/volume";
import {
  type AuditEntry,
  type AuditView,
  type AuditViewSink,
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
import { CliErrorCode } from "../errors.ts";
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
  /**
   * A .gz input that ends early or is damaged: what was read before is counted (the partial last
   * record as AUDITPIPE_ERR_TRUNCATED_RECORD), the rest of that input cannot be, and reading goes
   * on with the next input. Without this callback the error is thrown.
   */
  onInputError?: (file: string, error: InputError) => void;
  /** The outcome of every entry and the attempts (outcomes.ts). */
  outcomes?: OutcomeReadingOptions;
  /** Called at the end with the settings that would make more outcomes knowable. */
  onOutcomeHints?: (hints: OutcomeHint[]) => void;
}

/** A .gz input that could not be read to its end. */
export interface InputError {
  code: typeof CliErrorCode.TRUNCATED_GZIP | typeof CliErrorCode.BAD_GZIP;
  /** Bytes of log (decompressed) read before the error: where the report stops. */
  offset: number;
  /** Compressed bytes read, of `size` (undefined for standard input). */
  compressedRead: number;
  size: number | undefined;
  reason: string;
}

/** `-` and `/dev/stdin` name standard input (a pipe: `zcat old.csv.gz | auditpipe analyze -`). */
export const STDIN_NAMES: readonly string[] = ["-", "/dev/stdin"];
export const isStdin = (file: string): boolean => STDIN_NAMES.includes(file);

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
/**
 * Bytes given to the parser at a time (a chunk is sliced), the joins' held statement texts released
 * after each: see chunk.ts's PARSE_BYTES (a 1 MiB push made the parser a 1 MiB string, a large object).
 */
const PARSE_BYTES = 64 << 10;
/** Decompressed bytes per gunzip output chunk. */
const GUNZIP_CHUNK_BYTES = 256 << 10;

/** On-disk size of a file; standard input's is unknown (0: no progress bar). */
export function inputSize(file: string): number {
  return isStdin(file) ? 0 : statSync(file).size;
}

/**
 * The input as a stream of the log's bytes: gunzipped when its first two bytes are gzip's magic
 * number, for files and pipes alike (a pipe cannot be peeked: its first chunk decides and is
 * replayed into the gunzip stream). `counted` gets every raw (on-disk) chunk, for progress.
 */
async function logStream(
  file: string,
  counted: (raw: number) => void,
): Promise<{ input: Readable; gzip: boolean }> {
  const raw: Readable = isStdin(file)
    ? process.stdin
    : createReadStream(file, { highWaterMark: CHUNK_BYTES });
  const chunks = (raw as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const first = await chunks.next();
  async function* bytes(): AsyncGenerator<Buffer> {
    if (first.done) return;
    counted(first.value.length);
    yield first.value;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      counted(next.value.length);
      yield next.value;
    }
  }
  const source = Readable.from(bytes(), { objectMode: false });
  if (first.done || !isGzip(first.value)) return { input: source, gzip: false };
  // Smaller output chunks than the reads: zlib drops the output of the call that fails (a wrong CRC
  // is found after the last block), so this bounds what a damaged input's report can miss.
  const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES });
  source.on("error", (error) => gunzip.destroy(error));
  return { input: source.pipe(gunzip), gzip: true };
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

/** Whether a file (not standard input) starts with gzip's magic number. */
export function isGzipFile(file: string): boolean {
  return !isStdin(file) && isGzip(readHead(file, 2));
}

/** The first `bytes` bytes of a file (fewer when it is shorter). */
function readHead(path: string, bytes: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
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
    // The same first chunk analyzeFiles describes the file from (logStream's gunzip chunks).
    const input = raw.pipe(createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES }));
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
 * input is read through gunzip, recognised by its magic number rather than its name. Not split:
 * a file's sinks (records, views, malformed stretches) and its stream's end share its counts.
 */
export async function analyzeFiles(files: string[], options: AnalyzeOptions): Promise<VolumeReport> {
  const tally = new VolumeTally();
  const outcomes = new OutcomeReading(tally, options.outcomes);
  const total = files.reduce((sum, f) => sum + inputSize(f), 0);
  let done = 0;

  for (const file of files) {
    let compressedRead = 0;
    const { input, gzip } = await logStream(file, (n) => {
      compressedRead += n;
      done += n;
      if (total > 0) options.onProgress?.(done, total);
    });

    let parser: LogParser | undefined;
    let format: LogFormat = "stderr";
    let summary: FileSummary | undefined;
    let records = 0;
    let malformed = 0;
    /** Bytes of log handed to the parser: where a gzip stream that ends early stopped. */
    let offset = 0;
    /** A record whose pgAudit payload is not pgAudit's CSV (decodeAuditEntry's policy). */
    const badPayload = (error: MalformedRecord): void => {
      tally.addMalformed();
      options.onMalformed?.(file, error);
    };
    const sink: RecordSink = {
      record(record: LogRecord, decoded?: AuditEntry): void {
        tally.addRecord();
        records++;
        const entry = decoded ?? decodeAuditEntry(record, badPayload);
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
    // An ordinary csvlog entry is read as an AuditView (no record or entry made: the join and the
    // tally read the view) unless a caller takes entries.
    const auditView: AuditViewSink | undefined =
      options.onEntry !== undefined
        ? undefined
        : {
            entry(view: AuditView): boolean {
              if (!outcomes.entry(format, view)) return false;
              tally.addRecord();
              records++;
              tally.addEntry(view, view);
              return true;
            },
          };
    // Records handed to no caller (only the tally, the join and its events, which read their
    // places and times) need none of UNREAD_FIELDS, nor of UNTALLIED_FIELDS.
    const omitUntalliedFields =
      options.onEntry === undefined &&
      options.outcomes?.onOutcome === undefined &&
      options.outcomes?.onAttempt === undefined;
    const onChunk = (chunk: Buffer): void => {
      if (!parser) {
        summary = describeFile(file, chunk, options);
        format = summary.format;
        const prefix = summary.prefix;
        outcomes.file(format, prefix, file);
        // csvlog decodes the entries where its text lies (the same entries, read in place).
        const decodeAuditEntries = true;
        parser = createParser(
          format,
          sink,
          prefix === undefined
            ? { omitUntalliedFields, decodeAuditEntries, auditView }
            : { prefix, omitUntalliedFields, decodeAuditEntries, auditView },
        );
      }
      // PARSE_BYTES at a time; the joins hold the statement texts of a slice (holdTexts) until
      // it is parsed.
      for (let at = 0; at < chunk.length; at += PARSE_BYTES) {
        parser.push(chunk.subarray(at, at + PARSE_BYTES));
        outcomes.releaseTexts();
      }
      offset += chunk.length;
    };
    // Events rather than for-await: a stream that fails (gunzip on a cut or damaged input) still
    // delivers every chunk it decoded before the error, which an async iterator would drop.
    const error = await new Promise<Error | undefined>((resolve, reject) => {
      input.on("data", (chunk: Buffer) => {
        try {
          onChunk(chunk);
        } catch (thrown) {
          input.destroy();
          reject(thrown); // e.g. a UsageError from onPrefixGuess
        }
      });
      input.once("end", () => resolve(undefined));
      input.once("error", resolve);
    });
    let failure: InputError | undefined;
    if (error) {
      // zlib's errors carry a code: Z_BUF_ERROR is "unexpected end of file" (the stream is cut
      // short); Z_DATA_ERROR is damage (a bad header, an invalid block, a wrong CRC).
      const zlibCode = (error as NodeJS.ErrnoException).code;
      if (!gzip || (zlibCode !== "Z_BUF_ERROR" && zlibCode !== "Z_DATA_ERROR")) throw error;
      failure = {
        code: zlibCode === "Z_BUF_ERROR" ? CliErrorCode.TRUNCATED_GZIP : CliErrorCode.BAD_GZIP,
        offset,
        compressedRead,
        size: isStdin(file) ? undefined : inputSize(file),
        reason: error.message,
      };
    }
    parser?.end();
    outcomes.releaseTexts();
    if (summary) options.onFileRead?.(file, { ...summary, records, malformed });
    if (failure) {
      if (!options.onInputError) throw new Error(describeInputError(file, failure));
      options.onInputError(file, failure);
    }
  }
  outcomes.end();
  const report = tally.report();
  options.onOutcomeHints?.(outcomes.hints(report.unknownReasons));
  return report;
}

/** The one wording of an input that could not be read to its end: file, code, where, what to do. */
export function describeInputError(file: string, error: InputError): string {
  const name = isStdin(file) ? "standard input" : file;
  const read =
    error.size === undefined
      ? `${error.compressedRead} compressed bytes read`
      : `${error.compressedRead} of its ${error.size} compressed bytes read`;
  const what =
    error.code === CliErrorCode.TRUNCATED_GZIP
      ? "the gzip stream is cut short (a file truncated, or copied while it was being written)"
      : `the gzip data is damaged (${error.reason})`;
  return `${name}: ${error.code}: ${what}; read up to byte ${error.offset} of the log (${read}). What was read before is counted; check the file with gzip -t and read the rest from the original if there is one`;
}
