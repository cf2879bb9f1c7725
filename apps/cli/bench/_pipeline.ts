/**
 * The in-process pipeline the throughput benchmark times: FileSource (one real log file) → LiveMeter
 * (every entry, as the sidecar wires it) → LocalDirSink (NDJSON objects in its default compression, fsynced, in a temp
 * dir), against parse-only over the same bytes. Shared by pipeline.bench.ts and profiling runs
 * (`node --cpu-prof --conditions=@auditpipe/source apps/cli/bench/_pipeline.ts FILE`).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { LiveMeter } from "@auditpipe/meter";
import { createParser, decodeAuditEntry, type LogFormat } from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";

export interface PipelineRun {
  records: number;
  entries: number;
  /** Objects the sink wrote and their total compressed size. */
  objects: number;
  objectBytes: number;
  ms: number;
}

function walk(dir: string): { count: number; bytes: number } {
  let count = 0;
  let bytes = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const info = statSync(path);
    if (info.isDirectory()) {
      const sub = walk(path);
      count += sub.count;
      bytes += sub.bytes;
    } else if (name.endsWith(".ndjson.zst") || name.endsWith(".ndjson.gz")) {
      count++;
      bytes += info.size;
    }
  }
  return { count, bytes };
}

/** Resolves once the source has read `size` bytes of a file (polled every 2 ms). */
export function readTo(source: FileSource, size: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (source.status().some((f) => f.read >= size)) {
        clearInterval(timer);
        resolve();
      }
    }, 2);
  });
}

/**
 * Follows `file` from its first byte until everything in it is acknowledged by the sink and the
 * checkpoint says so (FileSource.stop() after the last byte was read). The clock covers start() to
 * the end of stop(): discovery, reading, parsing, metering, encoding, compression, fsyncs, checkpoints.
 */
export async function runPipeline(file: string, format: LogFormat, prefix?: string): Promise<PipelineRun> {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-pipeline-"));
  try {
    const logDir = join(work, "log");
    mkdirSync(logDir);
    symlinkSync(resolve(file), join(logDir, basename(file)));
    const size = statSync(file).size;
    const meter = new LiveMeter();
    const sink = new LocalDirSink({ dir: join(work, "sink") });
    let records = 0;
    let acked = 0;
    const source = new FileSource({
      logDir,
      format,
      ...(prefix === undefined ? {} : { prefix }),
      pattern: basename(file),
      stateDir: join(work, "state"),
      sink,
      observer: {
        recordsRead: (name, count) => {
          records += count;
          meter.recordsRead(name, count);
        },
        entry: (entry, record) => meter.entry(entry, record),
        malformed: (name) => meter.malformed(name, 1),
        bytesBehind: (name, bytes) => meter.setBytesBehind(name, bytes),
        sinkAck: (name, entries, bytes, latency) => {
          acked += entries;
          meter.sinkAck(name, entries, bytes, latency);
        },
        checkpointSaved: () => meter.checkpointSaved(),
      },
    });
    const t0 = performance.now();
    await source.start();
    await readTo(source, size);
    await source.stop();
    const ms = performance.now() - t0;
    const entries = meter.snapshot().totals.entries;
    if (acked !== entries) throw new Error(`sink acknowledged ${acked} entries of ${entries} metered`);
    const { count, bytes } = walk(join(work, "sink"));
    return { records, entries, objects: count, objectBytes: bytes, ms };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Parse-only over the same file, read the way the file follower reads it (1 MiB reads from disk). */
export async function runParseOnly(
  file: string,
  format: LogFormat,
  prefix?: string,
): Promise<{ records: number; entries: number; ms: number; checksum: number }> {
  const t0 = performance.now();
  let records = 0;
  let entries = 0;
  let checksum = 0;
  const badPayload = (): void => {
    checksum--;
  };
  const parser = createParser(
    format,
    {
      record(r) {
        records++;
        const e = decodeAuditEntry(r, badPayload);
        if (e !== undefined) {
          entries++;
          checksum += e.statement.length;
        }
      },
      malformed() {
        checksum--;
      },
    },
    prefix === undefined ? {} : { prefix },
  );
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (let pos = 0; ; ) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      parser.push(Buffer.from(buffer.subarray(0, bytesRead)));
    }
  } finally {
    await handle.close();
  }
  parser.end();
  return { records, entries, ms: performance.now() - t0, checksum };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const file = process.argv[2]!;
  const format = (process.argv[3] ?? "csvlog") as LogFormat;
  const run = await runPipeline(file, format, process.argv[4]);
  console.log({ ...run, entriesPerSec: Math.round(run.entries / (run.ms / 1000)) });
}
