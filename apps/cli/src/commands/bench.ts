import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import type {
  BenchReport,
  Calibration,
  ConfigurationInfo,
  ConfigurationName,
  MitigationAxes,
  PlannedRun,
  RunResult,
} from "@auditpipe/overhead";
import { oneOf, parseFlags } from "../args.ts";
import type { BenchOptions, RateCell, runBench as RunBench } from "../bench/run.ts";
import type { CommandIO } from "../command-io.ts";
import { flagValue, wholeNumber } from "../flags.ts";
import { invocation } from "../invocation.ts";
import { UsageError } from "../usage-error.ts";

export const BENCH_HELP = `Usage: auditpipe bench [--quick] [--audit NAME...] [--workload NAME...] [--script FILE...]
                      [--init FILE] [--scale N] [--clients N] [--jobs N] [--duration S] [--runs N]
                      [--log-destination D,...] [--log-statement-once off,on] [--log-dir data,elsewhere]
                      [--durable] [--db URL | --existing] [--yes] [--restore] [--json]
                      [--report FILE.html] [--calibration-out FILE]

Measures what auditing costs on this machine: pgbench TPS with a 95% interval, overhead against
the baseline, p50/p95/p99 latency, log entries/s, MB/hour, GB/day and WAL per configuration and
workload, runs interleaved in rotating order after a discarded warm-up. Without --db it starts a
scratch PostgreSQL 15 with pgaudit (nothing to set up) and removes it at the end.

  --quick              about five and a half minutes on 2 cores (longer on a busy machine):
                       none, read, write, all, log_statement × tpcb (with foreign keys) × 4 runs
                       of 6 s, and none, write, all × read-heavy (MISC and nested lines apart
                       from the statements'), then none and all at 8 clients and at 300 TPS
                       from 2 clients (pgbench -R): other line rates for the logging collector
  --audit NAME         none, write, read, all, object (the two largest tables), log_statement
                       (PostgreSQL's own, 'all'), trigger (row-level audit trigger, OLD/NEW as jsonb);
                       repeatable or comma-separated; default all of them
  --workload NAME      tpcb, read-heavy, write-heavy, select-only; repeatable; default all
  --script FILE        your own pgbench script as a further workload; repeatable
  --init FILE          SQL run once in the bench database after pgbench -i: the tables your
                       --script needs (a workload of your own, with its own schema)
  --scale N            pgbench -i scale factor (default 10)
  --foreign-keys       pgbench -i --foreign-keys: each TPC-B history row checks 3 keys, which
                       pgaudit logs as nested READ entries (always with --quick)
  --clients N          pgbench -c (default 2)
  --jobs N             pgbench -j (default: clients, at most the cores)
  --duration S         pgbench -T of each run, seconds (default 30; --quick 6)
  --runs N             runs per configuration and workload (default 5; --quick 4)
  --warmup S           the discarded warm-up, seconds (default 10; --quick 5)
  --seed N             seed of the bootstrap intervals (default fixed: same runs, same intervals)

Mitigations, an axis of the matrix: each combination of the values given is a variant,
measured as cells of its own, interleaved with the rest (the baseline and trigger, which log
nothing, run once; log_statement_once applies to pgaudit's configurations):
  --log-destination D  csvlog, jsonlog, stderr, syslog; comma-separated or repeated for several
                       (scratch server; default csvlog). syslog needs a syslog daemon on /dev/log
                       writing PostgreSQL's messages to --syslog-file FILE
  --syslog-file FILE   where that daemon writes them (bench counts each run's entries and bytes there)
  --log-statement-once V  off, on, or off,on for both (default off; alone: on)
  --log-dir P          data, elsewhere, or data,elsewhere: the log directory on the data disk or
                       at --log-dir-elsewhere (scratch server; default data, or elsewhere when
                       --log-dir-elsewhere is given)
  --log-dir-elsewhere PATH  the other log directory (another disk; writable by the server)
  --durable            the scratch server with fsync, synchronous_commit and full_page_writes on
                       (default off, as a throwaway cluster: logging is then a larger share)

  --db URL             an existing server instead (prefer --existing and libpq's PG* variables:
                       a password in a URL shows in the process list). Needs a superuser and --yes;
                       bench creates and drops its own database, changes settings with ALTER SYSTEM
                       + reload and puts every one back (also after a crash: see --restore). Its
                       baseline is pgaudit loaded with nothing logged (no restart)
  --existing           an existing server from PGHOST, PGPORT, PGUSER, PGDATABASE
  --yes                allow the changes above on an existing server
  --restore            put back what an interrupted bench changed on the server, then exit
  --state-dir DIR      where that is saved (default $XDG_STATE_HOME/auditpipe or ~/.local/state/auditpipe)
  --json               the report as one JSON object on stdout (schema: docs/bench.md)
  --report FILE.html   also write the report as one self-contained page with charts (opens
                       offline); written after an interrupted run too, with what was measured
  --calibration-out FILE  write the fitted overhead coefficients, for estimate --calibration
  -h, --help           this text
`;

