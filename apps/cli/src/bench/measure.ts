/**
 * One measured run: reset the tables pgbench changes, CHECKPOINT, read the counters, mark the
 * log, run pgbench with its per-transaction log, mark the log again, read the counters again.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import {
  AUDIT_TABLE,
  AUDITPIPE_ERR_BENCH_PGBENCH,
  BenchError,
  latencyFromPgbenchLog,
  type PlannedRun,
  parsePgbenchSummary,
  quoteIdent,
  type RunResult,
} from "@auditpipe/overhead";
import type pg from "pg";
import { machineBusySec, postmasterOf, reapedChildrenCpuSec, serverCpu, serverCpuAfter } from "./cpu-time.ts";
import { countLogRange, writeMarker } from "./log-range.ts";
import type { BenchTarget } from "./target.ts";

export interface RunSettings {
  pgbenchBin: string;
  /** Script selection: ["-b", "tpcb-like"] or ["-f", FILE]. */
  workloadArgs: string[];
  clients: number;
  jobs: number;
  /** pgbench -R, transactions per second; absent: as fast as it goes. */
  rate?: number;
  durationSec: number;
  /** Directory for pgbench's per-transaction logs. */
  workDir: string;
  /** Aborting stops pgbench (Ctrl-C); the run then rejects. */
  signal: AbortSignal;
  /** log_line_prefix, for stderr logs. */
  logPrefix: string | undefined;
  serverVersionNum: number;
}

type Counters = Record<string, number>;

async function numericRow(client: pg.Client, sql: string): Promise<Counters> {
  const out: Counters = {};
  const r = await client.query(sql);
  for (const row of r.rows as Array<Record<string, unknown>>)
    for (const [k, v] of Object.entries(row)) {
      const key = row.backend_type !== undefined && k !== "backend_type" ? `${row.backend_type}.${k}` : k;
      const n =
        typeof v === "number" ? v : typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : null;
      if (n !== null) out[key] = (out[key] ?? 0) + n;
    }
  return out;
}

function delta(after: Counters, before: Counters): Counters {
  const out: Counters = {};
  for (const [k, v] of Object.entries(after)) out[k] = v - (before[k] ?? 0);
  return out;
}

async function counters(client: pg.Client, versionNum: number) {
  // One query at a time: a node-postgres client does not pipeline.
  const wal = await numericRow(client, "SELECT * FROM pg_stat_wal");
  const bgwriter = await numericRow(client, "SELECT * FROM pg_stat_bgwriter");
  const io =
    versionNum >= 160_000
      ? await numericRow(
          client,
          "SELECT backend_type, sum(reads) AS reads, sum(writes) AS writes, sum(extends) AS extends, sum(fsyncs) AS fsyncs, sum(hits) AS hits, sum(evictions) AS evictions FROM pg_stat_io GROUP BY backend_type",
        )
      : {};
  const lsn = await client.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
  return { wal, bgwriter, io, lsn: lsn.rows[0]!.lsn };
}

async function auditTableCount(client: pg.Client): Promise<{ rows: number; bytes: number } | null> {
  const exists = await client.query("SELECT to_regclass($1) AS t", [AUDIT_TABLE]);
  if (!(exists.rows[0] as { t: string | null }).t) return null;
  const r = await client.query<{ rows: string; bytes: string }>(
    `SELECT count(*)::bigint AS rows, pg_total_relation_size(${"$1"}::regclass)::bigint AS bytes FROM ${quoteIdent(AUDIT_TABLE)}`,
    [AUDIT_TABLE],
  );
  return { rows: Number(r.rows[0]!.rows), bytes: Number(r.rows[0]!.bytes) };
}

/** The same starting point for every run, as pgbench itself does without -n. */
export async function resetTables(client: pg.Client): Promise<void> {
  await client.query("TRUNCATE pgbench_history");
  const audit = await client.query("SELECT to_regclass($1) AS t", [AUDIT_TABLE]);
  if ((audit.rows[0] as { t: string | null }).t) await client.query(`TRUNCATE ${quoteIdent(AUDIT_TABLE)}`);
  await client.query("VACUUM pgbench_branches, pgbench_tellers");
  await client.query("CHECKPOINT");
}

export function runPgbench(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      // Its own process group: a terminal's Ctrl-C reaches bench, which stops pgbench itself.
      child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    } catch (error) {
      reject(error);
      return;
    }
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const abort = (): void => {
      child.kill("SIGINT");
    };
    signal.addEventListener("abort", abort, { once: true });
    child.on("error", (error) => {
      signal.removeEventListener("abort", abort);
      reject(error);
    });
    child.on("close", (code) => {
      signal.removeEventListener("abort", abort);
      resolve({ code, stdout, stderr });
    });
  });
}

