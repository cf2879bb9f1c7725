/**
 * Compacts one host-hour: its landing NDJSON objects → one typed Parquet file, rows in the total
 * order, outcome decisions applied, and the compaction record that says what went in.
 *
 * Crash-safety: everything is built in a private work dir; the file is stored whole (rename, or
 * one PUT) before its record, and a host-hour without a record (or whose record does not list
 * every landing object) is compacted again from the same inputs into the same rows. Nothing is
 * deleted here: dropping landing objects is the caller's, after the record is stored.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { applyDecisions, DECISION_KEY, type LineCounts } from "./_decisions.ts";
import { DEFAULT_COMPACTION_MEMORY_LIMIT, type Engine, openEngine } from "./engine.ts";
import { CompactError, CompactErrorCode } from "./errors.ts";
import { compactionRecordKey, hourLabel, type LandingObject, type Partition, parquetKey } from "./layout.ts";
import { digestRows } from "./rows-digest.ts";
import {
  ndjsonColumns,
  PARQUET_COLUMNS,
  PARQUET_SCHEMA_VERSION,
  quoteIdent,
  quoteLiteral,
  ROW_ORDER,
  typedSelectList,
} from "./schema.ts";
import type { ArchiveStore } from "./store.ts";

/** The compaction record's format version. */
export const COMPACTION_RECORD_VERSION = 1;

/** Rows per Parquet row group: small enough that a time-bounded query skips most of an hour by statistics, and that the writer's buffer of one group fits the engine's memory limit beside the sort (100,000 rows of pgbench statements did not fit 96 MB). */
export const ROW_GROUP_ROWS = 30_000;

/** One landing object that went into a compacted file. */
export interface CompactedSource {
  key: string;
  sha256: string;
  size: number;
}

/** What a compacted host-hour holds; stored at `_compaction/<host>/<hour>.json`, listed in manifests. */
export interface CompactionRecord {
  version: typeof COMPACTION_RECORD_VERSION;
  host: string;
  /** `YYYY-MM-DDTHH`: the entry-time partition (`dt=`/`hour=`) of the landing objects. */
  hour: string;
  /** The Parquet file's key, relative to the archive root. */
  key: string;
  /** SHA-256 (hex) of the file's bytes. */
  sha256: string;
  size: number;
  rows: number;
  /** See rows-digest.ts: the same for the same rows in the same order, whatever the writer. */
  rowsDigest: string;
  /** The landing objects compacted into it, by key. */
  sources: CompactedSource[];
  /** A file this one was built on, when some of its sources had been dropped (retention). */
  base?: { key: string; sha256: string; rowsDigest: string; rows: number };
  counts: {
    /** Shipped lines read (entries, attempts and outcome decisions). */
    lines: number;
    entries: number;
    attempts: number;
    /** Outcome decisions applied to an entry in the same file (not kept as rows). */
    decisionsApplied: number;
    /** Decisions for an entry in an earlier hour: kept as `record = 'outcome'` rows. */
    laterDecisions: number;
    /** Entries whose outcome is still `pending` in this file. */
    pending: number;
  };
  schemaVersion: number;
  /** The engine that wrote it (`duckdb v1.5.6`). */
  writer: string;
  created: string;
}

export interface CompactPartitionOptions {
  /** Parent of the private work dir (default the OS temp dir). */
  workDir?: string;
  /** DuckDB memory limit; default DEFAULT_COMPACTION_MEMORY_LIMIT. */
  memoryLimit?: string;
  threads?: number;
  /** Rows per time slice (default SLICE_ROWS); tests set it low to sort in many slices. */
  sliceRows?: number;
  /** Landing objects a read_json call (default STAGE_GROUP_OBJECTS); tests set it low to stage in many groups. */
  stageGroupObjects?: number;
  /** The record of an earlier compaction whose dropped sources must be carried over from its file. */
  previous?: CompactionRecord;
  /** Build and read back the file, return its record, store nothing (checkCompaction rebuilds so). */
  dryRun?: boolean;
  /**
   * Called before the file is stored when its key already holds other bytes (the host-hour is
   * compacted anew), with the new record and the SHA-256 of the bytes it replaces; the file is
   * stored only once this resolves (the sidecar signs the new hash into its chain first). Not
   * called for a key that is new, nor when the stored bytes are the new ones.
   */
  beforeReplace?: (record: CompactionRecord, replaces: string) => Promise<void>;
  /** For tests: called between steps, so a test can kill the process at each. */
  onStep?: (step: CompactionStep) => void | Promise<void>;
}

