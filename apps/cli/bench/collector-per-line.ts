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
 * --cases runs each case on the same server, interleaved with the others: `fast` (fsync off, as
 * the calibration's scratch server) or `durable` (fsync, synchronous_commit, full_page_writes on,
 * as the proof's part (a)), each optionally at a fixed rate, `durable@300` (pgbench -R 300, runs
 * of --duration seconds instead of --transactions). Per case it also prints what the backends
 * (the server's CPU without the collector's) add per line over `none`.
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
    cases: { type: "string", default: "fast" },
    duration: { type: "string", default: "10" },
  },
});
const configs = String(values.audit).split(",");
const clientCounts = String(values.clients).split(",").map(Number);
const rounds = Number(values.rounds);
const transactions = Number(values.transactions);
const shop = values.workload === "shop";
const cases = String(values.cases)
  .split(",")
  .map((c) => {
    const [mode, rate] = c.split("@");
    if (mode !== "fast" && mode !== "durable") throw new Error(`--cases: fast or durable, not ${mode}`);
    return { name: c, durable: mode === "durable", rate: rate ? Number(rate) : null };
  });
const durationSec = Number(values.duration);

const work = mkdtempSync(join(tmpdir(), "auditpipe-collector-"));
const server = await startPostgres({ settings: { shared_buffers: "256MB", max_wal_size: "2GB" } });
const admin = await server.connect();
const loads = [loadavg()[0]!];
interface Run {
  entries: number;
  bytes: number;
  serverUs: number;
  collectorUs: number;
  /** Transactions per second. */
  tps: number;
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
    const caseOrder = cases.map((_, i) => cases[(i + round) % cases.length]!);
    for (const kase of caseOrder)
      for (const clients of clientCounts)
        for (const config of order) {
          await admin.query(`ALTER SYSTEM SET pgaudit.log = '${config.replaceAll("'", "''")}'`);
          for (const setting of ["fsync", "synchronous_commit", "full_page_writes"])
            await admin.query(`ALTER SYSTEM SET ${setting} = ${kase.durable ? "on" : "off"}`);
          await admin.query("SELECT pg_reload_conf()");
          await admin.query("CHECKPOINT");
          const start = await writeMarker(admin, logFile, null);
          const before = await serverCpu(pm);
          const t0 = performance.now();
          const perClient = Math.round(transactions / clients);
          const out = await server.pgbench([
            "-n",
            ...script,
            "-c",
            String(clients),
            "-j",
            "2",
            ...(kase.rate === null
              ? ["-t", String(perClient)]
              : ["-R", String(kase.rate), "-T", String(durationSec)]),
            "bench",
          ]);
          const wallSec = (performance.now() - t0) / 1000;
          const done = Number(
            /number of transactions actually processed: (\d+)/.exec(out.stdout)?.[1] ?? Number.NaN,
          );
          const after = before && (await serverCpuAfter(pm, before));
          const end = await writeMarker(admin, logFile, start!.end);
          const log = await countLogRange(start!.end, end!.start, "csvlog", undefined);
          const n = kase.rate === null ? perClient * clients : done;
          const key = `${kase.name}, ${clients} clients, ${config}`;
          const run: Run = {
            entries: log.auditEntries / n,
            bytes: log.bytes / Math.max(1, log.auditEntries),
            serverUs: before && after ? ((after.totalSec - before.totalSec) * 1e6) / n : Number.NaN,
            collectorUs: before && after ? ((after.loggerSec - before.loggerSec) * 1e6) / n : Number.NaN,
            tps: n / wallSec,
            linesPerSec: log.auditEntries / wallSec,
            collectorBusy: before && after ? (after.loggerSec - before.loggerSec) / wallSec : Number.NaN,
            wakeupsPerLine:
              before && after
                ? (after.loggerWakeups - before.loggerWakeups) / Math.max(1, log.auditEntries)
                : Number.NaN,
          };
          runs.set(key, [...(runs.get(key) ?? []), run]);
          process.stderr.write(
            `${key}: ${run.tps.toFixed(0)} TPS, ${run.entries.toFixed(2)} entries/txn, server ${run.serverUs.toFixed(0)} µs/txn, collector ${run.collectorUs.toFixed(0)} µs/txn, ${run.linesPerSec.toFixed(0)} lines/s, ${run.wakeupsPerLine.toFixed(3)} wake-ups/line\n`,
          );
        }
    loads.push(loadavg()[0]!);
  }
  const median = (x: number[]): number => {
    const s = [...x].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  process.stdout.write(
    `${values.workload}, cases ${String(values.cases)}, ${transactions} transactions (or ${durationSec} s at a fixed rate) per run, ${rounds} rounds; load average ${loads.map((l) => l.toFixed(1)).join(" → ")}\n\n`,
  );
  process.stdout.write(
    "| case, clients, pgaudit.log | TPS | entries/txn | bytes/entry | server CPU µs/txn (median) | collector CPU µs/txn | collector CPU µs/line | backends: added CPU µs/line over none | lines/s | collector busy | wake-ups/line |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
  );
  for (const [key, list] of runs) {
    const entries = median(list.map((r) => r.entries));
    const collector = median(list.map((r) => r.collectorUs));
    const backends = median(list.map((r) => r.serverUs - r.collectorUs));
    const noneList = runs.get(key.replace(/[^,]+$/, " none"));
    const backendsNone = noneList ? median(noneList.map((r) => r.serverUs - r.collectorUs)) : Number.NaN;
    const addedPerLine = entries > 0 ? (backends - backendsNone) / entries : Number.NaN;
    process.stdout.write(
      `| ${key} | ${median(list.map((r) => r.tps)).toFixed(0)} | ${entries.toFixed(2)} | ${entries > 0 ? median(list.map((r) => r.bytes)).toFixed(0) : "—"} | ${median(list.map((r) => r.serverUs)).toFixed(0)} | ${collector.toFixed(0)} | ${entries > 0 ? (collector / entries).toFixed(1) : "—"} | ${Number.isFinite(addedPerLine) ? addedPerLine.toFixed(1) : "—"} | ${median(list.map((r) => r.linesPerSec)).toFixed(0)} | ${(100 * median(list.map((r) => r.collectorBusy))).toFixed(1)}% | ${entries > 0 ? median(list.map((r) => r.wakeupsPerLine)).toFixed(3) : "—"} |\n`,
    );
  }
} finally {
  await admin.end();
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