/** pgbench's arguments for a run: the connection, the script, -n, clients, threads, -T (-R), its per-transaction log. */
function pgbenchArgs(connection: string[], s: RunSettings, logPrefix: string): string[] {
  return [
    ...connection,
    ...s.workloadArgs,
    "-n",
    ...["-c", String(s.clients), "-j", String(s.jobs), "-T", String(s.durationSec)],
    ...(s.rate === undefined ? [] : ["-R", String(s.rate)]),
    "-l",
    `--log-prefix=${logPrefix}`,
  ];
}

/** The text of pgbench's per-transaction logs of a run (one file per thread), the files removed. */
function takeTransactionLogs(prefix: string): string {
  const logs = readdirSync(dirname(prefix)).filter((f) => f.startsWith(`${basename(prefix)}.`));
  const text = logs.map((f) => readFileSync(join(dirname(prefix), f), "utf8")).join("");
  for (const f of logs) rmSync(join(dirname(prefix), f), { force: true });
  return text;
}

export async function measureRun(
  target: BenchTarget,
  planned: PlannedRun,
  s: RunSettings,
): Promise<RunResult> {
  const client = await target.client();
  await resetTables(client);
  const before = await counters(client, s.serverVersionNum);
  const auditBefore = await auditTableCount(client);
  const logFile = () => target.logFile();
  const startMark = await writeMarker(client, logFile, null);
  const prefix = join(s.workDir, `run${planned.index}`);
  const conn = target.pgbench();
  const backend = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  const postmaster = postmasterOf(backend.rows[0]!.pid);
  const cpuBefore = postmaster === null ? null : await serverCpu(postmaster);
  const clientBefore = reapedChildrenCpuSec();
  const machineBefore = machineBusySec();
  const startedAt = new Date();
  const t0 = performance.now();
  const result = await runPgbench(s.pgbenchBin, pgbenchArgs(conn.args, s, prefix), conn.env, s.signal);
  const wall = (performance.now() - t0) / 1000;
  // Before any query of ours, so the server's time is pgbench's transactions and nothing else.
  const cpuAfter = postmaster !== null && cpuBefore ? await serverCpuAfter(postmaster, cpuBefore) : null;
  const clientSec = reapedChildrenCpuSec() - clientBefore;
  const machineAfter = machineBusySec();
  const latencyText = takeTransactionLogs(prefix);
  if (s.signal.aborted) throw new Error("interrupted");
  const summary = parsePgbenchSummary(result.stdout);
  if (result.code !== 0 || !summary)
    throw new BenchError(
      AUDITPIPE_ERR_BENCH_PGBENCH,
      `pgbench exited with ${result.code} on ${planned.configuration} × ${planned.workload}: ${result.stderr.trim().split("\n").slice(-3).join(" | ")}`,
    );
  const endMark = await writeMarker(client, logFile, startMark?.end ?? null);
  const after = await counters(client, s.serverVersionNum);
  const auditAfter = await auditTableCount(client);
  const lsnDiff = await client.query<{ d: string }>("SELECT pg_wal_lsn_diff($1, $2)::text AS d", [
    after.lsn,
    before.lsn,
  ]);
  const latency = latencyFromPgbenchLog(latencyText);
  const log =
    startMark && endMark
      ? await countLogRange(startMark.end, endMark.start, (await target.logFile())!.format, s.logPrefix)
      : { records: 0, auditEntries: 0, bytes: 0, malformed: 0 };
  const finite = (x: number): number => (Number.isFinite(x) ? x : 0);
  return {
    index: planned.index,
    round: planned.round,
    configuration: planned.configuration,
    workload: planned.workload,
    startedAt: startedAt.toISOString(),
    durationSec: s.durationSec > 0 ? s.durationSec : wall,
    tps: summary.tps,
    transactions: summary.transactions,
    failedTransactions: summary.failed,
    latencyMs: {
      mean: finite(latency.meanMs),
      p50: finite(latency.p50Ms),
      p95: finite(latency.p95Ms),
      p99: finite(latency.p99Ms),
      max: finite(latency.maxMs),
    },
    log,
    auditTable:
      auditAfter && planned.configuration === "trigger"
        ? {
            rows: auditAfter.rows - (auditBefore?.rows ?? 0),
            bytes: auditAfter.bytes - (auditBefore?.bytes ?? 0),
          }
        : null,
    cpu:
      cpuBefore && cpuAfter
        ? {
            serverSec: cpuAfter.totalSec - cpuBefore.totalSec,
            loggerSec: cpuAfter.loggerSec - cpuBefore.loggerSec,
            loggerWakeups: cpuAfter.loggerWakeups - cpuBefore.loggerWakeups,
            clientSec,
            machineBusySec:
              machineBefore !== null && machineAfter !== null ? machineAfter - machineBefore : null,
          }
        : null,
    walBytes: Number(lsnDiff.rows[0]!.d),
    statWal: delta(after.wal, before.wal),
    statIo: delta(after.io, before.io),
    statBgwriter: delta(after.bgwriter, before.bgwriter),
  };
}
