import { promisify } from "node:util";
import { constants, gunzip, gzip, zstdCompress, zstdDecompress } from "node:zlib";

/** How a shipped object's body is compressed; also its HTTP `Content-Encoding`. */
export type Compression = "gzip" | "zstd";

export const COMPRESSIONS: readonly Compression[] = ["gzip", "zstd"];

/**
 * What landing objects are compressed with unless told otherwise. zstd level 1: on the sidecar's
 * NDJSON it compresses about as well as gzip -6 for a quarter of the CPU (docs/benchmarks.md, "CPU
 * per entry"), and every CPU-second the sidecar takes is taken from the database host. Readers:
 * our own tools, DuckDB (read_json, by extension), Athena engine 3 and Trino (text and JSON
 * tables, by the `.zst` extension) read it; Spark needs Hadoop's native zstd for JSON text, and
 * reads the compacted Parquet instead. gzip remains a choice (`--compression gzip`).
 */
export const DEFAULT_COMPRESSION: Compression = "zstd";

/** gzip level: zlib's default trade-off; fixed, because the bytes (and their SHA-256) must not change between runs. */
const GZIP_LEVEL = 6;
/**
 * zlib's output buffer: each time it fills, the pool thread hands back to this thread. With the
 * default 16 KiB that traffic cost ~15% of the sidecar's throughput; the output bytes are the same.
 */
const OUTPUT_CHUNK_BYTES = 1 << 20;
/**
 * zstd level: fixed for the same reason. 1 rather than the reference CLI's 3: on audit NDJSON it
 * takes less CPU and compresses as well or better (docs/benchmarks.md, "CPU per entry").
 */
const ZSTD_LEVEL = 1;
/**
 * zstd window: 256 KiB (2^18) instead of level 1's 512 KiB for inputs this large, fixed likewise.
 * On the sidecar's 20,000-entry batches of real audit NDJSON (~11.5 MB each) it took ~12 % less
 * CPU and the objects came out no larger (ratio 28.3 against 28.1; docs/benchmarks.md, "CPU per
 * entry"); 2^17 was faster again but 9 % larger. A smaller window only lowers the memory a reader
 * needs to decode.
 */
const ZSTD_WINDOW_LOG = 18;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
// Node's own zstd (zlib, Node >= 22.15) runs on libuv's pool like gzip: the main thread keeps reading.
const zstdAsync = promisify(zstdCompress);
const unzstdAsync = promisify(zstdDecompress);

/** The object name's extension for a compression: `.ndjson.gz`, `.ndjson.zst`. */
export function ndjsonExtension(compression: Compression): string {
  return compression === "gzip" ? ".ndjson.gz" : ".ndjson.zst";
}

/**
 * Compresses a body deterministically: the same input gives the same bytes on every run and every
 * machine with the same library versions (gzip's header carries no time or name; the zstd frame
 * records the body's size, so readers can size their buffer), so a batch written again after a
 * crash produces an identical object with an identical SHA-256.
 */
export async function compress(body: Uint8Array, compression: Compression): Promise<Buffer> {
  if (compression === "gzip") return gzipAsync(body, { level: GZIP_LEVEL, chunkSize: OUTPUT_CHUNK_BYTES });
  return zstdAsync(body, {
    chunkSize: OUTPUT_CHUNK_BYTES,
    pledgedSrcSize: body.byteLength,
    params: {
      [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL,
      [constants.ZSTD_c_windowLog]: ZSTD_WINDOW_LOG,
    },
  });
}

/** The inverse of compress(), for readers of the archive (verify, tests). */
export async function decompress(body: Uint8Array, compression: Compression): Promise<Buffer> {
  return compression === "gzip" ? gunzipAsync(body) : unzstdAsync(body);
}