export type CompactionStep =
  | "inputs-read"
  | "parquet-written"
  | "rewrite-announced"
  | "parquet-stored"
  | "record-stored";

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(path), hash);
  return hash.digest("hex");
}

/** SHA-256 of what `key` holds in the store now, or null when it holds nothing. */
async function storedSha256(store: ArchiveStore, key: string, work: string): Promise<string | null> {
  let exists = false;
  for await (const o of store.list(key)) if (o.key === key) exists = true;
  if (!exists) return null;
  const local = store.localPath(key);
  if (local !== null) return sha256File(local);
  const path = join(work, "stored.parquet");
  await store.download(key, path);
  try {
    return await sha256File(path);
  } finally {
    await rm(path, { force: true });
  }
}

const COLUMN_LIST = PARQUET_COLUMNS.map((c) => quoteIdent(c.name)).join(", ");

/**
 * Staged and sliced rows: Parquet the engine reads back once, compressed cheaply, without
 * dictionaries (plain encoding at once: the writer's dictionary attempts on every string column
 * cost ~1 s of a 420,000-row hour's slices, more than the final file's writer then spends building
 * its own; the final file is byte-for-byte the same).
 */
const STAGE_FORMAT = "FORMAT parquet, COMPRESSION snappy, DICTIONARY_SIZE_LIMIT 1";

/**
 * Rows per time slice: a slice is sorted in the engine's memory beside the Parquet writer. Smaller
 * slices lowered the compaction child's peak RSS (50,000: 190 MB, 25,000: 171 MB, 10,000: 165 MB
 * on the reference hour at 48 MB; docs/benchmarks.md, "Compaction memory"); each slice reads the
 * staged files' metadata again (cached), so not smaller.
 */
export const SLICE_ROWS = 25_000;

const pathList = (paths: readonly string[]): string => `[${paths.map(quoteLiteral).join(", ")}]`;

/** Timestamps sampled to place the slice bounds: the quantiles' memory stays flat however large the hour. */
const BOUNDS_SAMPLE = 100_000;

/**
 * Where the time slices start: distinct `ts` values (epoch microseconds) that cut the rows into
 * about `rows / sliceRows` slices, from a fixed-seed sample (every row up to BOUNDS_SAMPLE). Rows
 * with the same `ts` always fall in the same slice; the bounds only size the slices, the order
 * within and across them is the total order whatever they are.
 */
async function sliceBounds(c: Engine["connection"], rows: number, sliceRows: number): Promise<bigint[]> {
  const n = Math.ceil(rows / sliceRows);
  if (n <= 1) return [];
  const quantiles = Array.from({ length: n - 1 }, (_, i) => ((i + 1) / n).toFixed(6)).join(", ");
  const result = await c.runAndReadAll(
    `SELECT DISTINCT unnest(quantile_disc(epoch_us(ts), [${quantiles}])) AS b
     FROM (SELECT ts FROM lines WHERE ts IS NOT NULL) USING SAMPLE reservoir(${BOUNDS_SAMPLE} ROWS) REPEATABLE (1)
     ORDER BY b`,
  );
  return result
    .getRows()
    .map((r) => r[0])
    .filter((b): b is bigint => typeof b === "bigint");
}

/** The WHERE clause of each slice, in order: NULL `ts` first (the order puts them first), then by time. */
function sliceFilters(bounds: readonly bigint[]): string[] {
  if (bounds.length === 0) return [""];
  const at = (b: bigint): string => `CAST(make_timestamp(${b}) AS TIMESTAMPTZ)`;
  return [
    `WHERE ts IS NULL OR ts < ${at(bounds[0] as bigint)}`,
    ...bounds.slice(1).map((b, i) => `WHERE ts >= ${at(bounds[i] as bigint)} AND ts < ${at(b)}`),
    `WHERE ts >= ${at(bounds[bounds.length - 1] as bigint)}`,
  ];
}

/**
 * Compacts `objects` (the landing objects of `partition`) and stores the file and its record.
 * With `previous` whose sources are partly gone from the store, that file's rows stand in for them.
 */
