/**
 * The overhead proof, opt-in (`pnpm proof:overhead`; about 40 minutes on 2 cores): does the
 * estimate's answer for a server at the load it was sampled under hold what pgbench then
 * measures there, and does a calibration travel between a busy machine and a quiet one?
 *
 *   (a) durable: `bench --quick --calibration-out` on a scratch server; then a server with fsync,
 *       synchronous_commit and full_page_writes on runs a workload unlike TPC-B (foreign keys,
 *       eight statements per transaction: _overhead-proof-workload.ts) from 2 clients;
 *       `estimate --track-nested --calibration` samples it under that load; `bench --db` then
 *       measures write and all on it with the same script and clients. The TPS each lost must lie
 *       inside the estimate's interval (`overhead.throughput`), no wider than ±5 points.
 *   (b) CPU-bound: the same on a server with fsync off and 8 clients on the 2 cores.
 *   (c) a calibration taken under contention (a busy loop on every core) predicts the CPU-based
 *       overhead of write and all in a quiet bench run, and the quiet one predicts the busy run.
 *
 * It writes the tables between the `overhead-proof` markers of docs/estimator.md (when (a) and
 * (b) both ran: the table holds both) and the `calibration-travels` markers of docs/bench.md,
 * with the date, the machine and its load average, and exits 1 if a check failed. Options:
 * --only a,b,c (or durable, cpu-bound, travels: `pnpm proof:overhead --only durable` re-runs (a)
 * alone, about 18 minutes, and prints its table without touching the docs); --runs N and
 * --duration S of the bench --db runs (default 8 × 15 s); --interval S of the estimate's sample
 * (default 30); --no-docs; --keep DIR: the calibration, bench reports, estimates and sampled workloads
 * as JSON into DIR (`estimate --workload workload-a.json --calibration other.json` weighs a later
 * change to the fit against the same runs).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type EstimateReport, percent } from "@auditpipe/estimate";
import {
  BASELINE,
  type BenchReport,
  benchReportSchema,
  type CalibrationFit,
  predictOverhead,
} from "@auditpipe/overhead";
import { type PostgresCluster, rewriteDocSection, startPostgres, waitUntil } from "@auditpipe/testkit";
import { main } from "auditpipe";
import { SHOP_INIT, writeShopFiles } from "./_overhead-proof-workload.ts";

const { values } = parseArgs({
  options: {
    only: { type: "string", default: "a,b,c" },
    runs: { type: "string", default: "8" },
    duration: { type: "string", default: "15" },
    interval: { type: "string", default: "30" },
    "no-docs": { type: "boolean", default: false },
    keep: { type: "string" },
  },
});
/** The parts by name as well as by letter. */
const PART_NAMES: Record<string, string> = { durable: "a", "cpu-bound": "b", travels: "c" };
const parts = new Set(
  String(values.only)
    .split(",")
    .map((p) => PART_NAMES[p.trim()] ?? p.trim()),
);
for (const p of parts)
  if (!["a", "b", "c"].includes(p))
    throw new Error(`--only: a, b, c, durable, cpu-bound or travels, not ${p}`);
const RUNS = String(values.runs);
const DURATION = String(values.duration);
const INTERVAL = Number(values.interval);
const work = mkdtempSync(join(tmpdir(), "auditpipe-overhead-proof-"));
const shop = writeShopFiles(work);
const loads: number[] = [loadavg()[0]!];
const started = Date.now();
let failed = false;

const say = (text: string): void => {
  process.stderr.write(`proof: ${text}\n`);
};

/** The CLI in-process; its progress goes to our stderr, its stdout is returned. */
async function cli(argv: string[]): Promise<string> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
      process.stderr.write(t);
    },
    stderrIsTTY: false,
  });
  if (code !== 0) throw new Error(`auditpipe ${argv.join(" ")} exited with ${code}: ${stderr.slice(-500)}`);
  return stdout;
}

const pct = (x: number): string => percent(x);
const interval = (x: { low: number; high: number }, point: number): string =>
  `${pct(point)} [${pct(x.low)} … ${pct(x.high)}]`;

