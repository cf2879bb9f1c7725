import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { compress as zstdCompress, decompress as zstdDecompress, init as zstdInit } from "@bokuweb/zstd-wasm";
import { ZstdThread } from "./_zstd-thread.ts";

/** How a shipped object's body is compressed; also its HTTP `Content-Encoding`. */
export type Compression = "gzip" | "zstd";

export const COMPRESSIONS: readonly Compression[] = ["gzip", "zstd"];

/** gzip level: zlib's default trade-off; fixed, because the bytes (and their SHA-256) must not change between runs. */
const GZIP_LEVEL = 6;
/**
 * zlib's output buffer: each time it fills, the pool thread hands back to this thread. With the
 * default 16 KiB that traffic cost ~15% of the sidecar's throughput; the output bytes are the same.
 */
const GZIP_CHUNK_BYTES = 1 << 20;
/** zstd level: the reference CLI's default; fixed for the same reason. */
const ZSTD_LEVEL = 3;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

let zstdReady: Promise<void> | undefined;
/** The wasm module loads once, from the file inside the npm package (no network). */
function zstd(): Promise<void> {
  zstdReady ??= zstdInit();
  return zstdReady;
}

/** The object name's extension for a compression: `.ndjson.gz`, `.ndjson.zst`. */
export function ndjsonExtension(compression: Compression): string {
  return compression === "gzip" ? ".ndjson.gz" : ".ndjson.zst";
}

/**
 * Compresses a body deterministically: the same input gives the same bytes on every run and every
 * machine with the same library versions (gzip's header carries no time or name), so a batch written
 * again after a crash produces an identical object with an identical SHA-256.
 */
export async function compress(body: Uint8Array, compression: Compression): Promise<Buffer> {
  if (compression === "gzip") return gzipAsync(body, { level: GZIP_LEVEL, chunkSize: GZIP_CHUNK_BYTES });
  zstdThread ??= new ZstdThread();
  return zstdThread.compress(body, ZSTD_LEVEL);
}

let zstdThread: ZstdThread | undefined;

/** zstd on this thread, as the worker does it: for tests that hold the two to the same bytes. */
export async function zstdCompressHere(body: Uint8Array): Promise<Buffer> {
  await zstd();
  const out = zstdCompress(Buffer.from(body.buffer, body.byteOffset, body.byteLength), ZSTD_LEVEL);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** The inverse of compress(), for readers of the archive (verify, tests). */
export async function decompress(body: Uint8Array, compression: Compression): Promise<Buffer> {
  if (compression === "gzip") return gunzipAsync(body);
  await zstd();
  const out = zstdDecompress(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}
