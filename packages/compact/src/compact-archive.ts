/**
 * `auditpipe compact ARCHIVE`, and the sidecar after each hour: plan which host-hours need a
 * (new) Parquet file, then compact them one at a time. Pure planning (`planCompaction`) is apart
 * from the I/O that lists, reads and writes the store.
 */
import {
  type CompactionRecord,
  type CompactPartitionOptions,
  compactPartition,
} from "./compact-partition.ts";
import { CompactError, CompactErrorCode } from "./errors.ts";
import {
  COMPACTION_DIR,
  hourLabel,
  type LandingObject,
  PARQUET_DIR,
  type Partition,
  parseLandingKey,
  partitionId,
  partitionStart,
} from "./layout.ts";
import { AwaitingSignature, awaitSignature, clearRewrite } from "./signed-rewrite.ts";
import type { ArchiveStore } from "./store.ts";

const HOUR_MS = 3_600_000;
const RECORD_NAME = /^_compaction\/[^/]+\/\d{4}-\d{2}-\d{2}T\d{2}\.json$/;

/**
 * An hour's landing partition is closed this long after the hour ends: batches close within a
 * minute (the sink's default age limit) and the manifest journal waits 5 minutes for late uploads.
 * A late object that still arrives makes the host-hour out of date, and the next run compacts it again.
 */
export const DEFAULT_CLOSE_GRACE_MS: number = 10 * 60_000;

export type PartitionState =
  /** No compacted file yet, or its record does not list every landing object. */
  | "due"
  /** The record lists every landing object: nothing to do. */
  | "compacted"
  /** The hour is not closed yet. */
  | "open";

export interface PlannedPartition {
  partition: Partition;
  state: PartitionState;
  objects: LandingObject[];
  record?: CompactionRecord;
  /** Landing objects the record lists that are gone from the store (dropped after compaction). */
  dropped: number;
}

/**
 * Which host-hours need compacting. `records` by partition id; a host-hour whose record lists every
 * landing object present is done, one with a landing object the record lacks is due again (the
 * hour continued after a stop, or a late upload), one whose hour ends less than `graceMs` before
 * `now` is open.
 */
export function planCompaction(
  landing: readonly LandingObject[],
  records: ReadonlyMap<string, CompactionRecord>,
  now: number,
  graceMs: number = DEFAULT_CLOSE_GRACE_MS,
): PlannedPartition[] {
  const groups = new Map<string, LandingObject[]>();
  for (const o of landing) {
    const id = partitionId(o);
    const list = groups.get(id);
    if (list) list.push(o);
    else groups.set(id, [o]);
  }
  const plan: PlannedPartition[] = [];
  for (const id of [...new Set([...groups.keys(), ...records.keys()])].sort()) {
    const objects = groups.get(id) ?? [];
    const record = records.get(id);
    const first = objects[0];
    const partition: Partition = first
      ? { dt: first.dt, hour: first.hour, host: first.host }
      : (() => {
          const [dt = "", hour = "", host = ""] = id.split("/");
          return { dt, hour, host };
        })();
    const listed = new Set(record?.sources.map((s) => s.key) ?? []);
    const present = new Set(objects.map((o) => o.key));
    const dropped = [...listed].filter((k) => !present.has(k)).length;
    let state: PartitionState;
    if (partitionStart(partition) + HOUR_MS + graceMs > now) state = "open";
    else if (record && objects.every((o) => listed.has(o.key))) state = "compacted";
    else state = "due";
    plan.push({ partition, state, objects, ...(record ? { record } : {}), dropped });
  }
  return plan;
}

export interface CompactArchiveOptions extends CompactPartitionOptions {
  /** The clock, for which hours are closed; default Date.now(). */
  now?: number;
  graceMs?: number;
  /** Only these hours (`YYYY-MM-DDTHH` labels, inclusive range). */
  from?: string;
  to?: string;
  /** Only this host's partitions. */
  host?: string;
  /** After a host-hour's record is stored, delete its landing objects (retention asked for it). */
  dropLanding?: boolean;
  /**
   * A file the key holds with other bytes is replaced only once the host's sidecar (adopt mode)
   * signed the new one: the first run leaves a request (state `awaiting-signature`), a later one
   * replaces (signed-rewrite.ts). Takes the place of `beforeReplace`.
   */
  signedRewrites?: boolean;
  /** Called after each host-hour, for progress. */
  onPartition?: (result: PartitionResult) => void;
  /** A compaction record that cannot be read: skipped, and its host-hour compacted anew. */
  onUnreadableRecord?: (record: UnreadableRecord) => void;
}

export interface PartitionResult {
  partition: Partition;
  /** `awaiting-signature`: rebuilt, the stored file kept until the sidecar signs the new one (signedRewrites). */
  state: PartitionState | "failed" | "awaiting-signature";
  /** The new record, when this run compacted the host-hour. */
  record?: CompactionRecord;
  /** Landing objects deleted (with dropLanding). */
  dropped?: number;
  error?: CompactError | Error;
}