interface ServerRow {
  part: string;
  configuration: string;
  estimate: { low: number; estimate: number; high: number };
  regime: string;
  cpuBound: { low: number; estimate: number; high: number };
  measuredTps: { median: number; low: number; high: number };
  measuredCpu: { median: number; low: number; high: number } | null;
  /** The logging collector's CPU per log line bench measured (median run), µs; null without CPU times. */
  collectorUsPerLine: number | null;
  /**
   * What the CPU-bound share is made of, estimated and measured: the added server CPU µs per
   * transaction, and the transaction's CPU µs (server and pgbench) it is a share of. A miss of
   * the CPU-bound estimate is then in the one or the other.
   */
  cpuParts: {
    addedUs: number;
    measuredAddedUs: number | null;
    transactionUs: number;
    measuredTransactionUs: number | null;
  };
  inside: boolean;
  narrow: boolean;
}

interface TravelRow {
  calibratedUnder: string;
  predicts: string;
  configuration: string;
  predicted: { low: number; estimate: number; high: number };
  unscaled: { low: number; estimate: number; high: number };
  measured: { median: number; low: number; high: number };
  inside: boolean;
}

/**
 * The logging collector's CPU µs per log line a bench report measured for one configuration:
 * the line cost the calibration takes as constant, and which falls when the collector is kept
 * busy (it reads what the pipe holds at each wake-up).
 */
function collectorPerLine(report: BenchReport, configuration: string, workload?: string): number | null {
  const at = (c: { workload: string }) => workload === undefined || c.workload === workload;
  const cell = report.cells.find((c) => c.configuration === configuration && at(c));
  const base = report.cells.find((c) => c.configuration === BASELINE && at(c));
  const lines = (cell?.logRecordsPerTransaction ?? 0) - (base?.logRecordsPerTransaction ?? 0);
  if (!cell?.cpuUsPerTransaction || !base?.cpuUsPerTransaction || lines <= 0) return null;
  return Math.max(0, cell.cpuUsPerTransaction.logger - base.cpuUsPerTransaction.logger) / lines;
}

const perLine = (us: number | null): string => (us === null ? "—" : `${us.toFixed(1)} µs`);

/** The estimate's added CPU and transaction CPU for a configuration, beside what bench measured (medians). */
function cpuPartsOf(
  e: EstimateReport["estimates"][number]["overhead"],
  report: BenchReport,
  configuration: string,
): ServerRow["cpuParts"] {
  const cell = report.cells.find((c) => c.configuration === configuration)?.cpuUsPerTransaction;
  const base = report.cells.find((c) => c.configuration === BASELINE)?.cpuUsPerTransaction;
  return {
    addedUs: e.addedCpuUs.estimate,
    measuredAddedUs: cell && base ? cell.server - base.server : null,
    transactionUs: e.regime.transactionCpuUs,
    measuredTransactionUs: base ? base.server + base.client : null,
  };
}

const us = (x: number | null): string => (x === null ? "—" : x.toFixed(0));

