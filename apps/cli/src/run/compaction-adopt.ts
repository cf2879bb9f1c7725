/**
 * The adopt mode of the sidecar's compaction (`--compaction adopt`, the default): the database
 * host compacts nothing. `auditpipe compact` runs elsewhere against the same archive (a CronJob, a
 * systemd timer); every interval the sidecar lists its host's compaction records (`_compaction/<host>/`,
 * one LIST request per 1,000 records), reads only those whose entity tag changed since it settled
 * them (or whose hour it shipped to and has not seen covered), and journals each file its signed
 * chain does not list yet, through the same `recordCompaction` and `journaled.json` as the child
 * mode. It never reads a Parquet file or a landing object: what makes an adopted file evidence is
 * verify's rebuild of its rows from the signed landing objects (checkCompaction), not who made it.
 *
 * A rewrite (a host-hour compacted anew elsewhere, over a file the chain lists): with
 * `compact --signed-rewrites` the job first leaves a request (`<hour>.rewrite.json`); the sidecar
 * signs the new file with `supersedes` into a manifest at once (`announceCompaction`) when the
 * file it replaces is one it signed, and leaves its signature (`<hour>.signed.json`) for the job's
 * next run, which only then overwrites (@auditpipe/compact's signed-rewrite.ts). A job without it
 * overwrites at once: the record then names a new SHA-256 for an hour journaled with another, and
 * the sidecar signs it the same way after the fact — verify reports the file `altered` in between,
 * at most one interval (docs/archive.md, "Compaction off the database host").
 *
 * Crash safety: the manifest journal fsyncs each file before `journaled.json` notes it, and the
 * entity tags are saved after both, so a kill -9 anywhere reads the record again at the next
 * pass and journals what the chain lacks — at worst a file listed twice (same key and SHA-256).
 */
import {
  CompactErrorCode,
  parquetKey,
  type RewriteSignature,
  rewriteSignatureKey,
  S3ArchiveStore,
} from "@auditpipe/compact";
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

/** The unadopted-hours warning is logged at most this often: adopt is the default, so a host nobody compacts for would otherwise warn every pass. */
export const UNADOPTED_WARN_EVERY_MS: number = 3_600_000;

export interface AdoptOptions extends CompactionOptions {
  /** The archive's bucket (the sink's). */
  bucket: string;
  /** Where the sink's acknowledged batches are noted, for the unadopted hours. */
  shipped: ShippedHours;
}

/** A record (`<hour>.json`) or a rewrite request of `compact --signed-rewrites` (`<hour>.rewrite.json`). */
const RECORD_KEY = /^_compaction\/([A-Za-z0-9._-]+)\/(\d{4}-\d{2}-\d{2})T(\d{2})(\.rewrite)?\.json$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** The record in `body` when it is one for `host` and the hour its key names, else why not. */
export function parseAdoptedRecord(
  body: Buffer,
  host: string,
  dt: string,
  hour: string,
): RecordView | string {
  try {
    return recordView(JSON.parse(body.toString("utf8")), host, dt, hour);
  } catch {
    return "not JSON";
  }
}

/** `value` as a record of `host`'s host-hour, else why not. */
function recordView(value: unknown, host: string, dt: string, hour: string): RecordView | string {
  if (typeof value !== "object" || value === null) return "not a JSON object";
  const r = value as Record<string, unknown>;
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
  /** A rewrite request: the SHA-256 of the stored file the job would replace. */
  replaces?: string;
}

function parseRequest(body: Buffer): { record: unknown; replaces: string } | undefined {
  try {
    const r = JSON.parse(body.toString("utf8")) as { record?: unknown; replaces?: unknown };
    return typeof r.replaces === "string" && SHA256.test(r.replaces)
      ? { record: r.record, replaces: r.replaces }
      : undefined;
  } catch {
    return undefined;
  }
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
    const [, , dt = "", hour = "", request] = m;
    // A record of an hour still watched is read again (it may list the batches shipped since);
    // a request is answered once per version of it.
    const unchanged = obj.etag !== undefined && seen[obj.key] === obj.etag;
    if (unchanged && (request !== undefined || !watched.has(`${dt}T${hour}`))) continue;
    const body = await store.read(obj.key);
    if (!body) continue;
    let record: RecordView | string;
    let replaces: string | undefined;
    if (request) {
      const parsed = parseRequest(body);
      replaces = parsed?.replaces;
      record = parsed ? recordView(parsed.record, o.host, dt, hour) : "not a rewrite request";
    } else record = parseAdoptedRecord(body, o.host, dt, hour);
    if (typeof record === "string") {
      // Not adopted: the job that wrote it reads it as unreadable too and compacts the hour anew.
      o.logger.warn({ key: obj.key, reason: record }, "compaction: a compaction record not adopted");
      continue;
    }
    found.push({ key: obj.key, etag: obj.etag, record, ...(replaces ? { replaces } : {}) });
  }
  return found;
}

/**
 * A rewrite request of `compact --signed-rewrites`: the new file is signed (with `supersedes`)
 * into a manifest at once when the file it replaces is one this sidecar signed, and the signature
 * left for the job's next run; else a refusal.
 */
