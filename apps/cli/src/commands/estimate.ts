import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import {
  type AuditConfig,
  calibrationSummary,
  configByName,
  costInputs,
  DEFAULT_COMPRESSION_RATIO,
  DEFAULT_CONFIGS,
  DEFAULT_PRICE_PER_GB,
  DEFAULT_RETENTION_DAYS,
  DEFAULT_STORAGE_PRICE_PER_GB_MONTH,
  estimate,
  type GivenLoad,
  MODELLED_MISSES,
  parseWorkload,
  type ServerLoad,
  sampleWorkload,
  type Workload,
  type WorkloadSample,
} from "@auditpipe/estimate";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { COST_FLAGS, costOptions } from "../estimate/cost-flags.ts";
import { estimateFromLogs, renderFromLogs } from "../estimate/from-logs.ts";
import { renderEstimates, renderOverheadSection, workloadLine } from "../estimate/render.ts";
import { decimal, flagValue } from "../flags.ts";
import { UsageError } from "../usage-error.ts";
import { resolveFiles } from "./analyze.ts";

export { priceOf } from "../estimate/cost-flags.ts";
export { renderEstimates };

export const ESTIMATE_HELP: string = `Usage: auditpipe estimate [--db URL | --workload FILE | --log FILE...] [--audit NAME...] [--json]

Predicts what each candidate pgAudit configuration would write and cost on a workload:
entries/s, bytes per entry, MB/hour, GB/day, $/month and the overhead range.

Workload, one of:
  (none)            sample the database libpq's PG* variables point at (PGHOST, PGPORT,
                    PGUSER, PGDATABASE; password in ~/.pgpass or PGSERVICEFILE): preferred
  --db URL          sample this database (postgresql://user@host:port/db). A password in the
                    URL shows in your shell history and process list: prefer PG* variables
  --workload FILE   a planned workload (JSON, see docs/estimator.md)
  --workload-out FILE  also write the sampled workload there, as a --workload file: estimate it
                    again later, with another calibration or configurations, without sampling
                    (it holds pg_stat_statements' normalized query texts)
  --log FILE        observed audit logs (plain or .gz; globs as for analyze; repeatable): what
                    they hold and cost, and with --audit what each configuration would have
                    written of those entries (the rest of the settings as the log was written)

  --audit NAME      a preset (ddl,role · write · read · read,write · all · all,-misc ·
                    all+relation · all+parameter) or a pgaudit.log value; repeatable;
                    default: the server's current configuration, ddl,role, write, read, all
  --interval S      seconds between the two reads of the statistics (default 60)
  --track-nested    count the statements the server runs inside others (foreign-key
                    checks and cascades, function, procedure and trigger bodies): switches
                    pg_stat_statements.track to 'all' for the sample with ALTER SYSTEM +
                    reload and puts it back after, also on error or Ctrl-C (superuser only).
                    Without it a server already tracking 'all' is counted; otherwise the
                    estimate is modelled and says what it may miss

Cost, two lines billed on different bytes:
  --price-per-gb N       $ per GB of raw log ingested by a log service (default ${DEFAULT_PRICE_PER_GB})
  --storage-price N      $ per GB-month in the S3 archive (default ${DEFAULT_STORAGE_PRICE_PER_GB_MONTH}, S3 Standard)
  --compression-ratio N  raw bytes per archived byte (zstd NDJSON); default measured on the
                         --log files, else on the repository's fixtures per log format
                         (csvlog ${DEFAULT_COMPRESSION_RATIO.csvlog}, jsonlog ${DEFAULT_COMPRESSION_RATIO.jsonlog}, stderr ${DEFAULT_COMPRESSION_RATIO.stderr}, syslog ${DEFAULT_COMPRESSION_RATIO.syslog})
  --retention-days N     days the archive keeps each object (Object Lock; default ${DEFAULT_RETENTION_DAYS}):
                         storage accumulates to GB/day x N

Overhead, per configuration: the server CPU each transaction gains, what a CPU-bound server
would lose, the latency each transaction gains, and what this server loses at the load it was
sampled under (from how busy its cores were and what its transactions waited on):
  --calibration FILE  overhead coefficients measured by auditpipe bench --calibration-out
                    (or AUDITPIPE_CALIBRATION=FILE), checked before sampling; without one the
                    costs come from public measurements and the figures are wide
  --cpu-busy PCT    how busy the database server's cores are (0-100), where auditpipe cannot
                    see its host (another machine, a pod without a shared process namespace)
  --cores N         the cores the server may use there (its CPU limit)
  --separate-log-disk  the log directory is not on the data disk (lowers the uncalibrated bound)
  --json            one JSON object on stdout
  -h, --help        this text
`;