/** (a) and (b): estimate a server under its pgbench load, then measure write and all there. */
async function serverPart(part: "a" | "b", calibration: string): Promise<ServerRow[]> {
  const durable = part === "a";
  const clients = durable ? 2 : 8;
  say(`(${part}) ${durable ? "a durable server, 2 clients" : "a CPU-bound server (fsync off), 8 clients"}`);
  const server: PostgresCluster = await startPostgres({
    preloadLibraries: ["pg_stat_statements"],
    settings: {
      shared_buffers: "256MB",
      max_wal_size: "2GB",
      ...(durable ? { fsync: true, synchronous_commit: true, full_page_writes: true } : {}),
    },
  });
  try {
    await server.query("CREATE DATABASE shop");
    const r = await server.psql(`CREATE EXTENSION pg_stat_statements;\n${SHOP_INIT}`, {
      database: "shop",
      args: ["-v", "ON_ERROR_STOP=1"],
    });
    if (r.code !== 0) throw new Error(`the shop schema: ${r.stderr}`);
    const jobs = String(Math.min(clients, cpus().length));
    await server.pgbench(["-n", "-f", shop.script, "-c", String(clients), "-j", jobs, "-T", "5", "shop"]);
    // The estimate samples while pgbench runs the workload, as a sidecar would in production.
    const load = server.pgbench([
      ...["-n", "-f", shop.script, "-c", String(clients), "-j", jobs],
      ...["-T", String(INTERVAL + 20), "shop"],
    ]);
    await waitUntil(
      async () =>
        (
          await server.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pgbench' AND datname = 'shop'",
          )
        ).rows[0]!.n >= clients,
      30_000,
      () => "pgbench did not start",
    );
    const url = (name: string) => `postgresql://postgres@127.0.0.1:${server.port}/${name}`;
    const estimate = JSON.parse(
      await cli([
        "estimate",
        ...["--db", url("shop"), "--interval", String(INTERVAL), "--track-nested"],
        ...["--audit", "write", "--audit", "all", "--calibration", calibration, "--json"],
        // Kept with --keep: `estimate --workload` replays this sample against another calibration.
        ...["--workload-out", join(work, `workload-${part}.json`)],
      ]),
    ) as EstimateReport;
    writeFileSync(join(work, `estimate-${part}.json`), JSON.stringify(estimate, null, 1));
    await load;
    loads.push(loadavg()[0]!);
    const measured: BenchReport = benchReportSchema.parse(
      JSON.parse(
        await cli([
          "bench",
          ...["--db", url("postgres"), "--yes", "--state-dir", join(work, `state-${part}`)],
          ...["--audit", "write,all", "--script", shop.script, "--init", shop.init, "--scale", "1"],
          ...[
            "--clients",
            String(clients),
            "--runs",
            RUNS,
            "--duration",
            DURATION,
            "--warmup",
            "10",
            "--json",
          ],
        ]),
      ),
    );
    loads.push(loadavg()[0]!);
    writeFileSync(join(work, `bench-${part}.json`), JSON.stringify(measured, null, 1));
    return ["write", "all"].map((name) => {
      const e = estimate.estimates.find((x) => x.config === name)!.overhead;
      const cell = measured.cells.find((c) => c.configuration === name)!;
      const tps = cell.tpsOverhead!;
      const t = e.throughput;
      const row: ServerRow = {
        part: durable ? "(a) durable, 2 clients" : "(b) fsync off, 8 clients",
        configuration: name,
        estimate: t,
        regime: e.regime.kind,
        cpuBound: e.cpuBound,
        measuredTps: tps,
        measuredCpu: cell.overheadBasis === "cpu" ? cell.overhead : null,
        collectorUsPerLine: collectorPerLine(measured, name),
        cpuParts: cpuPartsOf(e, measured, name),
        inside: tps.median >= t.low && tps.median <= t.high,
        narrow: (t.high - t.low) / 2 <= 0.05,
      };
      if (!row.inside || !row.narrow) failed = true;
      return row;
    });
  } finally {
    await server.stop();
  }
}

/** bench --quick, with a busy loop on every core meanwhile or not. */
async function quickBench(busy: boolean, calibrationOut: string): Promise<BenchReport> {
  const loops: ChildProcess[] = busy
    ? cpus().map(() => spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }))
    : [];
  try {
    const report = await cli(["bench", "--quick", "--json", "--calibration-out", calibrationOut]);
    writeFileSync(calibrationOut.replace(/\.json$/, "-report.json"), report);
    return benchReportSchema.parse(JSON.parse(report));
  } finally {
    for (const l of loops) l.kill("SIGKILL");
    loads.push(loadavg()[0]!);
  }
}

