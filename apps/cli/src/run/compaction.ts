/**
 * The sidecar's own compaction: every `compactMs` (and once soon after start), a child process
 * runs `auditpipe compact ARCHIVE --host H --json`, which compacts each closed host-hour of this
 * host not compacted yet (or grown since: a partial hour a stop closed, continued after a restart)
 * into Parquet; then every compaction record not yet in the signed chain is recorded through the
 * manifest journal (`recordCompaction`), with the archive prefix added to its keys.
 *
 * The child keeps the sidecar's budgets: its own heap limit and DuckDB's memory limit (one
 * thread), the sidecar's nice value (inherited), and it ends itself when the sidecar is gone.
 * Crash safety: the child stores the Parquet file before its record, and the record before this
 * process journals it; which records are journaled is kept in `<state>/compaction/journaled.json`
 * (written after the journal's fsync), so a kill -9 anywhere is caught up by the next run — at
 * worst a file is listed twice (same key and SHA-256), never left out.
 *
 * Sign first: a host-hour compacted anew (it grew after a stop) replaces a file the chain lists.
 * Before the child overwrites it, it asks this process over the IPC channel
 * (compact/rewrite-announcement.ts), which signs the new file with `supersedes` (the stored
 * file's SHA-256) into a manifest at once (`announceCompaction`), so verify takes either file until
 * the new one's own listing; only a stored file this sidecar signed (journaled or announced, kept
 * in `<state>/compaction/announced.json`) is announced as superseded, never someone else's bytes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { CompactErrorCode, DEFAULT_COMPACTION_MEMORY_LIMIT } from "@auditpipe/compact";
import type { CompactedFile } from "@auditpipe/ship";
import type { Logger } from "pino";
import {
  type AnnounceReply,
  type AnnounceRequest,
  isAnnounceRequest,
} from "../compact/rewrite-announcement.ts";
import { type CompactionStats, type SidecarCompaction, startCompactionLoop } from "./compaction-loop.ts";
import {
  type CompactionState,
  compactionState,
  type RecordView,
  toCompactedFile,
} from "./compaction-state.ts";

export { COMPACTION_FAILURES_BEFORE_UNREADY, type SidecarCompaction } from "./compaction-loop.ts";
/** The child's V8 heap: it parses one JSON report and folds a digest; DuckDB's memory is apart. */
export const CHILD_HEAP_FLAGS: readonly string[] = ["--max-old-space-size=64", "--max-semi-space-size=4"];
/** The child's DuckDB memory limit: the default, which keeps the child under 200 MB RSS on a 420,000-entry hour (docs/benchmarks.md, "Compaction memory"). */
export const CHILD_ENGINE_MEMORY_LIMIT: string = DEFAULT_COMPACTION_MEMORY_LIMIT;
/** Error code of a child that ended without its JSON report (killed, out of memory). */
const COMPACT_CHILD_FAILED: string = CompactErrorCode.CHILD;

export interface CompactionOptions {
  /** The sink as configured: `s3://bucket/prefix`. */
  archive: string;
  /** The archive prefix (the sink's), added to the record's keys in the manifest. */
  prefix: string;
  host: string;
  s3: { endpoint?: string | undefined; region?: string | undefined; forcePathStyle: boolean };
  stateDir: string;
  intervalMs: number;
  /** journal.recordCompaction: resolves once the file is journaled (fsynced). */
  record: (file: CompactedFile) => Promise<void>;
  /** journal.announceCompaction: resolves once the announcement is in a stored, signed manifest. */
  announce: (file: CompactedFile & { supersedes: string }) => Promise<void>;
  logger: Logger;
}

/** What the child's `--json` report says of one host-hour (commands/compact.ts). */
interface ChildPartition {
  state: string;
  record?: RecordView;
  error?: { code: string | null; message: string };
}

/** The child's argv: the same entry point and loader flags as this process, its own heap limit. */
function childArgv(o: CompactionOptions): string[] {
  // Not `run`'s start-up snapshot either (--snapshot-blob FILE): the child runs `compact`.
  const inherited = process.execArgv.filter(
    (f, i, all) =>
      !/^--(max-old-space-size|max-semi-space-size|initial-old-space-size)=|^--snapshot-blob(=|$)/.test(f) &&
      all[i - 1] !== "--snapshot-blob",
  );
  const s3 = [
    ...(o.s3.endpoint ? ["--s3-endpoint", o.s3.endpoint] : []),
    ...(o.s3.region ? ["--s3-region", o.s3.region] : []),
    ...(o.s3.forcePathStyle ? ["--s3-force-path-style"] : []),
  ];
  return [
    ...inherited,
    ...CHILD_HEAP_FLAGS,
    process.argv[1] ?? "",
    "compact",
    o.archive,
    "--host",
    o.host,
    "--json",
    "--memory-limit",
    CHILD_ENGINE_MEMORY_LIMIT,
    ...s3,
  ];
}