export function progressPrinter(io: CommandIO, what: string): (elapsed: number, total: number) => void {
  let last = -1;
  return (elapsed, total) => {
    const s = Math.floor(elapsed / 1000);
    if (s === last) return;
    last = s;
    if (io.stderrIsTTY) io.stderr(`\r${what}: sampling ${s}/${Math.round(total / 1000)} s `);
    else if (elapsed === 0) io.stderr(`${what}: sampling for ${Math.round(total / 1000)} s\n`);
    if (io.stderrIsTTY && elapsed >= total) io.stderr("\n");
  };
}

/** Whether the estimate counted the server's nested statements or modelled them, and why. */
export function nestedSummary(
  workload: Workload,
  sample: WorkloadSample | undefined,
): { mode: "counted" | "modelled"; reason: string; mayMiss?: string } {
  const tracking = sample?.nested ?? {
    mode: workload.nestedStatements ?? "modelled",
    reason: "a workload file",
  };
  return tracking.mode === "counted"
    ? { mode: "counted", reason: tracking.reason }
    : { mode: "modelled", reason: tracking.reason, mayMiss: MODELLED_MISSES };
}

/** The counted-or-modelled sentence printed above a table. */
export function nestedLine(nested: ReturnType<typeof nestedSummary>): string {
  return nested.mode === "counted"
    ? `Counted: statements run inside others (foreign-key checks, function and trigger bodies) come from pg_stat_statements; ${nested.reason}.`
    : `Modelled: statements run inside others are derived from the catalog (${nested.reason}); may miss ${nested.mayMiss}.`;
}

/** --cpu-busy PCT and --cores N, checked: what to take as the server's load where it cannot be seen. */
export function givenLoad(values: Record<string, unknown>, command: string): GivenLoad {
  const out: GivenLoad = {};
  if (values["cpu-busy"] !== undefined) {
    const pct = Number(values["cpu-busy"]);
    if (!Number.isFinite(pct) || pct < 0 || pct > 100)
      throw new UsageError(
        `${command}: --cpu-busy must be a percentage from 0 to 100 (got ${JSON.stringify(values["cpu-busy"])})`,
      );
    out.cpuBusy = pct / 100;
  }
  if (values.cores !== undefined) {
    const n = Number(values.cores);
    if (!Number.isFinite(n) || n <= 0 || n > 4096)
      throw new UsageError(
        `${command}: --cores must be a number of cores above 0 (fractions allowed: a CPU limit of 1.5) (got ${JSON.stringify(values.cores)})`,
      );
    out.cores = n;
  }
  return out;
}

/** A workload file's load from --cpu-busy and --cores alone. */
function givenWorkloadLoad(given: GivenLoad): ServerLoad {
  return {
    source: "given",
    cores: given.cores ?? null,
    coresSource: given.cores === undefined ? "unknown" : "--cores",
    busy: given.cpuBusy ?? null,
    serverCpuUsPerTransaction: null,
    localClientCpuUsPerTransaction: null,
    otherCores: null,
    stretch: null,
    throttled: null,
    waits: null,
    walSyncsPerTransaction: null,
    durable: null,
    unidentifiedLocalClients: 0,
    notes: [],
  };
}

/** Seconds from --interval, checked. */
export function intervalMs(value: string | boolean | string[] | undefined, command: string): number {
  if (value === undefined) return 60_000;
  const s = flagValue(command, "interval", value, decimal({ min: 1, max: 3600, unit: "seconds" }), {
    default: "60",
  });
  return s * 1000;
}

