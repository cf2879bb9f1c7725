import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { ShippedRecord } from "./types.ts";

const gzipAsync = promisify(gzip);

/** NDJSON: one record per line, each line ending in `\n`. */
export function encodeNdjson(records: ShippedRecord[]): Buffer {
  let text = "";
  for (const record of records) text += `${JSON.stringify(record)}\n`;
  return Buffer.from(text, "utf8");
}

/** gzip on libuv's thread pool, so compressing one batch overlaps reading the next. */
export function gzipNdjson(records: ShippedRecord[]): Promise<Buffer> {
  return gzipAsync(encodeNdjson(records), { level: 6 });
}
