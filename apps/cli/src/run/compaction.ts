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
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { CompactErrorCode, DEFAULT_COMPACTION_MEMORY_LIMIT } from "@auditpipe/compact";
import { backoffDelay, type CompactedFile, writeFileDurably } from "@auditpipe/ship";
import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";
import {
  type AnnounceReply,
  type AnnounceRequest,
  isAnnounceRequest,
} from "../compact/rewrite-announcement.ts";

/** Failed runs in a row before /readyz reports compaction: one failure is retried quietly. */
export const COMPACTION_FAILURES_BEFORE_UNREADY = 3;
/** The child's V8 heap: it parses one JSON report and folds a digest; DuckDB's memory is apart. */
export const CHILD_HEAP_FLAGS: readonly string[] = ["--max-old-space-size=64", "--max-semi-space-size=4"];
/** The child's DuckDB memory limit: the default, which keeps the child under 200 MB RSS on a 420,000-entry hour (docs/benchmarks.md, "Compaction memory"). */
export const CHILD_ENGINE_MEMORY_LIMIT: string = DEFAULT_COMPACTION_MEMORY_LIMIT;
/** First retry after a failed run; later ones back off up to the interval. */
const RETRY_BASE_MS = 5_000;
/** How soon after start the first run goes (catching up what a stopped sidecar left). */
const FIRST_RUN_MS = 1_000;
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
  record?: {
    hour: string;
    key: string;
    sha256: string;
    size: number;
    rows: number;
    rowsDigest: string;
    sources: { key: string; sha256: string }[];
  };
  error?: { code: string | null; message: string };
}

export interface SidecarCompaction {
  /** Why compaction is a readiness problem (failing past the bound), or undefined. */
  problem(): string | undefined;
  registerMetrics(registry: Registry): void;
  /** Stops the timer and kills a running child (SIGKILL: it is crash-safe, the next run redoes it). */
  stop(): Promise<void>;
}

const joinKey = (prefix: string, key: string): string => (prefix === "" ? key : `${prefix}/${key}`);

/** A compaction record (keys relative to the archive root) as the manifest lists it (keys with the prefix). */
export function toCompactedFile(prefix: string, r: NonNullable<ChildPartition["record"]>): CompactedFile {
  return {
    key: joinKey(prefix, r.key),
    sha256: r.sha256,
    size: r.size,
    rows: r.rows,
    rowsDigest: r.rowsDigest,
    sources: r.sources.map((s) => ({ key: joinKey(prefix, s.key), sha256: s.sha256 })),
    hour: r.hour,
  };
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

/** The sidecar's compaction state files: the SHA-256 journaled per hour, and those announced since. */
function compactionState(stateDir: string) {
  const dir = join(stateDir, "compaction");
  const journaledPath = join(dir, "journaled.json");
  const announcedPath = join(dir, "announced.json");
  const read = async <T>(path: string): Promise<Record<string, T>> => {
    try {
      return JSON.parse(await readFile(path, "utf8")) as Record<string, T>;
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return {};
      throw error;
    }
  };
  const write = async (path: string, value: object): Promise<void> => {
    await mkdir(dir, { recursive: true });
    await writeFileDurably(path, `${JSON.stringify(value, null, 2)}\n`);
  };
  return {
    journaled: (): Promise<Record<string, string>> => read<string>(journaledPath),
    /** SHA-256s of files announced per hour and not confirmed yet by their own listing. */
    announced: (): Promise<Record<string, string[]>> => read<string[]>(announcedPath),
    writeJournaled: (value: Record<string, string>): Promise<void> => write(journaledPath, value),
    writeAnnounced: (value: Record<string, string[]>): Promise<void> => write(announcedPath, value),
  };
}
type CompactionState = ReturnType<typeof compactionState>;

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
    await o.record(toCompactedFile(o.prefix, p.record));
    journaled[p.record.hour] = p.record.sha256;
    await state.writeJournaled(journaled);
    // Its own listing ends the hour's announcements: the stored file is the journaled one now.
    const announced = await state.announced();
    if (announced[p.record.hour]) {
      delete announced[p.record.hour];
      await state.writeAnnounced(announced);
    }
    stats.filesRecorded++;
    o.logger.info(
      { hour: p.record.hour, key: p.record.key, rows: p.record.rows, sha256: p.record.sha256 },
      "compaction: Parquet file recorded in the manifest journal",
    );
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

/** What the sidecar's compaction has done so far, for its metrics and /readyz. */
interface CompactionStats {
  runs: { ok: number; failed: number };
  /** Failed runs in a row (0 after a success). */
  failures: number;
  lastCode: string | undefined;
  filesRecorded: number;
  failuresByCode: Map<string, number>;
}

function registerCompactionMetrics(registry: Registry, stats: CompactionStats): void {
  new Counter({
    name: "auditpipe_compaction_runs_total",
    help: "Compaction child runs of the sidecar, by result (ok, failed).",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: "ok" }, stats.runs.ok);
      this.inc({ result: "failed" }, stats.runs.failed);
    },
  });
  new Counter({
    name: "auditpipe_compaction_failures_total",
    help: "Failed compaction runs, by error code (docs/errors.md).",
    labelNames: ["code"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [code, n] of stats.failuresByCode) this.inc({ code }, n);
    },
  });
  new Counter({
    name: "auditpipe_compaction_files_recorded_total",
    help: "Parquet files this sidecar recorded in its manifest journal.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats.filesRecorded);
    },
  });
  new Gauge({
    name: "auditpipe_compaction_failing_runs",
    help: `Failed compaction runs in a row (0 after a success); /readyz reports it from ${COMPACTION_FAILURES_BEFORE_UNREADY}.`,
    registers: [registry],
    collect() {
      this.set(stats.failures);
    },
  });
}

