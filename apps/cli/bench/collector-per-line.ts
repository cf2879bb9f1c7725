/**
 * What one log line costs the logging collector, by client count: the overhead proof's shop
 * workload (or pgbench's TPC-B) on a scratch server (fsync off) under each pgaudit.log, a fixed
 * number of transactions per run, the runs interleaved (every configuration and client count
 * once per round, the order rotating). Per run: audit entries and log bytes per transaction
 * (between two marker records, auditpipe's parser) and the server's and the collector's CPU per
 * transaction from /proc — ticks of the processes, which a busy machine distorts far less than
 * the wall time. Not run by the tests (a few minutes on 2 cores):
 *
 *   node --conditions=@auditpipe/source apps/cli/bench/collector-per-line.ts \
 *     [--workload shop|tpcb] [--audit none,write,all] [--clients 2,8] [--rounds 4] [--transactions 4000]
 *
 * The calibration prices each line at one cost; this shows how that cost changes with the rate
 * the collector receives lines at (docs/estimator.md, "Overhead proof").
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startPostgres } from "@auditpipe/testkit";
import { postmasterOf, serverCpu, serverCpuAfter } from "../src/bench/cpu-time.ts";
import { countLogRange, writeMarker } from "../src/bench/log-range.ts";
import { SHOP_INIT, writeShopFiles } from "./_overhead-proof-workload.ts";

const { values } = parseArgs({
  options: {
    workload: { type: "string", default: "shop" },
    audit: { type: "string", default: "none,write,all" },
    clients: { type: "string", default: "2,8" },
    rounds: { type: "string", default: "4" },
    transactions: { type: "string", default: "4000" },
  },
});
const configs = String(values.audit).split(",");
const clientCounts = String(values.clients).split(",").map(Number);
const rounds = Number(values.rounds);
const transactions = Number(values.transactions);
const shop = values.workload === "shop";

const work = mkdtempSync(join(tmpdir(), "auditpipe-collector-"));
const server = await startPostgres({ settings: { shared_buffers: "256MB", max_wal_size: "2GB" } });
const admin = await server.connect();
const loads = [loadavg()[0]!];
interface Run {
  entries: number;
  bytes: number;
  serverUs: number;
  collectorUs: number;
  /** Audit lines per second of wall time: the rate the collector receives them at. */
  linesPerSec: number;
  /** The collector's share of one core over the run (its utilisation). */
  collectorBusy: number;
  /** The collector's wake-ups per line. */
  wakeupsPerLine: number;
}
const runs = new Map<string, Run[]>();
try {
  const backend = (await admin.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const pm = postmasterOf(backend);
  if (pm === null) throw new Error("the server's processes are not visible in /proc");
  await server.query("CREATE DATABASE bench");
  const files = writeShopFiles(work);
  if (shop) {
    const r = await server.psql(SHOP_INIT, { database: "bench", args: ["-v", "ON_ERROR_STOP=1"] });
    if (r.code !== 0) throw new Error(`the shop schema: ${r.stderr}`);
  } else await server.pgbench(["-i", "-s", "1", "-q", "bench"]);
  const script = shop ? ["-f", files.script] : ["-b", "tpcb-like"];
  const logFile = async () => ({ path: server.currentLogfiles().csvlog! });
  for (let round = 0; round < rounds; round++) {
    const order = configs.map((_, i) => configs[(i + round) % configs.length]!);
    for (const clients of clientCounts)
      for (const config of order) {
        await admin.query(`ALTER SYSTEM SET pgaudit.log = '${config.replaceAll("'", "''")}'`);
        await admin.query("SELECT pg_reload_conf()");
        const start = await writeMarker(admin, logFile, null);
        const before = await serverCpu(pm);
        const t0 = performance.now();
        const perClient = Math.round(transactions / clients);
        await server.pgbench([
          "-n",
          ...script,
          "-c",
          String(clients),
          "-j",
          "2",
          "-t",
          String(perClient),
          "bench",
        ]);
        const wallSec = (performance.now() - t0) / 1000;
        const after = before && (await serverCpuAfter(pm, before));
        const end = await writeMarker(admin, logFile, start!.end);
        const log = await countLogRange(start!.end, end!.start, "csvlog", undefined);
        const n = perClient * clients;
        const key = `${clients} clients, ${config}`;
        const run: Run = {
          entries: log.auditEntries / n,
          bytes: log.bytes / Math.max(1, log.auditEntries),
          serverUs: before && after ? ((after.totalSec - before.totalSec) * 1e6) / n : Number.NaN,
          collectorUs: before && after ? ((after.loggerSec - before.loggerSec) * 1e6) / n : Number.NaN,
          linesPerSec: log.auditEntries / wallSec,
          collectorBusy: before && after ? (after.loggerSec - before.loggerSec) / wallSec : Number.NaN,
          wakeupsPerLine:
            before && after
              ? (after.loggerWakeups - before.loggerWakeups) / Math.max(1, log.auditEntries)
              : Number.NaN,
        };
        runs.set(key, [...(runs.get(key) ?? []), run]);
        process.stderr.write(
          `${key}: ${run.entries.toFixed(2)} entries/txn, server ${run.serverUs.toFixed(0)} µs/txn, collector ${run.collectorUs.toFixed(0)} µs/txn, ${run.linesPerSec.toFixed(0)} lines/s, ${run.wakeupsPerLine.toFixed(3)} wake-ups/line\n`,
        );
      }
    loads.push(loadavg()[0]!);
  }
  const median = (x: number[]): number => {
    const s = [...x].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  process.stdout.write(
    `${values.workload}, ${transactions} transactions per run, ${rounds} rounds; load average ${loads.map((l) => l.toFixed(1)).join(" → ")}\n\n`,
  );
  process.stdout.write(
    "| clients, pgaudit.log | entries/txn | bytes/entry | server CPU µs/txn (median) | collector CPU µs/txn | collector CPU µs/line | lines/s | collector busy | wake-ups/line |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
  );
  for (const [key, list] of runs) {
    const entries = median(list.map((r) => r.entries));
    const collector = median(list.map((r) => r.collectorUs));
    process.stdout.write(
      `| ${key} | ${entries.toFixed(2)} | ${entries > 0 ? median(list.map((r) => r.bytes)).toFixed(0) : "—"} | ${median(list.map((r) => r.serverUs)).toFixed(0)} | ${collector.toFixed(0)} | ${entries > 0 ? (collector / entries).toFixed(1) : "—"} | ${median(list.map((r) => r.linesPerSec)).toFixed(0)} | ${(100 * median(list.map((r) => r.collectorBusy))).toFixed(1)}% | ${entries > 0 ? median(list.map((r) => r.wakeupsPerLine)).toFixed(3) : "—"} |\n`,
    );
  }
} finally {
  await admin.end();
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