export const QUICK: {
  configs: ConfigurationName[];
  workloads: string[];
  /** Workloads that run only some of `configs` (and only where those were asked for). */
  workloadConfigs: Record<string, ConfigurationName[]>;
  rateCells: RateCell[];
  duration: number;
  runs: number;
  warmup: number;
} = {
  // read as well as write and all: the line cost, the per-transaction cost and the hooks' can
  // then be told apart (lines 1, 4, 7 with pgaudit; 7 without).
  configs: ["none", "read", "write", "all", "log_statement"] as ConfigurationName[],
  workloads: ["tpcb", "read-heavy"],
  // read-heavy's `all` logs 2 MISC lines (BEGIN, END) beside 10 statement lines, TPC-B's 2
  // beside 5: the two tell a MISC line's cost from a statement line's, which differ (a MISC
  // line costs the backends ~1 µs, a statement's ~10: docs/estimator.md). Its baseline, write
  // and all are enough for that.
  workloadConfigs: { "read-heavy": ["none", "write", "all"] as ConfigurationName[] },
  // The collector's cost per line falls as lines arrive faster: `all` at 8 clients (with its
  // baseline) gives the calibration a higher line rate, and at 300 TPS from 2 clients (pgbench -R)
  // a low one, where every line wakes the collector as on a durable server at a few hundred
  // TPS, so the cost of a wake-up is measured rather than extrapolated
  // (packages/estimate/src/collector-cost.ts). Each in 3 rounds at most.
  rateCells: [
    { clients: 8, configs: ["none", "all"] as ConfigurationName[], rounds: 3 },
    { clients: 2, rate: 300, configs: ["none", "all"] as ConfigurationName[], rounds: 3 },
  ],
  duration: 6,
  // 4 rounds, not 3: a run's CPU per transaction swings ~10 % on a VM, and the calibration's
  // prediction interval carries that noise over the runs it had (the overhead proof's CPU-bound
  // server wanted ±5 points; 3 rounds gave ±6.5).
  runs: 4,
  warmup: 5,
};

/**
 * Seconds of restart, CHECKPOINT and log reading around each run, for the planned duration:
 * measured between the runs of --quick on 2 cores, 0.5 s at a load of 4 and 1.8 s at 17.
 */
export const PER_RUN_OVERHEAD_SEC = 1.2;

function positiveInt(value: unknown, flag: string, fallback: number, max = 1_000_000): number {
  if (value === undefined) return fallback;
  return flagValue("bench", flag, value, wholeNumber({ min: 1, max }), { default: String(fallback) });
}

function listOf(values: unknown): string[] {
  return ((values as string[] | undefined) ?? []).flatMap((v) => v.split(",")).map((v) => v.trim());
}