/** The child's request: sign the new file into the chain before it overwrites the stored one. */
async function announceRewrite(
  o: CompactionOptions,
  state: CompactionState,
  m: AnnounceRequest,
): Promise<AnnounceReply> {
  const { record, replaces } = m;
  try {
    const [journaled, announced] = await Promise.all([state.journaled(), state.announced()]);
    const signed = [journaled[record.hour], ...(announced[record.hour] ?? [])];
    if (!signed.includes(replaces))
      return {
        type: "rewrite-refused",
        reason: `the stored file (sha256 ${replaces.slice(0, 12)}…) is not one this sidecar signed for ${record.hour}`,
      };
    await o.announce({ ...toCompactedFile(o.prefix, record), supersedes: replaces });
    announced[record.hour] = [...new Set([...(announced[record.hour] ?? []), record.sha256])];
    await state.writeAnnounced(announced);
    o.logger.info(
      { hour: record.hour, key: record.key, sha256: record.sha256, supersedes: replaces },
      "compaction: rewrite of a compacted file announced in the signed chain before it is stored",
    );
    return { type: "rewrite-announced" };
  } catch (error) {
    return { type: "rewrite-refused", reason: (error as Error).message };
  }
}

/**
 * One child run: its report, or a thrown error with a code. `onChild` learns the running child
 * (undefined once it closed), so a stop can kill it.
 */
function runCompactionChild(
  o: CompactionOptions,
  announce: (m: AnnounceRequest) => Promise<AnnounceReply>,
  onChild: (child: ChildProcess | undefined) => void,
): Promise<ChildPartition[]> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, childArgv(o), {
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      env: { ...process.env, AUDITPIPE_COMPACT_PARENT_PID: String(process.pid) },
    });
    onChild(c);
    o.logger.info({ child: c.pid }, "compaction: child started");
    let out = "";
    let err = "";
    c.stdout?.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    c.stderr?.on("data", (d: Buffer) => {
      err = (err + d.toString("utf8")).slice(-4_000);
    });
    c.on("message", (m: unknown) => {
      if (!isAnnounceRequest(m)) return;
      void announce(m).then((reply) => {
        if (c.connected) c.send(reply);
      });
    });
    c.on("error", reject);
    c.on("close", (code, signal) => {
      onChild(undefined);
      let report: { partitions?: ChildPartition[] } | undefined;
      try {
        report = JSON.parse(out) as { partitions?: ChildPartition[] };
      } catch {
        report = undefined;
      }
      if (report?.partitions) {
        resolve(report.partitions);
        return;
      }
      const e = new Error(
        `the compaction child ended (${signal ? `signal ${signal}` : `exit ${code}`}) without its report: ${err.trim().split("\n").pop() ?? ""}`,
      ) as Error & { code: string };
      e.code = COMPACT_CHILD_FAILED;
      reject(e);
    });
  });
}

/**
 * Journals one compacted file not journaled yet (the manifest journal fsyncs it), then notes it in
 * `journaled.json` and ends the hour's announcements: its own listing vouches for it now. A crash
 * in between journals it again at the next pass (listed twice, same key and SHA-256).
 */
export async function journalCompacted(
  o: Pick<CompactionOptions, "prefix" | "record" | "logger">,
  state: CompactionState,
  record: RecordView,
  stats: Pick<CompactionStats, "filesRecorded">,
): Promise<void> {
  await o.record(toCompactedFile(o.prefix, record));
  const journaled = await state.journaled();
  journaled[record.hour] = record.sha256;
  await state.writeJournaled(journaled);
  const announced = await state.announced();
  if (announced[record.hour]) {
    delete announced[record.hour];
    await state.writeAnnounced(announced);
  }
  stats.filesRecorded++;
  o.logger.info(
    { hour: record.hour, key: record.key, rows: record.rows, sha256: record.sha256 },
    "compaction: Parquet file recorded in the manifest journal",
  );
}

/**
 * Journals every compacted file of a child's report not journaled yet (counted in `stats` as it
 * goes), then throws (with the first failure's code) when any host-hour failed.
 */
async function recordCompacted(
  o: CompactionOptions,
  state: CompactionState,
  partitions: readonly ChildPartition[],
  stats: Pick<CompactionStats, "filesRecorded">,
): Promise<void> {
  const journaled = await state.journaled();
  for (const p of partitions) {
    if (!p.record || (p.state !== "compacted" && p.state !== "compacted-now")) continue;
    if (journaled[p.record.hour] === p.record.sha256) continue;
    await journalCompacted(o, state, p.record, stats);
  }
  const failed = partitions.filter((p) => p.state === "failed");
  if (failed.length > 0) {
    const first = failed[0]?.error;
    const e = new Error(
      `${failed.length} host-hours failed to compact: ${first?.message ?? "unknown"}`,
    ) as Error & {
      code: string;
    };
    e.code = first?.code ?? COMPACT_CHILD_FAILED;
    throw e;
  }
}

/** The child mode: every interval, a child compacts this host's due host-hours; the sidecar journals them. */
export function startCompaction(o: CompactionOptions): SidecarCompaction {
  const state = compactionState(o.stateDir);
  let child: ChildProcess | undefined;
  return startCompactionLoop({
    intervalMs: o.intervalMs,
    logger: o.logger,
    defaultCode: COMPACT_CHILD_FAILED,
    runOnce: async (stats) => {
      const partitions = await runCompactionChild(
        o,
        (m) => announceRewrite(o, state, m),
        (c) => {
          child = c;
        },
      );
      await recordCompacted(o, state, partitions, stats);
    },
    onStop: () => child?.kill("SIGKILL"),
  });
}
