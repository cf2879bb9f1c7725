/** Hours, manifest keys and data-object keys: the layout both the journal and verify rely on. */

export const HOUR_MS = 3_600_000;

/** Folder under the archive prefix that holds the manifests, one subfolder per host. */
export const MANIFEST_DIR = "_manifests";

/** Folder under the archive prefix of the compaction records (`@auditpipe/compact`'s COMPACTION_DIR). */
export const COMPACTION_DIR = "_compaction";

/**
 * Whether `key` is a compaction record (`_compaction/<host>/<hour>.json`): bookkeeping that
 * `auditpipe compact` reads to plan, derived from the landing objects; what it says that matters
 * (key, SHA-256, rows, sources) is signed into the chain as the manifest's `compacted`, and verify
 * reads that, never the record: a record no manifest lists is not evidence of anything.
 */
export function isCompactionRecordKey(prefix: string, key: string): boolean {
  return key.startsWith(joinKey(prefix, `${COMPACTION_DIR}/`));
}

/** `a/b/` → `a/b`: the prefix without leading or trailing slashes. */
export function normalizePrefix(prefix: string): string {
  return prefix.replace(/^\/+|\/+$/g, "");
}

/** Joins key parts, skipping an empty prefix. */
export function joinKey(prefix: string, rest: string): string {
  return prefix === "" ? rest : `${prefix}/${rest}`;
}

/** Start of the UTC hour holding `ms`. */
export function floorHour(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** `2026-01-02T03` for the hour starting at `ms`. */
export function hourLabel(ms: number): string {
  return new Date(floorHour(ms)).toISOString().slice(0, 13);
}

const LABEL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})$/;

/** Start of the hour a `YYYY-MM-DDTHH` label names, or null when it is not one. */
export function parseHourLabel(label: string): number | null {
  const m = LABEL.exec(label);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]));
  return hourLabel(ms) === label ? ms : null;
}

/** `<prefix>/_manifests/<host>/` */
export function manifestFolder(prefix: string, host: string): string {
  return joinKey(prefix, `${MANIFEST_DIR}/${host}/`);
}

/**
 * `<prefix>/_manifests/<host>/<YYYY-MM-DDTHH>.json`, or `<YYYY-MM-DDTHH>.<sequence>.json` for
 * the rest of an hour whose first manifest was written early (at a stop).
 */
export function manifestKey(prefix: string, host: string, hourMs: number, sequence = 0): string {
  return `${manifestFolder(prefix, host)}${hourLabel(hourMs)}${sequence > 0 ? `.${sequence}` : ""}.json`;
}

/** Host, hour and sequence of a manifest key under `<prefix>/_manifests/`, or null for anything else. */
export function parseManifestKey(
  prefix: string,
  key: string,
): { host: string; hourMs: number; sequence: number } | null {
  const base = joinKey(prefix, `${MANIFEST_DIR}/`);
  if (!key.startsWith(base)) return null;
  const m = /^([^/]+)\/([^/.]+)(?:\.([1-9]\d{0,5}))?\.json$/.exec(key.slice(base.length));
  if (!m?.[1] || !m[2]) return null;
  const hourMs = parseHourLabel(m[2]);
  return hourMs === null ? null : { host: m[1], hourMs, sequence: m[3] ? Number(m[3]) : 0 };
}

/**
 * The host of a data object key (`<prefix>/dt=…/hour=…/<host>/<file>`): "" for a key written
 * without a host, null for a key that is not in the layout at all.
 */
export function dataObjectHost(prefix: string, key: string): string | null {
  const rel = relativeKey(prefix, key);
  if (rel === null) return null;
  const m = /^dt=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/(?:([^/]+)\/)?[^/]+$/.exec(rel);
  if (!m) return null;
  return m[1] ?? "";
}

/**
 * The host of a compacted file's key (`<prefix>/parquet/dt=…/hour=…/host=<host>/<file>`, Hive
 * style), or null for a key that is not one.
 */
export function compactedFileHost(prefix: string, key: string): string | null {
  const rel = relativeKey(prefix, key);
  if (rel === null) return null;
  return /^parquet\/dt=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/host=([^/]+)\/[^/]+$/.exec(rel)?.[1] ?? null;
}

function relativeKey(prefix: string, key: string): string | null {
  return prefix === "" ? key : key.startsWith(`${prefix}/`) ? key.slice(prefix.length + 1) : null;
}