/** What `from`'s fit predicts for `to`'s write and all, scaled to `to`'s state, against what `to` measured. */
function travel(from: BenchReport, to: BenchReport, fromName: string, toName: string): TravelRow[] {
  const fit: CalibrationFit = from.calibration!;
  const base = to.cells.find((c) => c.configuration === BASELINE && c.workload === to.workloads[0]!.name)!;
  const cpu = base.cpuUsPerTransaction!;
  const statements = to.workloads[0]!.statementsPerTransaction;
  return ["write", "all"].map((name) => {
    const cell = to.cells.find((c) => c.configuration === name && c.workload === base.workload)!;
    const baseLines = base.logRecordsPerTransaction;
    const lines = Math.max(0, cell.logRecordsPerTransaction - baseLines);
    const input = {
      linesPerTransaction: lines,
      // The MISC and nested lines apart, as the estimate prices them (calibration version 5).
      miscLinesPerTransaction: cell.auditEntriesByKindPerTransaction?.misc ?? 0,
      nestedLinesPerTransaction: cell.auditEntriesByKindPerTransaction?.nested ?? 0,
      linesPerSec: lines * cell.tps.median,
      auditedStatementsPerTransaction: statements,
      logElsewhere: !to.environment.logOnDataDisk,
      baselineUsPerTransaction: (to.options.clients * 1e6) / base.tps.median,
      baselineCpuUsPerTransaction: cpu.server + cpu.client,
      statementsPerTransaction: statements,
    };
    const predicted = predictOverhead(fit, { ...input, targetUsPerStatement: cpu.server / statements })
      .cpuBound!;
    const unscaled = predictOverhead(fit, input).cpuBound!;
    const measured = cell.overhead!;
    const inside = measured.median >= predicted.low && measured.median <= predicted.high;
    if (!inside) failed = true;
    return {
      calibratedUnder: fromName,
      predicts: toName,
      configuration: name,
      predicted,
      unscaled,
      measured,
      inside,
    };
  });
}

const context = (what: string): string => {
  // Judged by the load before the proof started: during it the load average counts the proof's own
  // pgbench clients and backends (8 clients on the CPU-bound server), which say nothing of other work.
  const busy = loads[0]! > 1.5 * cpus().length;
  return `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${hostname()}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}); load average ${loads.map((l) => l.toFixed(1)).join(" → ")} through the run (the proof's own pgbench clients count in it; other work before it started: the higher, the noisier); ${what}; \`pnpm proof:overhead\` took ${Math.round((Date.now() - started) / 60_000)} min.${busy ? ` **The machine was busy** (load above ${1.5 * cpus().length} on ${cpus().length} cores when the proof started): other work stretches every CPU µs and swings every run's TPS, so the calibration's residual widens every interval and the measurements are noisier than on a quiet machine; the proof means what it says only when re-run on a quiet one.` : ""}`;
};

