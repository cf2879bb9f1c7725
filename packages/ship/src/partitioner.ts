import { DEFAULT_COMPRESSION, ndjsonExtension } from "./compression.ts";
import type { Batch } from "./types.ts";

/** Offsets are zero-padded so object keys sort in source order. */
const OFFSET_DIGITS = 16;

function pad(n: number): string {
  return String(n).padStart(OFFSET_DIGITS, "0");
}

/**
 * The object key of a batch, Hive-style (`dt=YYYY-MM-DD/hour=HH/...`) so Athena, Trino, Spark
 * and DuckDB can prune by partition. The name is a function of the source range alone: writing
 * the same range again, after a retry or a crash, replaces the object instead of adding a copy.
 * The partition comes from the first entry's timestamp (UTC), so it is stable across replays;
 * entries without one (a stderr log_line_prefix with no %m or %t) go under `dt=undated/hour=00`,
 * never under the wall clock, which would give a replay in another hour a second key.
 */
export function objectKey(
  batch: Pick<Batch, "range" | "firstTs">,
  /** `extension`: ndjsonExtension() of the object's compression (default `.ndjson.zst`, DEFAULT_COMPRESSION's). */
  options: { host?: string; extension?: string } = {},
): string {
  const first = batch.firstTs;
  const dt = first ? first.slice(0, 10) : "undated";
  const hour = first ? first.slice(11, 13) : "00";
  const { sourceId, start, end } = batch.range;
  const host = options.host ? `${options.host}/` : "";
  return `dt=${dt}/hour=${hour}/${host}${sourceId}-${pad(start)}-${pad(end)}${options.extension ?? ndjsonExtension(DEFAULT_COMPRESSION)}`;
}
