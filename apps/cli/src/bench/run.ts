/**
 * The bench's I/O loop: start or borrow the server, initialise pgbench's tables once, then the
 * planned runs in rotating order; Ctrl-C or an error stops it, and what was measured is still
 * summarised. The server is always put back (scratch: removed; existing: settings restored).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import {
  AUDIT_ROLE,
  auditTriggerSql,
  type BenchReport,
  type CalibrationPoint,
  CONFIGURATIONS,
  type ConfigurationInfo,
  type ConfigurationName,
  calibrationPoints,
  dropAuditTriggerSql,
  fitCalibration,
  type Mitigation,
  type MitigationAxes,
  mitigationVariants,
  type PlannedRun,
  plannedSeconds,
  planRuns,
  quoteIdent,
  type RunResult,
  summarizeCells,
  type VariantInfo,
  variantsFor,
  type WorkloadInfo,
} from "@auditpipe/overhead";
import type pg from "pg";
import type { CommandIO } from "../command-io.ts";
import { collectEnvironment, logDirectoryOf } from "./environment.ts";
import { measureRun, runPgbench } from "./measure.ts";
import { desiredSettings } from "./settings.ts";
import { probeSyslog } from "./syslog.ts";
import { type BenchTarget, type RunLogging, startExistingTarget, startScratchTarget } from "./target.ts";

export interface BenchOptions {
  command: string;
  existing: { connection: string | undefined; yes: boolean; stateDir: string } | null;
  configs: ConfigurationName[];
  workloads: Array<{ info: WorkloadInfo; args: string[] }>;
  /** SQL run once after pgbench -i (--init): the tables of the --script workloads. */
  initSql?: string | null;
  scale: number;
  clients: number;
  jobs: number;
  durationSec: number;
  runs: number;
  warmupSec: number;
  seed: number;
  /** The mitigations axis: every combination is a variant, measured as cells of its own. */
  mitigations: MitigationAxes;
  logDirElsewhere: string | null;
  /** The file the syslog daemon writes PostgreSQL's messages to (the syslog destination). */
  syslogFile: string | null;
  /** Scratch server with fsync, synchronous_commit and full_page_writes on. */
  durable: boolean;
  quick: boolean;
  workDir: string;
  perRunOverheadSec: number;
  /**
   * Other line rates for the calibration (bench --quick): the first workload again at `clients`
   * (at pgbench -R `rate` where given), running only `configs` (its baseline among them), in at
   * most `rounds` rounds. The collector's cost per line falls as lines arrive faster, so it is
   * fitted at more than one rate; at a low fixed rate every line wakes it.
   */
  rateCells?: RateCell[] | null;
  /**
   * pgbench -i --foreign-keys: TPC-B's history rows then check 3 keys, which pgaudit logs as
   * nested READ entries under read and all (bench --quick: the calibration prices nested lines).
   */
  foreignKeys?: boolean;
  /** Workloads that run only these of `configs` (bench --quick's read-heavy); absent: all of them. */
  workloadConfigs?: Record<string, ConfigurationName[]> | null;
}

export interface RateCell {
  clients: number;
  /** pgbench -R, transactions per second; absent: as fast as it goes. */
  rate?: number;
  configs: ConfigurationName[];
  rounds: number;
}

/** A rate cell's workload name: the first workload's, at its clients or its rate (`tpcb@8`, `tpcb@300tps`). */
export const rateCellName = (workload: string, cell: RateCell): string =>
  `${workload}@${cell.rate === undefined ? cell.clients : `${cell.rate}tps`}`;

/** The workloads the rate cells run under: the first workload's, at other clients or rates, under their own names. */
export function withRateCells(
  workloads: BenchOptions["workloads"],
  rates: BenchOptions["rateCells"],
): BenchOptions["workloads"] {
  const first = workloads[0];
  if (!rates || !first) return workloads;
  return [
    ...workloads,
    ...rates.map((cell) => ({
      info: {
        ...first.info,
        name: rateCellName(first.info.name, cell),
        clients: cell.clients,
        ...(cell.rate === undefined ? {} : { rate: cell.rate }),
      },
      args: first.args,
    })),
  ];
}