/** A compaction record that cannot be read (not JSON, or not a record): skipped, its hour redone. */
export interface UnreadableRecord {
  key: string;
  reason: string;
}

/** Why `value` is not a compaction record this code can plan with, or null when it is one. */
function recordProblem(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not a JSON object";
  const r = value as Record<string, unknown>;
  for (const field of ["host", "hour", "key", "sha256"] as const)
    if (typeof r[field] !== "string") return `\`${field}\` is not a string`;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(r.hour as string)) return "`hour` is not YYYY-MM-DDTHH";
  if (!Array.isArray(r.sources)) return "`sources` is not a list";
  return null;
}

/**
 * Every landing object and compaction record of the archive. A record that cannot be read is
 * listed in `unreadable` and left out (its host-hour is then compacted anew, rewriting it).
 */
export async function readArchiveState(store: ArchiveStore): Promise<{
  landing: LandingObject[];
  records: Map<string, CompactionRecord>;
  unreadable: UnreadableRecord[];
}> {
  const landing: LandingObject[] = [];
  for await (const o of store.list("dt=")) {
    const parsed = parseLandingKey(o.key, o.size);
    if (parsed) landing.push(parsed);
  }
  const records = new Map<string, CompactionRecord>();
  const unreadable: UnreadableRecord[] = [];
  for await (const o of store.list(`${COMPACTION_DIR}/`)) {
    // `<host>/<hour>.json`; a rewrite's request and signature beside it are not records.
    if (!RECORD_NAME.test(o.key)) continue;
    const body = await store.read(o.key);
    if (!body) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch (error) {
      unreadable.push({ key: o.key, reason: `not JSON (${(error as Error).message})` });
      continue;
    }
    const problem = recordProblem(parsed);
    if (problem) {
      unreadable.push({ key: o.key, reason: problem });
      continue;
    }
    const record = parsed as CompactionRecord;
    const [dt = "", hour = ""] = record.hour.split("T");
    records.set(partitionId({ dt, hour, host: record.host }), record);
  }
  return { landing, records, unreadable };
}

/** Whether a Parquet file the record names is in the store (a record without its file is redone). */
async function parquetPresent(store: ArchiveStore): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const o of store.list(`${PARQUET_DIR}/`)) keys.add(o.key);
  return keys;
}

/** Compacts every closed host-hour that is not compacted yet (or grew since); one at a time. */
export async function compactArchive(
  store: ArchiveStore,
  options: CompactArchiveOptions = {},
): Promise<PartitionResult[]> {
  const { landing, records, unreadable } = await readArchiveState(store);
  for (const u of unreadable) options.onUnreadableRecord?.(u);
  const files = await parquetPresent(store);
  const plan = planCompaction(landing, records, options.now ?? Date.now(), options.graceMs).filter((p) => {
    const label = hourLabel(p.partition);
    if (options.from && label < options.from) return false;
    if (options.to && label > options.to) return false;
    return options.host === undefined || p.partition.host === options.host;
  });
  const results: PartitionResult[] = [];
  for (const p of plan) {
    let result: PartitionResult;
    const missingFile = p.record !== undefined && !files.has(p.record.key);
    if (p.state === "open" || (p.state === "compacted" && !missingFile)) {
      result = { partition: p.partition, state: p.state, ...(p.record ? { record: p.record } : {}) };
      if (p.state === "compacted" && options.dropLanding && p.objects.length > 0)
        result.dropped = await dropLanding(store, p.objects);
    } else if (missingFile && p.dropped > 0) {
      result = {
        partition: p.partition,
        state: "failed",
        error: new CompactError(
          CompactErrorCode.INPUT,
          `${store.url}/${p.record?.key} is gone and ${p.dropped} of the landing objects it was made from were dropped: the host-hour cannot be rebuilt`,
        ),
      };
    } else {
      let signed = false;
      const awaiting = options.signedRewrites ? awaitSignature(store, p.partition) : undefined;
      try {
        const record = await compactPartition(store, p.partition, p.objects, {
          ...options,
          ...(p.record && p.dropped > 0 && !missingFile ? { previous: p.record } : {}),
          ...(awaiting
            ? {
                beforeReplace: async (r: CompactionRecord, replaces: string) => {
                  await awaiting(r, replaces);
                  signed = true;
                },
              }
            : {}),
        });
        if (signed) await clearRewrite(store, p.partition);
        result = { partition: p.partition, state: "due", record };
        if (options.dropLanding) result.dropped = await dropLanding(store, p.objects);
      } catch (error) {
        result =
          error instanceof AwaitingSignature
            ? {
                partition: p.partition,
                state: "awaiting-signature",
                ...(p.record ? { record: p.record } : {}),
              }
            : { partition: p.partition, state: "failed", error: error as Error };
      }
    }
    results.push(result);
    options.onPartition?.(result);
  }
  return results;
}

async function dropLanding(store: ArchiveStore, objects: readonly LandingObject[]): Promise<number> {
  for (const o of objects) await store.delete(o.key);
  return objects.length;
}
