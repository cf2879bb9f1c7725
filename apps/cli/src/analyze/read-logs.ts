import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import type { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { type VolumeReport, VolumeTally } from "@auditpipe/meter/volume";
import {
  AUDIT_PREFIX,
  type AuditEntry,
  AuditPayloadError,
  createParser,
  guessPrefix,
  isGzip,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
  parseAuditPayload,
  type RecordSink,
  sniffFormat,
} from "@auditpipe/parse";

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
  /** Called when no prefix was given and one was guessed from a stderr/syslog file's first lines. */
  onPrefixGuessed?: (file: string, prefix: string) => void;
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
 * Reads log files in the order given (the files of one log stream), decodes every pgAudit entry
 * and tallies the volume. A file's format is sniffed from its first bytes unless given; .gz
 * input is read through gunzip, recognised by its magic number rather than its name.
 */
export async function analyzeFiles(files: string[], options: AnalyzeOptions): Promise<VolumeReport> {
  const tally = new VolumeTally();
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
    const sink: RecordSink = {
      record(record: LogRecord): void {
        tally.addRecord();
        if (!record.message.startsWith(AUDIT_PREFIX)) return;
        try {
          const entry = parseAuditPayload(record.message);
          if (entry) {
            tally.addEntry(entry, record);
            options.onEntry?.(entry, record);
          }
        } catch (error) {
          if (!(error instanceof AuditPayloadError)) throw error;
          tally.addMalformed();
          options.onMalformed?.(file, {
            code: error.code,
            reason: error.message,
            offset: record.offset,
            size: record.size,
          });
        }
      },
      malformed(error: MalformedRecord): void {
        tally.addMalformed();
        options.onMalformed?.(file, error);
      },
    };
    for await (const chunk of input as AsyncIterable<Buffer>) {
      if (!parser) {
        const format = options.format === "auto" ? (sniffFormat(chunk) ?? "stderr") : options.format;
        let prefix = options.prefix;
        if (prefix === undefined && (format === "stderr" || format === "syslog")) {
          // No --prefix: try the prefixes servers commonly write on the first whole lines.
          prefix = guessPrefix(format, chunk);
          if (prefix !== undefined) options.onPrefixGuessed?.(file, prefix);
        }
        parser = createParser(format, sink, prefix === undefined ? {} : { prefix });
      }
      parser.push(chunk);
    }
    parser?.end();
  }
  return tally.report();
}
