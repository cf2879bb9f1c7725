/**
 * The archive as one SQL view, `audit`, on the embedded engine: the compacted Parquet files, plus
 * the landing NDJSON of host-hours not compacted yet (the open hour, a late upload), read with the
 * same typed columns. Bounded by `from`/`to`, only the partitions that can hold those times are
 * read (fetched first, from S3). Then the engine is locked: it reads the archive's files and
 * nothing else, writes nothing, and cannot be unlocked by a query.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type ArchiveStore,
  type Engine,
  type LandingObject,
  ndjsonColumns,
  openEngine,
  PARQUET_COLUMNS,
  partitionId,
  partitionStart,
  quoteIdent,
  quoteLiteral,
  readArchiveState,
  typedSelectList,
} from "@auditpipe/compact";
import { QueryError, QueryErrorCode } from "./errors.ts";

const HOUR_MS = 3_600_000;

/**
 * A landing object is filed under the hour of its batch's first entry, so its last entries can
 * belong to the next hour (a batch closes within a minute by default): a query from time T reads
 * the partition of the hour before T too, and filters rows by `ts`.
 */
export const PARTITION_SPILL_MS: number = HOUR_MS;

export interface AuditViewOptions {
  /** First instant of interest (inclusive); rows before it are left out, and partitions that cannot hold it are not read. */
  from?: Date;
  /** End (exclusive). */
  to?: Date;
  /** One host's partitions. */
  host?: string;
  /** Parent of the private work dir (S3 downloads, spills). */
  workDir?: string;
  threads?: number;
  memoryLimit?: string;
  /** Reports each object fetched from S3 (for progress). */
  onFetch?: (done: number, total: number, bytes: number) => void;
}

/** What the view reads: counted before any query runs. */
export interface ViewScope {
  parquetFiles: number;
  ndjsonFiles: number;
  /** Bytes of the files in range. */
  bytes: number;
  /** Bytes of every data file in the archive, for comparison. */
  archiveBytes: number;
  /** Bytes downloaded from S3 to answer (0 for a local archive). */
  fetchedBytes: number;
}

export interface AuditView {
  engine: Engine;
  scope: ViewScope;
  close(): Promise<void>;
}

function inRange(hourStart: number, options: AuditViewOptions): boolean {
  if (options.from && hourStart + HOUR_MS + PARTITION_SPILL_MS <= options.from.getTime()) return false;
  if (options.to && hourStart >= options.to.getTime()) return false;
  return true;
}