export async function compactPartition(
  store: ArchiveStore,
  partition: Partition,
  objects: readonly LandingObject[],
  options: CompactPartitionOptions = {},
): Promise<CompactionRecord> {
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), "auditpipe-compact-"));
  try {
    const inputs = await gatherInputs(store, objects, options.previous, work);
    const engine = await openEngine({
      path: join(work, "compact.duckdb"),
      ...(options.threads === undefined ? {} : { threads: options.threads }),
      memoryLimit: options.memoryLimit ?? DEFAULT_COMPACTION_MEMORY_LIMIT,
      compactAllocator: true,
      tempDirectory: join(work, "spill"),
    });
    try {
      const c = engine.connection;
      // Every slice reads all staged files' footers: read them once.
      await c.run("SET parquet_metadata_cache = true");
      const memoryLimit = options.memoryLimit ?? DEFAULT_COMPACTION_MEMORY_LIMIT;
      const stages = await stageInputs(c, store, partition, inputs, work, {
        memoryLimit,
        groupObjects: options.stageGroupObjects ?? STAGE_GROUP_OBJECTS,
      });
      await options.onStep?.("inputs-read");
      const counts = await applyDecisions(c);
      const out = join(work, "out.parquet");
      await writeSorted(c, partition, counts.lines, options.sliceRows ?? SLICE_ROWS, work, out);
      for (const f of stages) await rm(f, { force: true });
      await options.onStep?.("parquet-written");
      const record = await readBack(c, partition, counts, inputs, out, work, engine.version);
      engine.close();
      if (options.dryRun) return record;
      await storeCompacted(store, partition, record, out, work, options);
      return record;
    } finally {
      try {
        engine.close();
      } catch {
        // already closed
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A host-hour's inputs, local: the landing objects' paths in key order, the earlier file's if one is built on. */
interface Inputs {
  sorted: LandingObject[];
  paths: string[];
  /** Every source of the new file, hashed: the objects, and those the earlier file carries over. */
  sources: CompactedSource[];
  /** The earlier file whose rows stand in for sources gone from the store, and its local path. */
  base?: { record: CompactionRecord; path: string };
}

/** Local objects are read in place, S3 objects downloaded first; every one hashed. */
async function gatherInputs(
  store: ArchiveStore,
  objects: readonly LandingObject[],
  previous: CompactionRecord | undefined,
  work: string,
): Promise<Inputs> {
  await mkdir(join(work, "in"));
  const present = new Set(objects.map((o) => o.key));
  const carried = previous?.sources.filter((s) => !present.has(s.key)) ?? [];
  const base = carried.length > 0 ? previous : undefined;
  const sorted = [...objects].sort((a, b) => (a.key < b.key ? -1 : 1));
  const paths: string[] = [];
  const sources: CompactedSource[] = [];
  for (const [i, o] of sorted.entries()) {
    let path = store.localPath(o.key);
    if (path === null) {
      path = join(work, "in", `${i}-${o.key.split("/").pop()}`);
      await store.download(o.key, path);
    }
    paths.push(path);
    sources.push({ key: o.key, sha256: await sha256File(path), size: (await stat(path)).size });
  }
  if (!base) return { sorted, paths, sources };
  const basePath = store.localPath(base.key) ?? join(work, "in", "base.parquet");
  if (store.localPath(base.key) === null) await store.download(base.key, basePath);
  if ((await sha256File(basePath)) !== base.sha256)
    throw new CompactError(
      CompactErrorCode.INPUT,
      `${store.url}/${base.key} is not the file its compaction record lists (SHA-256 differs): its dropped sources cannot be carried over`,
    );
  sources.push(...carried);
  sources.sort((a, b) => (a.key < b.key ? -1 : 1));
  return { sorted, paths, sources, base: { record: base, path: basePath } };
}

/**
 * Landing objects read by one read_json call while staging. Each call allocates the JSON reader's
 * buffers anew (~12 MB, faulted in again: the allocator returns freed pages at once), which cost
 * ~0.75 µs a row when every object had its own call (docs/benchmarks.md, "CPU per row").
 */
export const STAGE_GROUP_OBJECTS = 64;

/**
 * The engine's memory limit while staging, when the configured one is lower: read_json over a
 * list of files does not fit 48 MB (it did one file at a time), 64 MB does. The child's peak RSS
 * while staging stays below the sort's (docs/benchmarks.md, "CPU per row").
 */
export const STAGING_MEMORY_LIMIT = "64MB";

/** Rows per row group of a staged file: about one landing object's, so a slice's time filter skips by statistics what it skipped by file. */
const STAGE_ROW_GROUP_ROWS = 10_000;

const UNITS: Record<string, number> = {
  "": 1,
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
  TIB: 2 ** 40,
};

/** Bytes of a DuckDB memory limit such as `48MB` or `1.5 GiB`; null when it is not one of those forms. */
export function memoryLimitBytes(limit: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(limit);
  const unit = m ? UNITS[(m[2] ?? "").toUpperCase()] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : null;
}

/** The limit to stage under: STAGING_MEMORY_LIMIT, or the configured one when it is higher (or not understood). */
function stagingLimit(configured: string): string {
  const have = memoryLimitBytes(configured);
  const need = memoryLimitBytes(STAGING_MEMORY_LIMIT) as number;
  return have !== null && have < need ? STAGING_MEMORY_LIMIT : configured;
}

/**
 * Stage: the objects, up to STAGE_GROUP_OBJECTS a read_json call, into Parquet files of typed
 * rows (and the carried-over file into one of its own); then the view `lines` over them all, in
 * key order. Returns the staged files.
 */
async function stageInputs(
  c: Engine["connection"],
  store: ArchiveStore,
  partition: Partition,
  inputs: Inputs,
  work: string,
  { memoryLimit, groupObjects }: { memoryLimit: string; groupObjects: number },
): Promise<string[]> {
  const { paths, sorted, base } = inputs;
  const stages: string[] = [];
  const stage = (i: number): string => join(work, "stage", `${String(i).padStart(6, "0")}.parquet`);
  const copy = (from: readonly string[], to: string): Promise<unknown> =>
    c.run(
      `COPY (SELECT *, ${DECISION_KEY} AS _key FROM (
         SELECT ${typedSelectList()} FROM read_json(${pathList(from)}, format = 'newline_delimited',
           columns = ${ndjsonColumns()}))) TO ${quoteLiteral(to)} (${STAGE_FORMAT}, ROW_GROUP_SIZE ${STAGE_ROW_GROUP_ROWS})`,
    );
  await mkdir(join(work, "stage"));
  const staging = stagingLimit(memoryLimit);
  if (staging !== memoryLimit) await c.run(`SET memory_limit = ${quoteLiteral(staging)}`);
  for (let first = 0; first < paths.length; first += groupObjects) {
    const group = paths.slice(first, first + groupObjects);
    try {
      await copy(group, stage(first));
    } catch (error) {
      // Name the object that cannot be read, with its own error: each of the group alone (only
      // on this path).
      let bad: number | null = null;
      let cause = error;
      for (const [i, path] of group.entries()) {
        const alone = await copy([path], join(work, "stage", "alone.parquet")).then(
          () => null,
          (e: unknown) => e,
        );
        if (alone !== null) {
          [bad, cause] = [first + i, alone];
          break;
        }
      }
      const what =
        bad === null
          ? `${store.url}/${sorted[first]?.key} … ${sorted[first + group.length - 1]?.key} (host ${partition.host}, ${hourLabel(partition)}, each readable alone) cannot be staged together`
          : `${store.url}/${sorted[bad]?.key} (host ${partition.host}, ${hourLabel(partition)}) cannot be read as shipped NDJSON`;
      throw new CompactError(CompactErrorCode.INPUT, `${what}: ${(cause as Error).message.split("\n")[0]}`, {
        cause,
      });
    }
    stages.push(stage(first));
  }
  if (staging !== memoryLimit) await c.run(`SET memory_limit = ${quoteLiteral(memoryLimit)}`);
  if (base) {
    await c.run(
      `COPY (SELECT ${COLUMN_LIST}, ${DECISION_KEY} AS _key FROM read_parquet(${quoteLiteral(base.path)}))
       TO ${quoteLiteral(stage(paths.length))} (${STAGE_FORMAT})`,
    );
    stages.push(stage(paths.length));
  }
  if (stages.length === 0)
    throw new CompactError(
      CompactErrorCode.INPUT,
      `${hourLabel(partition)} (host ${partition.host}) has no landing objects and no earlier file to compact`,
    );
  await c.run(`CREATE VIEW lines AS SELECT * FROM read_parquet(${pathList(stages)})`);
  return stages;
}

/**
 * Sort in slices of log time (ts is the order's first key, so slice after slice in time order is
 * the total order), each small enough to sort in the engine's memory; then one pass concatenates
 * them in order into the file `out` (insertion order is kept: no sort there).
 */
async function writeSorted(
  c: Engine["connection"],
  partition: Partition,
  lines: number,
  sliceRows: number,
  work: string,
  out: string,
): Promise<void> {
  const bounds = await sliceBounds(c, lines, sliceRows);
  const slices: string[] = [];
  for (const [i, where] of sliceFilters(bounds).entries()) {
    const slice = join(work, "stage", `slice-${String(i).padStart(6, "0")}.parquet`);
    await c.run(
      `COPY (SELECT ${COLUMN_LIST} FROM final ${where} ORDER BY ${ROW_ORDER}) TO ${quoteLiteral(slice)} (${STAGE_FORMAT})`,
    );
    slices.push(slice);
  }
  const metadata = `{auditpipe_schema: '${PARQUET_SCHEMA_VERSION}', auditpipe_host: ${quoteLiteral(partition.host)}, auditpipe_hour: '${hourLabel(partition)}'}`;
  await c.run(
    `COPY (SELECT ${COLUMN_LIST} FROM read_parquet(${pathList(slices)})) TO ${quoteLiteral(out)}
     (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${ROW_GROUP_ROWS}, KV_METADATA ${metadata})`,
  );
  for (const f of slices) await rm(f, { force: true });
}

/** Reads the file back: every row there, in order, and the digest of what is really stored; its record. */
async function readBack(
  c: Engine["connection"],
  partition: Partition,
  counts: LineCounts,
  inputs: Inputs,
  out: string,
  work: string,
  engineVersion: string,
): Promise<CompactionRecord> {
  const expected = counts.entries + counts.attempts + counts.laterDecisions;
  const digest = await digestRows(c, `read_parquet(${quoteLiteral(out)})`, { workDir: work });
  if (digest.rows !== expected)
    throw new CompactError(
      CompactErrorCode.READBACK,
      `the Parquet file of ${hourLabel(partition)} (host ${partition.host}) holds ${digest.rows} rows, ${expected} were written`,
    );
  const base = inputs.base?.record;
  return {
    version: COMPACTION_RECORD_VERSION,
    host: partition.host,
    hour: hourLabel(partition),
    key: parquetKey(partition),
    sha256: await sha256File(out),
    size: (await stat(out)).size,
    rows: digest.rows,
    rowsDigest: digest.digest,
    sources: inputs.sources,
    ...(base
      ? { base: { key: base.key, sha256: base.sha256, rowsDigest: base.rowsDigest, rows: base.rows } }
      : {}),
    counts: {
      lines: counts.lines,
      entries: counts.entries,
      attempts: counts.attempts,
      decisionsApplied: counts.decisions - counts.laterDecisions,
      laterDecisions: counts.laterDecisions,
      pending: counts.pending,
    },
    schemaVersion: PARQUET_SCHEMA_VERSION,
    writer: `duckdb ${engineVersion}`,
    created: new Date().toISOString(),
  };
}

/** Stores the file, then its record (announcing a rewrite of a different file first, if asked). */
async function storeCompacted(
  store: ArchiveStore,
  partition: Partition,
  record: CompactionRecord,
  out: string,
  work: string,
  options: CompactPartitionOptions,
): Promise<void> {
  if (options.beforeReplace) {
    const replaces = await storedSha256(store, record.key, work);
    if (replaces !== null && replaces !== record.sha256) {
      await options.beforeReplace(record, replaces);
      await options.onStep?.("rewrite-announced");
    }
  }
  await store.upload(record.key, out, "application/vnd.apache.parquet");
  await options.onStep?.("parquet-stored");
  await store.write(
    compactionRecordKey(partition),
    Buffer.from(`${JSON.stringify(record, null, 2)}\n`),
    "application/json",
  );
  await options.onStep?.("record-stored");
}
