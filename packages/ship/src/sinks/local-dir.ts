import { dirname, join } from "node:path";
import { type Compression, compress, DEFAULT_COMPRESSION, ndjsonExtension } from "../compression.ts";
import { ensureDir, writeFileDurably } from "../durable-write.ts";
import { objectKey } from "../partitioner.ts";
import type { Batch, Sink } from "../types.ts";

export interface LocalDirSinkOptions {
  /** Directory the objects go under (created when missing). */
  dir: string;
  /** Object compression; default DEFAULT_COMPRESSION (zstd). */
  compression?: Compression;
}

export const LOCAL_DIR_SINK_NAME = "local-dir";

/**
 * The embedded default sink: compressed NDJSON objects under
 * `<dir>/dt=YYYY-MM-DD/hour=HH/<source>-<start>-<end>.ndjson.zst` (`.ndjson.gz` with gzip), each written to a temp file,
 * fsynced and renamed, so an object is either whole or absent, and rewriting a range replaces it.
 */
export class LocalDirSink implements Sink {
  readonly name: string = LOCAL_DIR_SINK_NAME;
  private readonly dir: string;
  private readonly compression: Compression;

  constructor(options: LocalDirSinkOptions) {
    if (!options.dir) throw new Error("LocalDirSink: `dir` is required");
    this.dir = options.dir;
    this.compression = options.compression ?? DEFAULT_COMPRESSION;
  }

  async write(batch: Batch): Promise<void> {
    // Nothing to store (no entry, outcome line or attempt); the range is still acknowledged.
    if (batch.ndjson.length === 0) return;
    const path = join(this.dir, objectKey(batch, { extension: ndjsonExtension(this.compression) }));
    await ensureDir(dirname(path));
    await writeFileDurably(path, await compress(batch.ndjson, this.compression));
  }

  async close(): Promise<void> {}
}
