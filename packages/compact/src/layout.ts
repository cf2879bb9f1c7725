/**
 * Where things are in an archive. Landing objects (the sinks' NDJSON):
 * `dt=YYYY-MM-DD/hour=HH/[<host>/]<source>-<first>-<last>.ndjson.gz|.zst` (the S3 sink puts a host
 * segment in, the local-dir sink does not). Compacted files, Hive-style so engines prune by every key:
 * `parquet/dt=YYYY-MM-DD/hour=HH/host=<host>/part-0.parquet`, and the compaction record of each
 * beside the data, under a folder engines skip (`_`): `_compaction/<host>/<YYYY-MM-DDTHH>.json`.
 */

/** Host name used for a local-dir archive's objects, which carry no host segment. */
export const LOCAL_HOST = "local";

/** Folder (under the archive prefix) holding the Parquet dataset. */
export const PARQUET_DIR = "parquet";

/** Folder holding one compaction record per compacted host-hour. */
export const COMPACTION_DIR = "_compaction";

/** The name of a host-hour's one Parquet file. */
export const PARQUET_FILE = "part-0.parquet";

/** One host-hour partition of the landing data. */
export interface Partition {
  /** `YYYY-MM-DD`. */
  dt: string;
  /** `00`…`23`. */
  hour: string;
  host: string;
}

/** A landing object, as listed. */
export interface LandingObject extends Partition {
  /** Key relative to the archive's prefix. */
  key: string;
  size: number;
}

const LANDING =
  /^dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/(?:([A-Za-z0-9._-]+)\/)?[^/]+-\d{16}-\d{16}\.ndjson\.(gz|zst)$/;

/**
 * The partition of a landing key (relative to the prefix), or null for anything else: other
 * files, and `dt=undated` (entries without a timestamp are never compacted; query reads them as
 * NDJSON).
 */
export function parseLandingKey(key: string, size = 0): LandingObject | null {
  const m = LANDING.exec(key);
  if (!m?.[1] || !m[2]) return null;
  return { key, size, dt: m[1], hour: m[2], host: m[3] ?? LOCAL_HOST };
}

/** `2026-11-23T07`: the hour label manifests and compaction records use. */
export function hourLabel(p: Pick<Partition, "dt" | "hour">): string {
  return `${p.dt}T${p.hour}`;
}

/** Start of the partition's hour, in ms since the epoch (UTC). */
export function partitionStart(p: Pick<Partition, "dt" | "hour">): number {
  return Date.parse(`${p.dt}T${p.hour}:00:00Z`);
}

/** The key (relative to the prefix) of a host-hour's Parquet file. */
export function parquetKey(p: Partition): string {
  return `${PARQUET_DIR}/dt=${p.dt}/hour=${p.hour}/host=${p.host}/${PARQUET_FILE}`;
}

/** The key (relative to the prefix) of a host-hour's compaction record. */
export function compactionRecordKey(p: Partition): string {
  return `${COMPACTION_DIR}/${p.host}/${hourLabel(p)}.json`;
}

const PARQUET = /^parquet\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/host=([A-Za-z0-9._-]+)\/part-0\.parquet$/;

/** The partition of a Parquet key (relative to the prefix), or null. */
export function parseParquetKey(key: string): Partition | null {
  const m = PARQUET.exec(key);
  if (!m?.[1] || !m[2] || !m[3]) return null;
  return { dt: m[1], hour: m[2], host: m[3] };
}

/** `dt/hour/host` as one string, for maps. */
export function partitionId(p: Partition): string {
  return `${p.dt}/${p.hour}/${p.host}`;
}
