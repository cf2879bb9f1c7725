/**
 * The adopt mode of the sidecar's compaction (`--compaction adopt`): the database host compacts
 * nothing. `auditpipe compact` runs elsewhere against the same archive (a CronJob, a systemd
 * timer); every interval the sidecar lists its host's compaction records (`_compaction/<host>/`,
 * one LIST request per 1,000 records), reads only those whose entity tag changed since it settled
 * them (or whose hour it shipped to and has not seen covered), and journals each file its signed
 * chain does not list yet, through the same `recordCompaction` and `journaled.json` as the child
 * mode. It never reads a Parquet file or a landing object: what makes an adopted file evidence is
 * verify's rebuild of its rows from the signed landing objects (checkCompaction), not who made it.
 *
 * A rewrite: when the external job compacts a host-hour anew (it grew), it overwrites the file the
 * chain lists; it has no sidecar to sign first with. The record then names a new SHA-256 for an
 * hour journaled with another: the sidecar signs the new file with `supersedes` (the listed one)
 * into a manifest at once (`announceCompaction`), then journals its own listing. Between the
 * overwrite and that pass verify reports the file `altered` — at most one interval
 * (docs/archive.md, "Compaction off the database host").
 *
 * Crash safety: the manifest journal fsyncs each file before `journaled.json` notes it, and the
 * entity tags are saved after both, so a kill -9 anywhere reads the record again at the next
 * pass and journals what the chain lacks — at worst a file listed twice (same key and SHA-256).
 */
import { CompactErrorCode, parquetKey, S3ArchiveStore } from "@auditpipe/compact";
import { type CompactionOptions, journalCompacted } from "./compaction.ts";
import { type CompactionStats, type SidecarCompaction, startCompactionLoop } from "./compaction-loop.ts";
import {
  type CompactionState,
  compactionState,
  type RecordView,
  toCompactedFile,
} from "./compaction-state.ts";
import type { ShippedHours } from "./shipped-hours.ts";

/**
 * A host-hour shipped to and still not covered by an adopted record this long after it ended is
 * reported (metric, warning): `auditpipe compact` closes an hour 10 minutes after it ends, and an
 * hourly job runs within the hour after that.
 */
export const UNADOPTED_AFTER_MS: number = 2 * 3_600_000;

/** For tests: the sidecar stops itself (SIGSTOP) once it has read records to journal, before journaling them. */
const TEST_STOP_AT_ENV = "AUDITPIPE_TEST_ADOPT_STOP_AT";

export interface AdoptOptions extends Omit<CompactionOptions, "archive"> {
  /** The archive's bucket (the sink's). */
  bucket: string;
  /** Where the sink's acknowledged batches are noted, for the unadopted hours. */
  shipped: ShippedHours;
}

const RECORD_KEY = /^_compaction\/([A-Za-z0-9._-]+)\/(\d{4}-\d{2}-\d{2})T(\d{2})\.json$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** The record in `body` when it is one for `host` and the hour its key names, else why not. */
export function parseAdoptedRecord(
  body: Buffer,
  host: string,
  dt: string,
  hour: string,
): RecordView | string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
  } catch {
    return "not JSON";
  }
  if (typeof r !== "object" || r === null) return "not a JSON object";
  if (r.host !== host) return `its host is ${JSON.stringify(r.host)}`;
  if (r.hour !== `${dt}T${hour}`) return `its hour is ${JSON.stringify(r.hour)}`;
  if (r.key !== parquetKey({ dt, hour, host }))
    return `its file is ${JSON.stringify(r.key)}, not the host-hour's`;
  if (typeof r.sha256 !== "string" || !SHA256.test(r.sha256)) return "no SHA-256";
  if (typeof r.rowsDigest !== "string") return "no rows digest";
  if (!Number.isSafeInteger(r.size) || !Number.isSafeInteger(r.rows)) return "no size or row count";
  const sources = r.sources;
  if (
    !Array.isArray(sources) ||
    !sources.every(
      (s: { key?: unknown; sha256?: unknown }) =>
        typeof s?.key === "string" && typeof s.sha256 === "string" && SHA256.test(s.sha256),
    )
  )
    return "its sources are not a list of keys with SHA-256s";
  return {
    hour: r.hour,
    key: r.key,
    sha256: r.sha256,
    size: r.size as number,
    rows: r.rows as number,
    rowsDigest: r.rowsDigest,
    sources: (sources as { key: string; sha256: string }[]).map((s) => ({ key: s.key, sha256: s.sha256 })),
  };
}

