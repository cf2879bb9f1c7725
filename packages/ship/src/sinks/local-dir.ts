import { dirname, join } from "node:path";
import { compress } from "../compression.ts";
import { ensureDir, writeFileDurably } from "../durable-write.ts";
import { objectKey } from "../partitioner.ts";
import type { Batch, Sink } from "../types.ts";

export interface LocalDirSinkOptions {
  /** Directory the objects go under (created when missing). */
  dir: string;
}

export const LOCAL_DIR_SINK_NAME = "local-dir";

/**
 * The embedded default sink: gzip NDJSON objects under
 * `<dir>/dt=YYYY-MM-DD/hour=HH/<source>-<start>-<end>.ndjson.gz`, each written to a temp file,
 * fsynced and renamed, so an object is either whole or absent, and rewriting a range replaces it.
 */
export class LocalDirSink implements Sink {
  readonly name: string = LOCAL_DIR_SINK_NAME;
  private readonly dir: string;

  constructor(options: LocalDirSinkOptions) {
    if (!options.dir) throw new Error("LocalDirSink: `dir` is required");
    this.dir = options.dir;
  }

  async write(batch: Batch): Promise<void> {
    // Nothing to store (no entry, outcome line or attempt); the range is still acknowledged.
    if (batch.ndjson.length === 0) return;
    const path = join(this.dir, objectKey(batch));
    await ensureDir(dirname(path));
    await writeFileDurably(path, await compress(batch.ndjson, "gzip"));
  }

  async close(): Promise<void> {}
}