/** pgbench from PostgreSQL 15's Debian directory (or AUDITPIPE_PG_BINDIR), else the PATH's. */
export function pgbenchBinary(): string {
  const dir = process.env.AUDITPIPE_PG_BINDIR ?? "/usr/lib/postgresql/15/bin";
  const candidate = join(dir, "pgbench");
  return existsSync(candidate) ? candidate : "pgbench";
}

/** This CLI's version, from its package.json (two levels up from src/bench/ and dist/bench/). */
function cliVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/**
 * Seconds the one-off set-up takes on a 2-core machine (initdb, pgbench -i, ANALYZE): measured at
 * scale 10, 5 s at a load of 4 and 20 s at 17.
 */
export const setupSeconds = (scale: number): number => 6 + scale * 0.8;

/** "about 2 min", to the half minute: what the planned seconds come to. */
export function aboutMinutes(seconds: number): string {
  const half = Math.max(0.5, Math.round(seconds / 30) / 2);
  return half < 1 ? "under a minute" : `about ${half} min`;
}

async function twoLargestTables(client: pg.Client): Promise<string[]> {
  const r = await client.query<{ relname: string }>(
    "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE 'pgbench\\_%' AND relnamespace = 'public'::regnamespace ORDER BY pg_total_relation_size(oid) DESC, relname LIMIT 2",
  );
  return r.rows.map((row) => row.relname);
}

const PGBENCH_TABLES = ["pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"];

/** What the run loop needs to know about the plan: the variants each configuration runs under. */
interface RunPlan {
  variants: Mitigation[];
  variantsOf: (configuration: string) => Mitigation[];
  plan: PlannedRun[];
  planned: number;
}