async function signRewrite(
  o: AdoptOptions,
  store: S3ArchiveStore,
  state: CompactionState,
  record: RecordView,
  replaces: string,
): Promise<void> {
  const [journaled, announced] = await Promise.all([state.journaled(), state.announced()]);
  if (journaled[record.hour] === record.sha256) return; // replaced and adopted: a request left behind
  const [dt = "", hour = ""] = record.hour.split("T");
  const key = rewriteSignatureKey({ dt, hour, host: o.host });
  const signed = [journaled[record.hour], ...(announced[record.hour] ?? [])];
  const base = { version: 1 as const, sha256: record.sha256, supersedes: replaces };
  let signature: RewriteSignature;
  if (!signed.includes(replaces)) {
    signature = {
      ...base,
      refused: `the stored file (sha256 ${replaces.slice(0, 12)}…) is not one this sidecar signed for ${record.hour}`,
    };
    o.logger.warn(
      { hour: record.hour, key: record.key, replaces },
      `compaction: rewrite refused: ${signature.refused}`,
    );
  } else {
    if (!announced[record.hour]?.includes(record.sha256)) {
      await o.announce({ ...toCompactedFile(o.prefix, record), supersedes: replaces });
      announced[record.hour] = [...(announced[record.hour] ?? []), record.sha256];
      await state.writeAnnounced(announced);
    }
    signature = { ...base, signed: new Date().toISOString() };
    o.logger.info(
      { hour: record.hour, key: record.key, sha256: record.sha256, supersedes: replaces },
      "compaction: rewrite requested by auditpipe compact signed into the chain; the job replaces the file at its next run",
    );
  }
  await store.write(key, Buffer.from(`${JSON.stringify(signature, null, 2)}\n`), "application/json");
}

/** One pass: journal what the chain lacks, sign requested rewrites, warn of hours nobody compacts. */
async function adoptPass(
  o: AdoptOptions,
  store: S3ArchiveStore,
  state: CompactionState,
  stats: CompactionStats,
  warned: Warned,
): Promise<void> {
  const seen = await state.seen();
  const found = await readRecords(o, store, seen);
  const journaled = await state.journaled();
  const due = found.filter((f) => f.replaces === undefined && journaled[f.record.hour] !== f.record.sha256);
  if (due.length > 0 && process.env[TEST_STOP_AT_ENV] === "read") process.kill(process.pid, "SIGSTOP");
  let changed = false;
  // Records first: a request may replace a file adopted in this very pass.
  const ordered = [
    ...found.filter((f) => f.replaces === undefined),
    ...found.filter((f) => f.replaces !== undefined),
  ];
  for (const { key, etag, record, replaces } of ordered) {
    if (replaces !== undefined) await signRewrite(o, store, state, record, replaces);
    else {
      const listed = journaled[record.hour];
      if (listed !== record.sha256) {
        // Compacted anew elsewhere over a file the chain lists, without asking first: signed now.
        const announced = (await state.announced())[record.hour] ?? [];
        if (listed !== undefined && !announced.includes(record.sha256)) {
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
    }
    if (etag !== undefined && seen[key] !== etag) {
      seen[key] = etag;
      changed = true;
    }
  }
  if (changed) await state.writeSeen(seen);
  warnUnadopted(o, warned, Date.now());
}

/** When the unadopted-hours warning was last logged (this process: one host). */
interface Warned {
  at?: number;
}

/**
 * Hours shipped long ago that no record covers, logged at most once an hour (the metric
 * `auditpipe_compaction_unadopted_hours` says it at every scrape), with what to run about it.
 */
function warnUnadopted(o: AdoptOptions, warned: Warned, now: number): void {
  const overdue = o.shipped.overdue(now, UNADOPTED_AFTER_MS);
  if (overdue.length === 0 || !unadoptedWarningDue(warned.at, now)) return;
  warned.at = now;
  o.logger.warn({ hours: overdue.slice(0, 5), count: overdue.length }, unadoptedWarning(o.archive, o.host));
}

/** Whether the unadopted-hours warning is due again, last logged at `last` (never: undefined). */
export function unadoptedWarningDue(last: number | undefined, now: number): boolean {
  return last === undefined || now - last >= UNADOPTED_WARN_EVERY_MS;
}

/** What the warning says: nobody compacts this host's hours, and the two ways to have them compacted. */
export function unadoptedWarning(archive: string, host: string): string {
  return (
    `compaction: host-hours shipped over ${UNADOPTED_AFTER_MS / 3_600_000} h ago have no compaction record to adopt, and this sidecar ` +
    `compacts nothing itself (--compaction adopt, the default): run \`auditpipe compact ${archive} --host ${host} --signed-rewrites\` ` +
    "off the database host on a timer (deploy/auditpipe-compact.timer, docs/operations.md), or start the sidecar with " +
    "--compaction child to compact here (CPU on this host); repeated at most once an hour"
  );
}

/** The adopt mode: every interval, the compaction records `auditpipe compact` wrote elsewhere are journaled. */
export function startAdoption(o: AdoptOptions): SidecarCompaction {
  const state = compactionState(o.stateDir);
  const warned: Warned = {};
  const store = new S3ArchiveStore(o.bucket, o.prefix, {
    ...(o.s3.endpoint ? { endpoint: o.s3.endpoint } : {}),
    ...(o.s3.region ? { region: o.s3.region } : {}),
    forcePathStyle: o.s3.forcePathStyle,
  });
  const loop = startCompactionLoop({
    intervalMs: o.intervalMs,
    logger: o.logger,
    defaultCode: CompactErrorCode.STORE,
    runOnce: (stats) => adoptPass(o, store, state, stats, warned),
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