interface ReadRecord {
  key: string;
  etag: string | undefined;
  record: RecordView;
}

/** Lists the host's records and reads those that may say something new. */
async function readRecords(
  o: AdoptOptions,
  store: S3ArchiveStore,
  seen: Record<string, string>,
): Promise<ReadRecord[]> {
  const watched = new Set(o.shipped.hours());
  const found: ReadRecord[] = [];
  for await (const obj of store.list(`_compaction/${o.host}/`)) {
    const m = RECORD_KEY.exec(obj.key);
    if (!m || m[1] !== o.host) continue;
    const [, , dt = "", hour = ""] = m;
    if (obj.etag !== undefined && seen[obj.key] === obj.etag && !watched.has(`${dt}T${hour}`)) continue;
    const body = await store.read(obj.key);
    if (!body) continue;
    const record = parseAdoptedRecord(body, o.host, dt, hour);
    if (typeof record === "string") {
      // Not adopted: the job that wrote it reads it as unreadable too and compacts the hour anew.
      o.logger.warn({ key: obj.key, reason: record }, "compaction: a compaction record not adopted");
      continue;
    }
    found.push({ key: obj.key, etag: obj.etag, record });
  }
  return found;
}

/** One pass: journal what the chain lacks, settle what it has, warn of hours nobody compacts. */
async function adoptPass(
  o: AdoptOptions,
  store: S3ArchiveStore,
  state: CompactionState,
  stats: CompactionStats,
): Promise<void> {
  const seen = await state.seen();
  const found = await readRecords(o, store, seen);
  const journaled = await state.journaled();
  const due = found.filter((f) => journaled[f.record.hour] !== f.record.sha256);
  if (due.length > 0 && process.env[TEST_STOP_AT_ENV] === "read") process.kill(process.pid, "SIGSTOP");
  let changed = false;
  for (const { key, etag, record } of found) {
    const listed = journaled[record.hour];
    if (listed !== record.sha256) {
      // Compacted anew elsewhere, over a file the chain lists: signed at once with what it replaces.
      if (listed !== undefined) {
        await o.announce({ ...toCompactedFile(o.prefix, record), supersedes: listed });
        o.logger.info(
          { hour: record.hour, key: record.key, sha256: record.sha256, supersedes: listed },
          "compaction: a file compacted anew elsewhere announced in the signed chain",
        );
      }
      await journalCompacted(o, state, record, stats);
      journaled[record.hour] = record.sha256;
    }
    o.shipped.covered(
      record.hour,
      record.sources.map((s) => s.key),
    );
    if (etag !== undefined && seen[key] !== etag) {
      seen[key] = etag;
      changed = true;
    }
  }
  if (changed) await state.writeSeen(seen);
  const overdue = o.shipped.overdue(Date.now(), UNADOPTED_AFTER_MS);
  if (overdue.length > 0)
    o.logger.warn(
      { hours: overdue.slice(0, 5), count: overdue.length },
      "compaction: host-hours shipped long ago have no compaction record to adopt: is auditpipe compact running against this archive (--compaction adopt)?",
    );
}

/** The adopt mode: every interval, the compaction records `auditpipe compact` wrote elsewhere are journaled. */
export function startAdoption(o: AdoptOptions): SidecarCompaction {
  const state = compactionState(o.stateDir);
  const store = new S3ArchiveStore(o.bucket, o.prefix, {
    ...(o.s3.endpoint ? { endpoint: o.s3.endpoint } : {}),
    ...(o.s3.region ? { region: o.s3.region } : {}),
    forcePathStyle: o.s3.forcePathStyle,
  });
  const loop = startCompactionLoop({
    intervalMs: o.intervalMs,
    logger: o.logger,
    defaultCode: CompactErrorCode.STORE,
    runOnce: (stats) => adoptPass(o, store, state, stats),
    unadoptedHours: () => o.shipped.overdue(Date.now(), UNADOPTED_AFTER_MS).length,
  });
  return {
    ...loop,
    async stop() {
      await loop.stop();
      store.close();
    },
  };
}