type Flags = ReturnType<typeof parseFlags>["values"];

/** What the flags ask for, checked before anything is sampled or read. */
interface EstimatePlan {
  logs: string[];
  cost: ReturnType<typeof costOptions>;
  given: GivenLoad;
  calibration: Awaited<ReturnType<typeof import("../calibration.ts").loadCalibration>>;
  configs: AuditConfig[];
}

/** What was estimated: from a workload (sampled or a file), from logs, or both. */
interface EstimateResult {
  workload: Workload | undefined;
  sample: WorkloadSample | undefined;
  estimates: ReturnType<typeof estimate>[];
  fromLogs: Awaited<ReturnType<typeof estimateFromLogs>> | undefined;
}

export async function estimateCommand(argv: string[], io: CommandIO): Promise<number> {
  const flags = parseEstimateFlags(argv);
  if (flags.help) {
    io.stdout(ESTIMATE_HELP);
    return 0;
  }
  const plan = await planEstimate(flags);
  const result = await runEstimate(plan, flags, io);
  reportEstimate(result, plan, flags.json === true, io);
  return 0;
}

/** The flags, and no positional argument. */
function parseEstimateFlags(argv: string[]): Flags {
  const { values, positionals } = parseFlags("estimate", argv, {
    db: { type: "string" },
    workload: { type: "string" },
    "workload-out": { type: "string" },
    log: { type: "string", multiple: true },
    audit: { type: "string", multiple: true },
    interval: { type: "string" },
    "track-nested": { type: "boolean", default: false },
    ...COST_FLAGS,
    "separate-log-disk": { type: "boolean", default: false },
    calibration: { type: "string" },
    "cpu-busy": { type: "string" },
    cores: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) return values;
  if (positionals.length > 0)
    throw new UsageError(
      `estimate: unexpected argument ${JSON.stringify(positionals[0])} (see auditpipe estimate --help)`,
    );
  return values;
}

/** Every flag checked, in this order; the calibration file too, before a minute of sampling. */
async function planEstimate(values: Flags): Promise<EstimatePlan> {
  const logs = await resolveFiles((values.log as string[] | undefined) ?? [], "estimate --log");
  if (values.db !== undefined && values.workload !== undefined)
    throw new UsageError("estimate: give --db or --workload, not both");
  if (
    values["workload-out"] !== undefined &&
    (values.workload !== undefined || (values.db === undefined && logs.length > 0))
  )
    throw new UsageError(
      "estimate: --workload-out writes a sampled workload: give it with --db (or PG* variables), not --workload or --log alone",
    );
  // Checked before sampling, like the calibration: a missing directory found after the minute wastes it.
  if (values["workload-out"] !== undefined && !existsSync(dirname(String(values["workload-out"]))))
    throw new UsageError(
      `estimate: --workload-out ${String(values["workload-out"])}: its directory does not exist`,
    );
  const cost = costOptions(values, "estimate");
  const given = givenLoad(values, "estimate");
  // Checked before sampling: a bad file found after a minute of sampling wastes the minute.
  const { loadCalibration } = await import("../calibration.ts");
  const calibration = await loadCalibration(values.calibration, "estimate");
  const configs: AuditConfig[] = ((values.audit as string[] | undefined) ?? [...DEFAULT_CONFIGS]).map(
    (name) => {
      try {
        return configByName(name);
      } catch (error) {
        throw new UsageError(`estimate: --audit ${(error as Error).message}`);
      }
    },
  );
  return { logs, cost, given, calibration, configs };
}

/** The workload (a file, or a sample of the database when no --log replaces it) estimated, and the logs read. */
async function runEstimate(plan: EstimatePlan, values: Flags, io: CommandIO): Promise<EstimateResult> {
  const { logs, cost, given, calibration, configs } = plan;
  let workload: Workload | undefined;
  let sample: WorkloadSample | undefined;
  if (values.workload !== undefined) workload = readWorkloadFile(String(values.workload));
  else if (values.db !== undefined || logs.length === 0) {
    sample = await sampleUntilSignal(values, given, io);
    workload = sample.workload;
    if (values["workload-out"] !== undefined) writeWorkloadFile(String(values["workload-out"]), workload);
    configs.unshift(sample.currentConfig);
    for (const w of sample.warnings) io.stderr(`estimate: ${w}\n`);
  }

  if (workload && !sample && (given.cpuBusy !== undefined || given.cores !== undefined))
    workload = { ...workload, load: givenWorkloadLoad(given) };
  const options = {
    ...cost,
    logOnDataDisk: !values["separate-log-disk"],
    ...(calibration ? { calibration } : {}),
  };
  const estimates = workload ? configs.map((c) => estimate(workload, c, options)) : [];
  // From logs, --audit names what to derive; with a workload the logs are only observed.
  const fromLogs =
    logs.length > 0
      ? await estimateFromLogs(logs, workload || values.audit === undefined ? [] : configs, cost)
      : undefined;
  return { workload, sample, estimates, fromLogs };
}

/** --workload-out FILE: the sample as a file --workload reads back (checked against its schema first). */
function writeWorkloadFile(file: string, workload: Workload): void {
  const text = `${JSON.stringify(parseWorkload(JSON.parse(JSON.stringify(workload))), null, 2)}\n`;
  try {
    writeFileSync(file, text);
  } catch (error) {
    throw new UsageError(`estimate: --workload-out ${file}: ${(error as Error).message}`);
  }
}

/** --workload FILE, read and checked. */
function readWorkloadFile(file: string): Workload {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`estimate: --workload ${file}: ${(error as Error).message}`);
  }
  try {
    return parseWorkload(raw);
  } catch (error) {
    throw new UsageError(`estimate: --workload ${file}: ${(error as Error).message}`);
  }
}