/** Opens the engine with the `audit` view over `store`, locked down. */
export async function openAuditView(store: ArchiveStore, options: AuditViewOptions = {}): Promise<AuditView> {
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), "auditpipe-query-"));
  try {
    const { landing, records } = await readArchiveState(store);
    const parquet: { key: string; size: number }[] = [];
    const ndjson: LandingObject[] = [];
    let archiveBytes = 0;
    const byPartition = new Map<string, LandingObject[]>();
    for (const o of landing) {
      archiveBytes += o.size;
      const id = partitionId(o);
      byPartition.set(id, [...(byPartition.get(id) ?? []), o]);
    }
    for (const [id, record] of records) {
      archiveBytes += record.size;
      const [dt = "", hour = ""] = record.hour.split("T");
      const listed = new Set(record.sources.map((s) => s.key));
      const keep =
        (options.host === undefined || record.host === options.host) &&
        inRange(partitionStart({ dt, hour }), options);
      if (keep) parquet.push({ key: record.key, size: record.size });
      // Landing objects the record does not list (uploaded after it was made) are read as NDJSON.
      const late = (byPartition.get(id) ?? []).filter((o) => !listed.has(o.key));
      byPartition.set(id, late);
    }
    for (const objects of byPartition.values())
      for (const o of objects) {
        if (options.host !== undefined && o.host !== options.host) continue;
        if (inRange(partitionStart(o), options)) ndjson.push(o);
      }
    // Entries without a timestamp (dt=undated) are only in an unbounded view.
    if (!options.from && !options.to)
      for await (const o of store.list("dt=undated/")) {
        archiveBytes += o.size;
        if (/\.ndjson\.(gz|zst)$/.test(o.key))
          ndjson.push({ key: o.key, size: o.size, dt: "undated", hour: "00", host: "local" });
      }

    // Local archives are read in place; S3 objects are fetched into the work dir, keys kept.
    const root = store.localPath("");
    const cache = join(work, "archive");
    let fetchedBytes = 0;
    const paths = async (keys: { key: string; size: number }[]): Promise<string[]> => {
      const out: string[] = [];
      for (const o of keys) {
        const local = store.localPath(o.key);
        if (local !== null) {
          out.push(local);
          continue;
        }
        const path = join(cache, o.key);
        await mkdir(dirname(path), { recursive: true });
        await store.download(o.key, path);
        fetchedBytes += o.size;
        options.onFetch?.(out.length + 1, keys.length, fetchedBytes);
        out.push(path);
      }
      return out;
    };
    const parquetPaths = await paths(parquet);
    const ndjsonPaths = await paths(ndjson);

    const engine = await openEngine({
      threads: options.threads ?? 2,
      memoryLimit: options.memoryLimit ?? "512MB",
      tempDirectory: join(work, "spill"),
    });
    try {
      await createViews(engine, parquetPaths, ndjsonPaths, options);
      // Locked: only the archive's files can be read, and no setting changed back.
      const allowed = [root ?? cache].map((d) => quoteLiteral(d.endsWith("/") ? d : `${d}/`));
      const c = engine.connection;
      await c.run(`SET allowed_directories = [${allowed.join(", ")}]`);
      await c.run("SET enable_external_access = false");
      await c.run("SET enable_progress_bar = true");
      await c.run("SET enable_progress_bar_print = false");
      await c.run("SET lock_configuration = true");
    } catch (error) {
      engine.close();
      throw error;
    }
    const bytes = parquet.reduce((n, o) => n + o.size, 0) + ndjson.reduce((n, o) => n + o.size, 0);
    return {
      engine,
      scope: { parquetFiles: parquet.length, ndjsonFiles: ndjson.length, bytes, archiveBytes, fetchedBytes },
      close: async () => {
        engine.close();
        await rm(work, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}

const COLUMNS = PARQUET_COLUMNS.map((c) => quoteIdent(c.name)).join(", ");
/** The key an outcome decision and its entry share (as compaction matches them). */
const DECISION_KEY = (
  t: string,
): string => `CASE WHEN ${t}.session_id IS NOT NULL AND ${t}.session_line IS NOT NULL
  THEN 's' || ${t}.session_id || '/' || ${t}.session_line
  ELSE 'o' || coalesce(${t}.source.file, '') || '@' || coalesce(CAST(${t}.source."offset" AS VARCHAR), '') END`;

async function createViews(
  engine: Engine,
  parquet: string[],
  ndjson: string[],
  options: AuditViewOptions,
): Promise<void> {
  const parts: string[] = [];
  const list = (paths: string[]): string => `[${paths.map(quoteLiteral).join(", ")}]`;
  if (parquet.length > 0)
    parts.push(`SELECT ${COLUMNS}, host FROM read_parquet(${list(parquet)}, hive_partitioning = true)`);
  if (ndjson.length > 0)
    parts.push(`SELECT ${typedSelectList()},
        coalesce(nullif(regexp_extract(filename, '/hour=[0-9]{2}/([^/]+)/[^/]+$', 1), ''), 'local') AS host
      FROM read_json(${list(ndjson)}, format = 'newline_delimited', columns = ${ndjsonColumns()}, filename = true)`);
  if (parts.length === 0) {
    const empty = PARQUET_COLUMNS.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(", ");
    parts.push(`SELECT ${empty}, CAST(NULL AS VARCHAR) AS host WHERE false`);
  }
  const c = engine.connection;
  try {
    await c.run(`CREATE VIEW audit_rows AS ${parts.join(" UNION ALL BY NAME ")}`);
  } catch (error) {
    throw new QueryError(
      QueryErrorCode.ARCHIVE,
      `the archive's files cannot be read: ${(error as Error).message.split("\n")[0]}`,
      { cause: error },
    );
  }
  const bounds: string[] = ["r.record <> 'outcome'"];
  if (options.from) bounds.push(`r.ts >= ${quoteLiteral(options.from.toISOString())}::TIMESTAMPTZ`);
  if (options.to) bounds.push(`r.ts < ${quoteLiteral(options.to.toISOString())}::TIMESTAMPTZ`);
  const where = bounds.join(" AND ");
  // A decision that came in a later hour than its entry is a `record = 'outcome'` row there:
  // applied here to the entries still `pending` in their own file (few), so the other rows are a
  // plain scan.
  await c.run(`CREATE VIEW audit AS
    SELECT r.* FROM audit_rows r WHERE ${where} AND r.outcome IS DISTINCT FROM 'pending'
    UNION ALL
    SELECT r.* REPLACE (coalesce(d.outcome, r.outcome) AS outcome,
                        CASE WHEN d.outcome IS NULL THEN r.sqlstate ELSE d.sqlstate END AS sqlstate)
    FROM audit_rows r
    LEFT JOIN (SELECT ${DECISION_KEY("o")} AS _key, max(o.outcome) AS outcome, max(o.sqlstate) AS sqlstate
               FROM audit_rows o WHERE o.record = 'outcome' GROUP BY ALL) d
      ON ${DECISION_KEY("r")} = d._key
    WHERE ${where} AND r.outcome = 'pending'`);
}