export function startCompaction(o: CompactionOptions): SidecarCompaction {
  const state = compactionState(o.stateDir);
  const stats: CompactionStats = {
    runs: { ok: 0, failed: 0 },
    failures: 0,
    lastCode: undefined,
    filesRecorded: 0,
    failuresByCode: new Map(),
  };
  let timer: NodeJS.Timeout | undefined;
  let child: ChildProcess | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const runOnce = async (): Promise<void> => {
    const partitions = await runCompactionChild(
      o,
      (m) => announceRewrite(o, state, m),
      (c) => {
        child = c;
      },
    );
    await recordCompacted(o, state, partitions, stats);
  };

  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = runOnce().then(
        () => {
          stats.failures = 0;
          stats.lastCode = undefined;
          stats.runs.ok++;
          schedule(o.intervalMs);
        },
        (error: unknown) => {
          stats.failures++;
          stats.runs.failed++;
          const code = (error as { code?: string }).code ?? COMPACT_CHILD_FAILED;
          stats.lastCode = code;
          stats.failuresByCode.set(code, (stats.failuresByCode.get(code) ?? 0) + 1);
          const retryMs = Math.min(o.intervalMs, backoffDelay(stats.failures, RETRY_BASE_MS, o.intervalMs));
          if (!stopped)
            o.logger.error(
              { code, failures: stats.failures, retryMs, err: { message: (error as Error).message } },
              "compaction failed; landing NDJSON is kept, retrying",
            );
          schedule(retryMs);
        },
      );
    }, ms);
    timer.unref();
  };
  schedule(Math.min(FIRST_RUN_MS, o.intervalMs));

  return {
    problem: () =>
      stats.failures >= COMPACTION_FAILURES_BEFORE_UNREADY
        ? `compaction failing (${stats.lastCode}, ${stats.failures} runs in a row); landing NDJSON is kept and retried`
        : undefined,
    registerMetrics: (registry) => registerCompactionMetrics(registry, stats),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      child?.kill("SIGKILL");
      await running?.catch(() => undefined);
    },
  };
}