try {
  say(
    `${values["no-docs"] || (parts.has("a") !== parts.has("b") && !parts.has("c")) ? "prints its tables" : "writes docs/estimator.md and docs/bench.md tables"}; about ${(parts.has("a") ? 12 : 0) + (parts.has("b") ? 12 : 0) + (parts.has("c") ? 11 : 0) + 6} minutes on 2 cores`,
  );
  const serverRows: ServerRow[] = [];
  let calibrationReport: BenchReport | null = null;
  if (parts.has("a") || parts.has("b")) {
    const calibration = join(work, "calibration.json");
    say("bench --quick --calibration-out (scratch server)");
    calibrationReport = await quickBench(false, calibration);
    if (parts.has("a")) serverRows.push(...(await serverPart("a", calibration)));
    if (parts.has("b")) serverRows.push(...(await serverPart("b", calibration)));
    const table = [
      "| server | configuration | estimate: this server at this load [95%] | ± points | regime | measured: TPS lost [95%] | inside | ±5 points | estimate: if CPU-bound | measured: CPU-based | measured: collector CPU per line | added CPU µs/txn: estimate / measured | transaction CPU µs: estimate / measured |",
      "|---|---|--:|--:|---|--:|:-:|:-:|--:|--:|--:|--:|--:|",
      ...serverRows.map(
        (r) =>
          `| ${r.part} | ${r.configuration} | ${interval(r.estimate, r.estimate.estimate)} | ${((r.estimate.high - r.estimate.low) * 50).toFixed(1)} | ${r.regime} | ${interval(r.measuredTps, r.measuredTps.median)} | ${r.inside ? "yes" : "**no**"} | ${r.narrow ? "yes" : "**no**"} | ${interval(r.cpuBound, r.cpuBound.estimate)} | ${r.measuredCpu ? interval(r.measuredCpu, r.measuredCpu.median) : "—"} | ${perLine(r.collectorUsPerLine)} | ${us(r.cpuParts.addedUs)} / ${us(r.cpuParts.measuredAddedUs)} | ${us(r.cpuParts.transactionUs)} / ${us(r.cpuParts.measuredTransactionUs)} |`,
      ),
    ].join("\n");
    const fit = calibrationReport.calibration;
    const low = calibrationReport.workloads.find((w) => w.rate !== undefined);
    const wakeups = fit?.cpu?.columns.indexOf("wakeups") ?? -1;
    const lowRate = low
      ? `, at ${low.rate} TPS (${low.name}) all ${perLine(collectorPerLine(calibrationReport, "all", low.name))}${wakeups >= 0 ? `; the backends' cost per collector wake-up ${fit!.cpu!.coefficients[wakeups]!.toFixed(1)} µs` : ""}`
      : "";
    const text = `${context(`calibration: bench --quick on a scratch server (${fit ? `R² ${fit.r2.toFixed(2)}, residual ${fit.residualStdErrUs?.toFixed(1) ?? "?"} µs per transaction; collector CPU per line there: write ${perLine(collectorPerLine(calibrationReport, "write"))}, all ${perLine(collectorPerLine(calibrationReport, "all"))}${lowRate}` : "no fit"}); bench --db: ${RUNS} runs of ${DURATION} s per configuration; the estimate sampled ${INTERVAL} s`)}\n\n${table}`;
    process.stdout.write(`\n${text}\n`);
    // The docs' table holds (a) and (b): a run of one of them prints its rows and leaves the docs be.
    if (!values["no-docs"] && parts.has("a") && parts.has("b"))
      rewriteDocSection("estimator.md", "overhead-proof", text);
  }
  if (parts.has("c")) {
    say("(c) bench --quick with a busy loop on every core, then without");
    const busy = await quickBench(true, join(work, "busy.json"));
    const quiet = await quickBench(false, join(work, "quiet.json"));
    const rows = [
      ...travel(busy, quiet, "busy loops on every core", "quiet"),
      ...travel(quiet, busy, "quiet", "busy loops on every core"),
    ];
    const perStatement = (r: BenchReport): string =>
      (r.calibration?.cpu?.referenceUsPerStatement ?? 0).toFixed(1);
    const table = [
      "| calibrated | predicts | configuration | predicted CPU-based [95%] (scaled to its state) | unscaled | measured CPU-based [95%] | inside |",
      "|---|---|---|--:|--:|--:|:-:|",
      ...rows.map(
        (r) =>
          `| ${r.calibratedUnder} | ${r.predicts} | ${r.configuration} | ${interval(r.predicted, r.predicted.estimate)} | ${interval(r.unscaled, r.unscaled.estimate)} | ${interval(r.measured, r.measured.median)} | ${r.inside ? "yes" : "**no**"} |`,
      ),
    ].join("\n");
    const text = `${context(`baseline server CPU per statement: ${perStatement(busy)} µs with the busy loops, ${perStatement(quiet)} µs without`)}\n\n${table}`;
    process.stdout.write(`\n${text}\n`);
    if (!values["no-docs"]) rewriteDocSection("bench.md", "calibration-travels", text);
  }
} finally {
  if (values.keep) {
    mkdirSync(values.keep, { recursive: true });
    for (const name of readdirSync(work).filter((n) => n.endsWith(".json")))
      cpSync(join(work, name), join(values.keep, name));
    say(`kept the runs' JSON in ${values.keep}`);
  }
  rmSync(work, { recursive: true, force: true });
}
say(failed ? "a check failed (see **no** above)" : "every check held");
process.exit(failed ? 1 : 0);