/** Samples the database; Ctrl-C ends the wait, and the sampler puts pg_stat_statements.track back first. */
async function sampleUntilSignal(values: Flags, given: GivenLoad, io: CommandIO): Promise<WorkloadSample> {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await sampleWorkload({
      ...(values.db === undefined ? {} : { connection: String(values.db) }),
      intervalMs: intervalMs(values.interval, "estimate"),
      onProgress: progressPrinter(io, "estimate"),
      trackNested: values["track-nested"] === true,
      signal: controller.signal,
      load: given,
    });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The estimates as one JSON object, or as the workload's line, the tables and the logs' section. */
function reportEstimate(result: EstimateResult, plan: EstimatePlan, json: boolean, io: CommandIO): void {
  const { workload, sample, estimates, fromLogs } = result;
  if (json) {
    io.stdout(
      `${JSON.stringify(
        {
          ...(sample
            ? {
                sample: {
                  takenAt: sample.takenAt,
                  intervalSec: sample.intervalSec,
                  warnings: sample.warnings,
                },
              }
            : {}),
          ...(workload
            ? {
                transactionsPerSec: workload.transactionsPerSec,
                nestedStatements: nestedSummary(workload, sample),
                notes: workload.notes,
                load: workload.load ?? null,
                calibration: plan.calibration ? calibrationSummary(plan.calibration) : null,
              }
            : {}),
          estimates,
          ...(fromLogs
            ? {
                observed: { ...fromLogs.observed, seconds: fromLogs.seconds },
                ...(fromLogs.configs.length > 0 ? { fromLog: fromLogs.configs } : {}),
              }
            : {}),
        },
        null,
        2,
      )}\n`,
    );
    return;
  }
  if (workload) {
    io.stdout(`${workloadLine(workload)}\n`);
    io.stdout(`${nestedLine(nestedSummary(workload, sample))}\n\n`);
    io.stdout(`${renderEstimates(estimates)}\n\n`);
    if (estimates[0]) io.stdout(`${costInputs(estimates[0].pricePerGb, estimates[0].archive)}\n\n`);
    io.stdout(`${renderOverheadSection(estimates, workload.load)}\n`);
  }
  if (fromLogs) io.stdout(`${workload ? "\n" : ""}${renderFromLogs(fromLogs, plan.cost)}`);
}