const quoteArg = (a: string): string => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`);
/**
 * The command line that reproduces the report, as the user started it (`auditpipe`, `npx
 * auditpipe`, ...: invocation.ts), with any password in a URL masked.
 */
export function commandLine(argv: string[], command: string = invocation()): string {
  const masked = argv.map((a) => a.replace(/(postgres(?:ql)?:\/\/[^:/@\s]+):[^@\s]*@/g, "$1:***@"));
  return [command, "bench", ...masked.map(quoteArg)].join(" ");
}

/**
 * Statements per transaction of a pgbench script: lines ending a statement (with `;`, or with
 * `\gset` / `\aset`, which end one in its place), meta-commands aside.
 */
export function statementsInScript(script: string): number {
  return script
    .split("\n")
    .map((l) => l.replace(/--.*$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("\\") && (l.endsWith(";") || /\\[ag]set(\s+\w+)?$/.test(l)))
    .length;
}

/** On/off values of --log-statement-once. */
const ON_OFF = /^(on|off)(,(on|off))*$/;

/**
 * `--log-statement-once` alone still means on (it was a switch before it took values): given no
 * on/off value after it, it gets one.
 */
export function normaliseSwitches(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      out.push(...argv.slice(i));
      break;
    }
    if (a === "--log-statement-once" && !ON_OFF.test(argv[i + 1] ?? "")) out.push("--log-statement-once=on");
    else out.push(a);
  }
  return out;
}

type Flags = ReturnType<typeof parseFlags>["values"];
type Overhead = typeof import("@auditpipe/overhead");
type Workload = BenchOptions["workloads"][number];

/**
 * What the flags ask for, checked before anything is measured: the options of runBench but the
 * workloads' files and the work directory (made once the plan stands), and what to report where.
 */
interface BenchPlan {
  options: Omit<BenchOptions, "workloads" | "workDir">;
  /** The built-in workloads to run, then the user's --script files. */
  builtins: string[];
  scripts: Array<{ file: string; text: string }>;
  json: boolean;
  reportFile: string | undefined;
  calibrationOut: string | undefined;
}

/** parse flags → (restore) → plan → run → report. */
export async function benchCommand(argv: string[], io: CommandIO): Promise<number> {
  const flags = parseBenchFlags(argv);
  if (flags.help) {
    io.stdout(BENCH_HELP);
    return 0;
  }
  const bench = await import("@auditpipe/overhead");
  const { defaultStateDir } = await import("../bench/restore-state.ts");
  const stateDir = flags["state-dir"] === undefined ? defaultStateDir() : String(flags["state-dir"]);
  const connection = flags.db === undefined ? undefined : String(flags.db);
  const existing = connection !== undefined || flags.existing === true;
  if (flags.restore) {
    if (!existing) throw new UsageError("bench: --restore needs the server: --db URL or --existing");
    return restoreServer(connection, stateDir, io);
  }

  const plan = await planBench(
    argv,
    flags,
    bench,
    existing ? { connection, yes: flags.yes === true, stateDir } : null,
  );
  const workDir = mkdtempSync(join(tmpdir(), "auditpipe-bench-"));
  const workloads = writeWorkloads(plan, bench, workDir);
  const { runBench } = await import("../bench/run.ts");
  try {
    const outcome = await runBench({ ...plan.options, workloads, workDir }, io);
    return reportBench(outcome, plan, bench, io);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The flags, and no positional argument. */
function parseBenchFlags(argv: string[]): Flags {
  const { values, positionals } = parseFlags("bench", normaliseSwitches(argv), {
    quick: { type: "boolean", default: false },
    audit: { type: "string", multiple: true },
    workload: { type: "string", multiple: true },
    script: { type: "string", multiple: true },
    init: { type: "string" },
    scale: { type: "string" },
    clients: { type: "string" },
    jobs: { type: "string" },
    duration: { type: "string" },
    runs: { type: "string" },
    warmup: { type: "string" },
    seed: { type: "string" },
    "log-destination": { type: "string", multiple: true },
    "log-dir-elsewhere": { type: "string" },
    "log-statement-once": { type: "string", multiple: true },
    "log-dir": { type: "string", multiple: true },
    "syslog-file": { type: "string" },
    durable: { type: "boolean", default: false },
    "foreign-keys": { type: "boolean", default: false },
    db: { type: "string" },
    existing: { type: "boolean", default: false },
    yes: { type: "boolean", default: false },
    restore: { type: "boolean", default: false },
    "state-dir": { type: "string" },
    json: { type: "boolean", default: false },
    report: { type: "string" },
    "calibration-out": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  });
  if (!values.help && positionals.length > 0)
    throw new UsageError(
      `bench: unexpected argument ${JSON.stringify(positionals[0])} (see auditpipe bench --help)`,
    );
  return values;
}

/** --restore: puts back what an interrupted bench changed on the server, then exits. */
async function restoreServer(
  connection: string | undefined,
  stateDir: string,
  io: CommandIO,
): Promise<number> {
  const { connectExisting } = await import("../bench/target.ts");
  const { admin, restored } = await connectExisting({
    connection,
    yes: true,
    stateDir,
    onNotice: () => {},
  });
  await admin.end();
  io.stdout(
    restored
      ? `bench: put back ${restored.join(", ") || "nothing"}; dropped the bench database and role\n`
      : "bench: nothing to restore for this server\n",
  );
  return 0;
}

/** The run the flags describe, every flag checked (a UsageError names the first one wrong). */
async function planBench(
  argv: string[],
  values: Flags,
  bench: Overhead,
  existing: BenchOptions["existing"],
): Promise<BenchPlan> {
  const quick = values.quick === true;
  const configNames = listOf(values.audit);
  const configs = (
    configNames.length > 0 ? configNames : quick ? QUICK.configs : bench.CONFIGURATION_NAMES
  ).map((c) => oneOf("bench", "audit", c, bench.CONFIGURATION_NAMES));
  if (!configs.includes("none")) configs.unshift("none"); // overhead needs its baseline
  const scripts = ((values.script as string[] | undefined) ?? []).map((file) => {
    try {
      return { file, text: readFileSync(file, "utf8") };
    } catch (error) {
      throw new UsageError(`bench: --script ${file}: ${(error as Error).message}`);
    }
  });
  let initSql: string | null = null;
  if (values.init !== undefined) {
    try {
      initSql = readFileSync(String(values.init), "utf8");
    } catch (error) {
      throw new UsageError(`bench: --init ${String(values.init)}: ${(error as Error).message}`);
    }
  }
  const workloadNames = listOf(values.workload).map((w) =>
    oneOf("bench", "workload", w, bench.WORKLOAD_NAMES),
  );
  const builtins =
    workloadNames.length > 0
      ? workloadNames
      : scripts.length > 0
        ? []
        : quick
          ? QUICK.workloads
          : [...bench.WORKLOAD_NAMES];
  const scale = positiveInt(values.scale, "scale", 10, 100_000);
  const clients = positiveInt(values.clients, "clients", 2, 1000);
  const jobs = positiveInt(values.jobs, "jobs", Math.max(1, Math.min(clients, cpus().length)), 1000);
  if (jobs > clients) throw new UsageError("bench: --jobs cannot exceed --clients (pgbench's rule)");
  const durationSec = positiveInt(values.duration, "duration", quick ? QUICK.duration : 30, 86_400);
  const runs = positiveInt(values.runs, "runs", quick ? QUICK.runs : 5, 1000);
  const warmupSec =
    values.warmup === "0" ? 0 : positiveInt(values.warmup, "warmup", quick ? QUICK.warmup : 10, 86_400);
  const seed = values.seed === undefined ? bench.DEFAULT_SEED : positiveInt(values.seed, "seed", 1, 2 ** 31);
  const { mitigations, logDirElsewhere, syslogFile } = await planMitigations(
    values,
    bench,
    existing !== null,
  );
  const calibrationOut =
    values["calibration-out"] === undefined ? undefined : String(values["calibration-out"]);
  const reportFile = values.report === undefined ? undefined : String(values.report);
  // Checked before the run: finding out after minutes of measuring would waste them.
  if (reportFile !== undefined) {
    try {
      accessSync(dirname(resolve(reportFile)), constants.W_OK);
    } catch (error) {
      throw new UsageError(
        `bench: --report ${reportFile}: its directory cannot be written (${(error as Error).message})`,
      );
    }
  }
  return {
    options: {
      command: commandLine(argv),
      existing,
      configs,
      initSql,
      scale,
      clients,
      jobs,
      durationSec,
      runs,
      warmupSec,
      seed,
      mitigations,
      logDirElsewhere,
      syslogFile,
      durable: values.durable === true,
      // --quick always: the calibration's nested lines (TPC-B's history rows check 3 keys).
      foreignKeys: quick || values["foreign-keys"] === true,
      quick,
      perRunOverheadSec: PER_RUN_OVERHEAD_SEC,
      rateCells: quick && configs.includes("all") && builtins[0] === "tpcb" ? QUICK.rateCells : null,
      workloadConfigs:
        quick && workloadNames.length === 0 && scripts.length === 0 ? QUICK.workloadConfigs : null,
    },
    builtins,
    scripts,
    json: values.json === true,
    reportFile,
    calibrationOut,
  };
}

/** The mitigations axis (log destination, log_statement_once, log directory), for the scratch server only. */
async function planMitigations(
  values: Flags,
  bench: Overhead,
  existing: boolean,
): Promise<{ mitigations: MitigationAxes; logDirElsewhere: string | null; syslogFile: string | null }> {
  const logDestination = listOf(values["log-destination"]).map((d) =>
    oneOf("bench", "log-destination", d, bench.LOG_DESTINATIONS),
  );
  const logStatementOnce = listOf(values["log-statement-once"]).map(
    (v) => oneOf("bench", "log-statement-once", v, ["off", "on"] as const) === "on",
  );
  const logDirElsewhere =
    values["log-dir-elsewhere"] === undefined ? null : String(values["log-dir-elsewhere"]);
  const logDir = listOf(values["log-dir"]).map((p) => oneOf("bench", "log-dir", p, bench.LOG_PLACEMENTS));
  const syslogFile = values["syslog-file"] === undefined ? null : resolve(String(values["syslog-file"]));
  const scratchOnly = ["log-destination", "log-dir", "log-dir-elsewhere", "syslog-file", "durable"].filter(
    (f) => values[f] !== undefined && values[f] !== false,
  );
  if (existing && scratchOnly.length > 0)
    throw new UsageError(
      `bench: ${scratchOnly.map((f) => `--${f}`).join(", ")} apply to the scratch server only (an existing server keeps its own logging and durability)`,
    );
  if (logDir.includes("elsewhere") && !logDirElsewhere)
    throw new UsageError("bench: --log-dir elsewhere needs --log-dir-elsewhere PATH (the other directory)");
  if (logDestination.includes("syslog") && !syslogFile)
    throw new UsageError(
      "bench: --log-destination syslog needs --syslog-file FILE: the file your syslog daemon writes PostgreSQL's messages to (see docs/bench.md)",
    );
  if (syslogFile && !logDestination.includes("syslog"))
    throw new UsageError("bench: --syslog-file is read only with --log-destination syslog");
  if (logDestination.includes("syslog")) {
    const { syslogSocketProblem } = await import("../bench/syslog.ts");
    const problem = syslogSocketProblem();
    if (problem) throw new bench.BenchError(bench.AUDITPIPE_ERR_BENCH_NO_SYSLOG, problem);
  }
  return {
    mitigations: {
      logDestination: logDestination.length > 0 ? logDestination : ["csvlog"],
      logStatementOnce: logStatementOnce.length > 0 ? logStatementOnce : [false],
      logDir: logDir.length > 0 ? logDir : [logDirElsewhere ? "elsewhere" : "data"],
    },
    logDirElsewhere,
    syslogFile,
  };
}

/** The workloads as pgbench runs them: built-in ones by name or as a script written to `workDir`, then the user's. */
function writeWorkloads(plan: BenchPlan, bench: Overhead, workDir: string): Workload[] {
  const workloads: Workload[] = [];
  for (const name of plan.builtins) {
    const spec = bench.WORKLOADS[name as keyof typeof bench.WORKLOADS];
    if (spec.builtin) {
      // With foreign keys TPC-B's INSERT runs 3 key checks: statements pgaudit's hooks process too.
      const checks = name === "tpcb" && plan.options.foreignKeys;
      workloads.push({
        info: {
          name,
          description: checks ? `${spec.description}; its INSERT checks 3 foreign keys` : spec.description,
          statementsPerTransaction: name === "tpcb" ? (checks ? 10 : 7) : 1,
        },
        args: ["-b", spec.builtin],
      });
    } else {
      const file = join(workDir, `${name}.sql`);
      writeFileSync(file, spec.script!);
      workloads.push({
        info: {
          name,
          description: spec.description,
          statementsPerTransaction: statementsInScript(spec.script!),
        },
        args: ["-f", file],
      });
    }
  }
  for (const s of plan.scripts)
    workloads.push({
      info: {
        name: `script:${basename(s.file)}`,
        description: `your pgbench script ${s.file}`,
        statementsPerTransaction: statementsInScript(s.text),
      },
      args: ["-f", s.file],
    });
  return workloads;
}

/** Prints the report, writes --report and --calibration-out; the exit code (130: interrupted). */
function reportBench(
  outcome: Awaited<ReturnType<typeof RunBench>>,
  plan: BenchPlan,
  bench: Overhead,
  io: CommandIO,
): number {
  const report: BenchReport = outcome.report;
  if (plan.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  else io.stdout(bench.renderReport(report));
  let reportFailed = false;
  if (plan.reportFile !== undefined) {
    try {
      writeFileSync(plan.reportFile, bench.renderHtmlReport(report));
      io.stderr(`bench: report written to ${plan.reportFile}\n`);
    } catch (error) {
      reportFailed = true;
      io.stderr(`bench: --report ${plan.reportFile}: not written: ${(error as Error).message}\n`);
    }
  }
  if (plan.calibrationOut) {
    if (!report.calibration) {
      io.stderr(
        "bench: no calibration written: it needs the baseline and at least one configuration that logs (write, read, all, object or log_statement)\n",
      );
    } else {
      const calibration: Calibration = {
        kind: "auditpipe-calibration",
        version: report.calibration.cpu?.columns.includes("miscLines")
          ? 5
          : report.calibration.cpu?.columns.includes("wakeups")
            ? 4
            : report.calibration.cpu?.collector
              ? 3
              : 2,
        createdAt: report.finishedAt,
        host: report.environment.host,
        environment: report.environment,
        fit: report.calibration,
        points: outcome.points,
      };
      writeFileSync(plan.calibrationOut, `${JSON.stringify(calibration, null, 2)}\n`);
      io.stderr(`bench: calibration written to ${plan.calibrationOut}\n`);
    }
  }
  if (!report.complete) return outcome.failed ? 1 : 130;
  return reportFailed ? 1 : 0;
}

export type { ConfigurationInfo, PlannedRun, RunResult };