/** pgbench's version string; a missing pgbench stops the bench with the command that installs it. */
function pgbenchVersionOf(pgbenchBin: string): string {
  try {
    return execFileSync(pgbenchBin, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    throw new Error(
      `pgbench not found (${pgbenchBin}): apt-get install -y postgresql-15 (or set AUDITPIPE_PG_BINDIR)`,
    );
  }
}

/** Ctrl-C and SIGTERM stop the runs (what was measured is still reported); `detach` removes the handlers. */
function interruptOn(io: CommandIO): {
  controller: AbortController;
  interruption: () => string | null;
  detach: () => void;
} {
  const controller = new AbortController();
  let interruption: string | null = null;
  const onSignal = (): void => {
    if (!controller.signal.aborted) {
      interruption = "interrupted (Ctrl-C)";
      io.stderr(
        "\nbench: stopping after Ctrl-C; reporting what was measured and putting the server back...\n",
      );
      controller.abort();
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    controller,
    interruption: () => interruption,
    detach: () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}

/** The interleaved plan (every cell under its variants, the rate cells' workload on its few configurations), announced with its duration. */
function planBenchRuns(o: BenchOptions, io: CommandIO): RunPlan {
  const workloadNames = o.workloads.map((w) => w.info.name);
  // Each configuration under the variants that change something for it (mitigations.ts).
  const asked = mitigationVariants(o.mitigations);
  const variantsOf = (c: string): Mitigation[] =>
    variantsFor(CONFIGURATIONS[c as ConfigurationName].kind, asked);
  const variants: Mitigation[] = [];
  for (const v of o.configs.flatMap(variantsOf))
    if (!variants.some((x) => x.name === v.name)) variants.push(v);
  const first = o.workloads[0]?.info.name ?? "";
  const rateOf = (w: string): RateCell | undefined =>
    o.rateCells?.find((cell) => rateCellName(first, cell) === w);
  const plan = planRuns({
    configurations: o.configs,
    workloads: workloadNames,
    runs: o.runs,
    warmup: o.warmupSec > 0,
    variants: (c) => variantsOf(c).map((v) => v.name),
    configurationsOf: (w) =>
      rateOf(w)?.configs ?? o.workloadConfigs?.[w]?.filter((c) => o.configs.includes(c)),
    roundsOf: (w) => rateOf(w)?.rounds,
  });
  const planned = plannedSeconds(plan, {
    durationSec: o.durationSec,
    warmupSec: o.warmupSec,
    perRunOverheadSec: o.perRunOverheadSec,
    setupSec: setupSeconds(o.scale),
  });
  const measuredRuns = plan.filter((r) => !r.warmup).length;
  const rates = o.rateCells ?? [];
  const rateRuns = plan.filter((r) => !r.warmup && rateOf(r.workload)).length;
  const mainWorkloads = workloadNames.length - rates.length;
  const rateText = rates
    .map(
      (cell) =>
        `${cell.configs.join(" and ")} at ${cell.clients} clients${cell.rate === undefined ? "" : ` at ${cell.rate} TPS`}`,
    )
    .join(", ");
  // Workloads that run only some configurations (bench --quick's read-heavy), said apart.
  const partial = workloadNames.filter((w) => !rateOf(w) && o.workloadConfigs?.[w]);
  const full = mainWorkloads - partial.length;
  const partialText = partial
    .map((w) => `${o.workloadConfigs![w]!.filter((c) => o.configs.includes(c)).join(", ")} × ${w}`)
    .join("; ");
  // Combinations of configuration and variant: a workload that runs them all has one cell each.
  const fullWorkload = workloadNames.find((w) => !rateOf(w) && !o.workloadConfigs?.[w]);
  const fullCells = plan.filter((r) => !r.warmup && r.workload === fullWorkload).length / o.runs;
  io.stderr(
    `bench: ${o.configs.length} configurations${asked.length > 1 ? ` under ${asked.length} mitigation variants (${fullCells} combinations)` : ""} × ${full} workload${full === 1 ? "" : "s"}${partial.length > 0 ? ` (and ${partialText})` : ""} × ${o.runs} runs of ${o.durationSec} s${rates.length > 0 ? ` + ${rateText} (other line rates for the calibration, ${rateRuns} runs)` : ""} = ${measuredRuns} runs (+ warm-up); ${aboutMinutes(planned)}\n`,
  );
  return { variants, variantsOf, plan, planned };
}

const loggingOf = (v: Mitigation): RunLogging => ({ destination: v.logDestination, dir: v.logDir });

/** What the set-up found: the configurations that can run here, what each is, and the server's environment. */
interface Prepared {
  configs: ConfigurationName[];
  configInfos: ConfigurationInfo[];
  environment: BenchReport["environment"];
  variantInfos: VariantInfo[];
  baseline: BenchReport["target"]["baseline"];
  versionNum: number;
  logPrefix: string;
}

/** The existing server's baseline, and the configurations it cannot run without pgaudit loaded. */
function existingBaseline(
  target: BenchTarget,
  configs: ConfigurationName[],
  notes: string[],
): { configs: ConfigurationName[]; baseline: BenchReport["target"]["baseline"] } {
  if (target.kind !== "existing") return { configs, baseline: "pgaudit-not-loaded" };
  let kept = configs;
  if (!target.pgauditAvailable) {
    const dropped = configs.filter((c) => CONFIGURATIONS[c].preloadPgaudit);
    kept = configs.filter((c) => !CONFIGURATIONS[c].preloadPgaudit);
    if (dropped.length > 0)
      notes.push(
        `pgaudit is not in this server's shared_preload_libraries: ${dropped.join(", ")} not measured (loading it needs a restart bench does not do on an existing server)`,
      );
  }
  notes.push(
    target.pgauditAvailable
      ? "existing server: the baseline is pgaudit loaded with nothing logged, so the cost of its hooks is inside the baseline"
      : "existing server without pgaudit: the baseline has nothing audited",
  );
  return {
    configs: kept,
    baseline: target.pgauditAvailable ? "pgaudit-loaded-nothing-logged" : "pgaudit-not-loaded",
  };
}

/** pgbench -i, the --init SQL, ANALYZE, the object-audit grants and the trigger's table: once, before any run. */
async function initialiseTables(
  o: BenchOptions,
  target: BenchTarget,
  configs: readonly ConfigurationName[],
  pgbenchBin: string,
  signal: AbortSignal,
  io: CommandIO,
): Promise<string[]> {
  const client = await target.client();
  const conn = target.pgbench();
  const fk = o.foreignKeys ? ["--foreign-keys"] : [];
  io.stderr(`bench: pgbench -i -s ${o.scale}${o.foreignKeys ? " --foreign-keys" : ""}...\n`);
  const init = await runPgbench(
    pgbenchBin,
    [...conn.args, "-i", "-q", "-s", String(o.scale), ...fk],
    conn.env,
    signal,
  );
  if (signal.aborted) throw new Error("interrupted");
  if (init.code !== 0)
    throw new Error(
      `pgbench -i failed (exit ${init.code}): ${init.stderr.trim().split("\n").slice(-2).join(" | ")}`,
    );
  if (o.initSql) {
    io.stderr("bench: running --init...\n");
    await client.query(o.initSql);
  }
  await client.query("ANALYZE");
  const largest = await twoLargestTables(client);
  if (configs.includes("object")) {
    const exists = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [AUDIT_ROLE]);
    if (!exists.rowCount) await client.query(`CREATE ROLE ${quoteIdent(AUDIT_ROLE)} NOLOGIN`);
    for (const t of largest)
      await client.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ${quoteIdent(t)} TO ${quoteIdent(AUDIT_ROLE)}`,
      );
  }
  if (configs.includes("trigger")) {
    const [table, fn] = auditTriggerSql([]);
    await client.query(table!);
    await client.query(fn!);
  }
  return largest;
}

/** Everything before the first run: the target's baseline, its tables, what each configuration is, the environment, the syslog probe. */
async function prepare(
  o: BenchOptions,
  target: BenchTarget,
  p: RunPlan,
  pgbenchBin: string,
  pgbenchVersion: string,
  notes: string[],
  signal: AbortSignal,
  io: CommandIO,
): Promise<Prepared> {
  const { configs, baseline } = existingBaseline(target, [...o.configs], notes);
  const largest = await initialiseTables(o, target, configs, pgbenchBin, signal, io);
  const configInfos: ConfigurationInfo[] = configs.map((name) => {
    const spec = CONFIGURATIONS[name];
    return {
      name,
      kind: spec.kind,
      description: spec.description,
      preloadPgaudit: spec.preloadPgaudit && target.kind === "scratch",
      // As under its first variant; the variants table says what the others change.
      settings: Object.fromEntries(
        Object.entries(
          desiredSettings(spec, spec.preloadPgaudit || target.kind === "existing", p.variantsOf(name)[0]!),
        ).filter((e): e is [string, string] => e[1] !== null),
      ),
      tables: name === "object" ? largest : name === "trigger" ? PGBENCH_TABLES : [],
    };
  });
  const client = await target.client();
  const versionNum = Number(
    (await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]!.v,
  );
  const logPrefix = (await client.query<{ v: string }>("SELECT current_setting('log_line_prefix') AS v"))
    .rows[0]!.v;
  // Read before the syslog probe below restarts the server: the settings the first variant starts with.
  const environment = await collectEnvironment(
    client,
    { dataDir: target.dataDir, logDir: target.logDir },
    pgbenchVersion,
  );
  const syslogVariant = p.variants.find((v) => v.logDestination === "syslog");
  if (syslogVariant && target.kind === "scratch" && o.syslogFile) {
    // Before anything is measured: a daemon that loses PostgreSQL's messages ends the bench here.
    await target.apply(
      desiredSettings(CONFIGURATIONS.none, false, syslogVariant),
      false,
      loggingOf(syslogVariant),
    );
    await probeSyslog(await target.client(), o.syslogFile);
  }
  const variantInfos = p.variants.map((v) => ({
    ...v,
    ...logDirectoryOf(target.dataDir, target.logDirFor(loggingOf(v))),
  }));
  if (!(await target.logFile()))
    notes.push("the server's log files are not readable from here: log entries and bytes were not measured");
  return { configs, configInfos, environment, variantInfos, baseline, versionNum, logPrefix };
}

/** The planned runs in order (triggers on and off as the configuration needs); stops early when aborted. */
async function runPlanned(
  o: BenchOptions,
  target: BenchTarget,
  p: RunPlan,
  prepared: Prepared,
  pgbenchBin: string,
  signal: AbortSignal,
  io: CommandIO,
  results: RunResult[],
): Promise<void> {
  const runPlan = p.plan.filter((r) => prepared.configs.includes(r.configuration as ConfigurationName));
  const t0 = Date.now();
  let done = 0;
  let triggersOn = false;
  for (const run of runPlan) {
    if (signal.aborted) break;
    const spec = CONFIGURATIONS[run.configuration as ConfigurationName];
    const c = await target.client();
    if ((spec.name === "trigger") !== triggersOn) {
      const sql =
        spec.name === "trigger"
          ? auditTriggerSql(PGBENCH_TABLES).slice(2)
          : dropAuditTriggerSql(PGBENCH_TABLES);
      for (const s of sql) await c.query(s);
      triggersOn = spec.name === "trigger";
    }
    const variant = p.variants.find((v) => v.name === run.variant)!;
    const pgauditLoaded = target.kind === "existing" ? target.pgauditAvailable : spec.preloadPgaudit;
    await target.apply(
      desiredSettings(spec, pgauditLoaded, variant),
      spec.preloadPgaudit,
      target.kind === "scratch" ? loggingOf(variant) : undefined,
    );
    progress(io, run, done, runPlan.length, t0, p.planned);
    const w = o.workloads.find((x) => x.info.name === run.workload)!;
    const clients = w.info.clients ?? o.clients;
    try {
      const result = await measureRun(target, run, {
        pgbenchBin,
        workloadArgs: w.args,
        clients,
        // A rate cell's clients get pgbench's default threads for them (--jobs is for --clients).
        jobs: w.info.clients ? Math.max(1, Math.min(clients, cpus().length)) : o.jobs,
        ...(w.info.rate === undefined ? {} : { rate: w.info.rate }),
        durationSec: run.warmup ? o.warmupSec : o.durationSec,
        workDir: o.workDir,
        signal,
        logPrefix:
          variant.logDestination === "stderr" || variant.logDestination === "syslog"
            ? prepared.logPrefix
            : undefined,
        serverVersionNum: prepared.versionNum,
      });
      if (!run.warmup) results.push({ ...result, variant: variant.name });
    } catch (error) {
      if (signal.aborted) break;
      throw error;
    }
    done++;
  }
  if (io.stderrIsTTY) io.stderr("\n");
  if (triggersOn && !signal.aborted)
    for (const s of dropAuditTriggerSql(PGBENCH_TABLES)) await (await target.client()).query(s);
}

/** The notes the report ends with: what the server was, the variants, the calibration's scope, a busy machine. */
function reportNotes(
  o: BenchOptions,
  p: RunPlan,
  environment: BenchReport["environment"] | undefined,
  fitted: boolean,
): string[] {
  const notes: string[] = [];
  const asked = mitigationVariants(o.mitigations);
  if (!o.existing && environment && environment.settings.fsync === "off")
    notes.push(
      "the scratch server runs with fsync and synchronous_commit off (a throwaway cluster; --durable turns them on): transactions are shorter than on a durable server, so logging is a larger share of each",
    );
  if (asked.length > 1)
    notes.push(
      `mitigations measured as variants (${asked.map((v) => v.name).join(", ")}): the baseline and the trigger log nothing during a run, so they ran once (${p.variantsOf("none")[0]!.name}) and every variant's overhead is against that one baseline; log_statement_once changes only pgaudit's configurations`,
    );
  if (p.variants.some((v) => v.logDestination === "syslog") && o.syslogFile)
    notes.push(
      `syslog: the entries and bytes are what the syslog daemon wrote to ${o.syslogFile} in that run, in its format; a daemon that rate-limits its local socket drops entries and the cost of writing them`,
    );
  if (fitted && new Set(p.variants.map((v) => v.logDestination)).size > 1)
    notes.push(
      `calibration: fitted on the ${p.variants[0]!.logDestination} cells only (a log line costs differently by destination; the model has one cost per line)`,
    );
  if (environment && environment.loadAverage > environment.cpus.count * 0.5)
    notes.push(
      `the machine was busy when the bench started (load ${environment.loadAverage.toFixed(2)} on ${environment.cpus.count} cores): expect wide intervals`,
    );
  return notes;
}

/**
 * The bench: pgbench's version, the plan, the target (scratch or existing) prepared, the runs,
 * then the cells, the calibration and the report. The server is always put back; an error or
 * Ctrl-C after the set-up still reports what was measured.
 */
export async function runBench(
  options: BenchOptions,
  io: CommandIO,
): Promise<{ report: BenchReport; points: CalibrationPoint[]; failed: boolean }> {
  const startedAt = new Date();
  const o = { ...options, workloads: withRateCells(options.workloads, options.rateCells) };
  const pgbenchBin = pgbenchBinary();
  const pgbenchVersion = pgbenchVersionOf(pgbenchBin);
  const signals = interruptOn(io);
  const { signal } = signals.controller;
  const p = planBenchRuns(o, io);
  let target: BenchTarget | undefined;
  let prepared: Prepared | undefined;
  let interruption: string | null = null;
  let failed = false;
  const results: RunResult[] = [];
  const notes: string[] = [];
  try {
    target = o.existing
      ? await startExistingTarget({ ...o.existing, onNotice: (t) => io.stderr(`bench: ${t}`) })
      : await startScratchTarget({
          logging: loggingOf(p.variants[0]!),
          logDirElsewhere: o.logDirElsewhere,
          syslogFile: o.syslogFile,
          durable: o.durable,
          scale: o.scale,
        });
    prepared = await prepare(o, target, p, pgbenchBin, pgbenchVersion, notes, signal, io);
    await runPlanned(o, target, p, prepared, pgbenchBin, signal, io, results);
  } catch (error) {
    if (!signal.aborted) {
      failed = true;
      interruption = `stopped by an error: ${error instanceof Error ? error.message : String(error)}`;
      io.stderr(`bench: ${interruption}\n`);
    }
    if (!prepared) {
      await target?.close().catch(() => {});
      signals.detach();
      throw error;
    }
  } finally {
    if (prepared) {
      try {
        await target?.close();
      } catch (error) {
        io.stderr(
          `bench: putting the server back failed: ${(error as Error).message} (run bench --restore)\n`,
        );
        failed = true;
      }
      signals.detach();
    }
  }
  interruption ??= signals.interruption();
  const { report, points } = summariseBench(o, p, prepared, results, {
    startedAt,
    interruption,
    notes,
  });
  return { report, points, failed };
}

/** The cells, the calibration points and fit, and the report, from the runs measured. */
function summariseBench(
  o: BenchOptions,
  p: RunPlan,
  prepared: Prepared,
  results: RunResult[],
  run: { startedAt: Date; interruption: string | null; notes: string[] },
): { report: BenchReport; points: CalibrationPoint[] } {
  const { configs, configInfos, environment, variantInfos, baseline } = prepared;
  const workloadNames = o.workloads.map((w) => w.info.name);
  const cells = summarizeCells(results, {
    configurations: configs,
    workloads: workloadNames,
    variants: p.variants.map((v) => v.name),
    seed: o.seed,
  });
  const points = calibrationPoints(
    cells,
    configInfos,
    o.workloads.map((w) => w.info),
    {
      clients: o.clients,
      logElsewhere: !environment.logOnDataDisk,
      variants: variantInfos,
      runs: results,
      seed: o.seed,
    },
  );
  const calibration = fitCalibration(points, { seed: o.seed });
  const report: BenchReport = {
    schemaVersion: 1,
    tool: { name: "auditpipe", version: cliVersion() },
    command: o.command,
    startedAt: run.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    complete: run.interruption === null,
    interruption: run.interruption,
    target: { kind: o.existing ? "existing" : "scratch", baseline },
    options: {
      scale: o.scale,
      ...(o.foreignKeys ? { foreignKeys: true } : {}),
      clients: o.clients,
      jobs: o.jobs,
      durationSec: o.durationSec,
      runs: o.runs,
      warmupSec: o.warmupSec,
      seed: o.seed,
      logDestination: o.existing
        ? (environment.settings.log_destination ?? "unknown")
        : [...new Set(o.mitigations.logDestination)].join(","),
      logStatementOnce: o.mitigations.logStatementOnce.every(Boolean),
      logDirElsewhere: o.logDirElsewhere,
      quick: o.quick,
      durable: o.durable,
      syslogFile: o.syslogFile,
    },
    environment,
    configurations: configInfos,
    workloads: o.workloads.map((w) => w.info),
    variants: variantInfos,
    runs: results,
    cells,
    calibration,
    notes: [...run.notes, ...reportNotes(o, p, environment, points.length > 0)],
  };
  return { report, points };
}

function progress(
  io: CommandIO,
  run: PlannedRun,
  done: number,
  total: number,
  t0: number,
  planned: number,
): void {
  const elapsed = (Date.now() - t0) / 1000;
  const eta = done > 0 ? (elapsed / done) * (total - done) : planned;
  const cell = `${run.configuration}${run.variant ? ` (${run.variant})` : ""} × ${run.workload}`;
  const what = run.warmup ? `warm-up (${cell}, discarded)` : `${cell}, round ${run.round + 1}`;
  const text = `bench: run ${done + 1}/${total} ${what}; ${aboutMinutes(eta)} left`;
  io.stderr(io.stderrIsTTY ? `\r\x1b[K${text}` : `${text}\n`);
}
