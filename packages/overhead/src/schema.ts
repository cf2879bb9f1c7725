/**
 * zod schemas of the bench report and the calibration file: the report's readers (the HTML
 * report, CI scripts) and `--calibration FILE` validate against them.
 */
import { z } from "zod";
import { LOG_DESTINATIONS, LOG_PLACEMENTS } from "./mitigations.ts";
import type { BenchReport, Calibration } from "./types.ts";

const num = z.number();
const counters = z.record(z.string(), num);
const filesystem = z.object({
  path: z.string(),
  type: z.string().nullable(),
  device: z.string().nullable(),
  mountPoint: z.string().nullable(),
});

const environment = z.object({
  host: z.string(),
  os: z.string(),
  kernel: z.string(),
  arch: z.string(),
  cpus: z.object({ count: z.number().int().nonnegative(), model: z.string() }),
  memoryBytes: num,
  node: z.string(),
  postgres: z.object({ version: z.string(), versionNum: z.number().int() }),
  pgaudit: z.string().nullable(),
  pgbench: z.string(),
  settings: z.record(z.string(), z.string()),
  dataDirectory: filesystem,
  logDirectory: filesystem,
  logOnDataDisk: z.boolean(),
  loadAverage: num,
});

const interval = z.object({ median: num, low: num, high: num });
const coefficient = z.object({ estimate: num, low: num, high: num });

const cpuCalibration = z.object({
  columns: z
    .array(
      z.enum([
        "lines",
        "linesElsewhere",
        "statements",
        "transactions",
        "wakeups",
        "miscLines",
        "nestedLines",
      ]),
    )
    .min(1),
  coefficients: z.array(num),
  covariance: z.array(z.array(num)),
  runs: z.number().int().positive(),
  loggerShare: num,
  baselineServerUsPerStatement: coefficient,
  referenceUsPerStatement: num.positive().optional(),
  relative: z.object({ coefficients: z.array(num), covariance: z.array(z.array(num)) }).optional(),
  collector: z
    .object({
      wakeupUs: coefficient,
      lineUs: coefficient,
      awakeUs: num,
      covariance: z.tuple([z.tuple([num, num]), z.tuple([num, num])]),
      residualStdErrUs: num,
      degreesOfFreedom: z.number().int(),
      linesPerSec: z.object({ low: num, high: num }),
    })
    .optional(),
});

const fit = z.object({
  lineCostUs: coefficient,
  lineCostElsewhereUs: coefficient.nullable(),
  statementCostUs: coefficient.nullable(),
  transactionCostUs: coefficient.nullable().optional(),
  r2: num,
  residualStdErrUs: num.nullable(),
  points: z.number().int(),
  degreesOfFreedom: z.number().int(),
  basis: z.enum(["cpu", "tps"]).optional(),
  cpu: cpuCalibration
    .refine(
      (c) =>
        c.coefficients.length === c.columns.length &&
        c.covariance.length === c.columns.length &&
        c.covariance.every((row) => row.length === c.columns.length),
      { message: "coefficients and covariance must match columns" },
    )
    .nullable()
    .optional(),
});

const point = z.object({
  configuration: z.string(),
  workload: z.string(),
  clients: z.number().int().positive(),
  rate: z.number().positive().optional(),
  linesPerTransaction: num,
  linesByKind: z.object({ misc: num, nested: num }).optional(),
  auditedStatementsPerTransaction: num,
  logElsewhere: z.boolean(),
  addedUs: interval,
  samples: z.array(num).optional(),
  addedLoggerUs: num.optional(),
  baselineServerUs: interval.optional(),
  statementsPerTransaction: num.optional(),
  baselineSamples: z.array(num).optional(),
  loggerSamples: z.array(num).optional(),
  linesPerSecSamples: z.array(num).optional(),
  wakeupSamples: z.array(num).optional(),
});

const run = z.object({
  index: z.number().int(),
  round: z.number().int(),
  configuration: z.string(),
  workload: z.string(),
  variant: z.string().optional(),
  startedAt: z.string(),
  durationSec: num,
  tps: num,
  transactions: z.number().int(),
  failedTransactions: z.number().int(),
  latencyMs: z.object({ mean: num, p50: num, p95: num, p99: num, max: num }),
  log: z.object({
    records: z.number().int(),
    auditEntries: z.number().int(),
    bytes: z.number().int(),
    malformed: z.number().int(),
    auditKinds: z.object({ misc: z.number().int(), nested: z.number().int() }).optional(),
  }),
  auditTable: z.object({ rows: z.number().int(), bytes: z.number().int() }).nullable(),
  cpu: z
    .object({
      serverSec: num,
      loggerSec: num,
      loggerWakeups: num.optional(),
      clientSec: num,
      machineBusySec: num.nullable().optional(),
    })
    .nullable()
    .optional(),
  walBytes: num,
  statWal: counters,
  statIo: counters,
  statBgwriter: counters,
});

const overhead = interval
  .extend({ significant: z.boolean(), runsToResolve: z.number().int().nullable() })
  .nullable();

const cell = z.object({
  configuration: z.string(),
  workload: z.string(),
  variant: z.string().default(""),
  runs: z.number().int(),
  tps: interval,
  overhead,
  overheadBasis: z.enum(["cpu", "tps"]).optional(),
  tpsOverhead: overhead.optional(),
  cpuUsPerTransaction: z.object({ server: num, logger: num, client: num }).nullable().optional(),
  latencyMs: z.object({ p50: num, p95: num, p99: num }),
  logRecordsPerSec: num,
  auditEntriesPerSec: num,
  logBytesPerSec: num,
  mbPerHour: num,
  gbPerDay: num,
  walMbPerRun: num,
  walBytesPerTransaction: num,
  logRecordsPerTransaction: num,
  auditEntriesByKindPerTransaction: z.object({ statement: num, misc: num, nested: num }).optional(),
  auditTableRowsPerTransaction: num,
});

export const benchReportSchema: z.ZodType<BenchReport> = z.object({
  schemaVersion: z.literal(1),
  tool: z.object({ name: z.literal("auditpipe"), version: z.string() }),
  command: z.string(),
  startedAt: z.string(),
  finishedAt: z.string(),
  complete: z.boolean(),
  interruption: z.string().nullable(),
  target: z.object({
    kind: z.enum(["scratch", "existing"]),
    baseline: z.enum(["pgaudit-not-loaded", "pgaudit-loaded-nothing-logged"]),
  }),
  options: z.object({
    scale: z.number().int().positive(),
    foreignKeys: z.boolean().optional(),
    clients: z.number().int().positive(),
    jobs: z.number().int().positive(),
    durationSec: num,
    runs: z.number().int().positive(),
    warmupSec: num,
    seed: z.number().int(),
    logDestination: z.string(),
    logStatementOnce: z.boolean(),
    logDirElsewhere: z.string().nullable(),
    quick: z.boolean(),
    durable: z.boolean().default(false),
    syslogFile: z.string().nullable().default(null),
  }),
  environment,
  configurations: z.array(
    z.object({
      name: z.string(),
      kind: z.string(),
      description: z.string(),
      preloadPgaudit: z.boolean(),
      settings: z.record(z.string(), z.string()),
      tables: z.array(z.string()),
    }),
  ),
  workloads: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      statementsPerTransaction: num,
      clients: z.number().int().positive().optional(),
      rate: z.number().positive().optional(),
    }),
  ),
  variants: z
    .array(
      z.object({
        name: z.string(),
        logDestination: z.enum(LOG_DESTINATIONS),
        logStatementOnce: z.boolean(),
        logDir: z.enum(LOG_PLACEMENTS),
        logDirectory: filesystem,
        logOnDataDisk: z.boolean(),
      }),
    )
    .default([]),
  runs: z.array(run),
  cells: z.array(cell),
  calibration: fit.nullable(),
  notes: z.array(z.string()),
});

/**
 * The calibration file versions this code reads: 5 prices pgAudit's MISC (and nested) lines apart
 * from the statements' (`miscLines`, `nestedLines`) and leaves the fixed-rate cell to the
 * collector's fit; 4 adds the backends' cost per collector wake-up
 * (the `wakeups` column, fitted where a low fixed-rate cell measured it); 3 fits the logging
 * collector apart (per wake-up, per line); 2 is the constrained fit at a reference state; 1 came
 * before. 1 and 2 are read as they were (one cost per line, the collector's share `loggerShare`)
 * if their values are physical; 3 as it was (no `wakeups` column).
 */
export const CALIBRATION_VERSIONS: readonly number[] = [1, 2, 3, 4, 5];

export const calibrationSchema: z.ZodType<Calibration> = z.object({
  kind: z.literal("auditpipe-calibration"),
  version: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5)]),
  createdAt: z.string(),
  host: z.string(),
  environment,
  fit,
  points: z.array(point),
});

/**
 * What makes a calibration file that matches the schema still unusable: a cost that is negative
 * or not a number, an interval that does not hold its estimate, a share outside 0–1. The first
 * problem found, with the field's path; null when the values are physical.
 */
export function calibrationProblem(c: Calibration): { path: string; message: string } | null {
  const f = c.fit;
  const costs: Array<[string, { estimate: number; low: number; high: number } | null | undefined]> = [
    ["fit.lineCostUs", f.lineCostUs],
    ["fit.lineCostElsewhereUs", f.lineCostElsewhereUs],
    ["fit.statementCostUs", f.statementCostUs],
    ["fit.transactionCostUs", f.transactionCostUs],
  ];
  for (const [path, cost] of costs) {
    if (!cost) continue;
    for (const k of ["estimate", "low", "high"] as const)
      if (!Number.isFinite(cost[k])) return { path: `${path}.${k}`, message: "is not a finite number" };
    if (cost.estimate < 0)
      return {
        path: `${path}.estimate`,
        message: `is ${cost.estimate.toFixed(2)} µs: a cost cannot be negative (a file from before the constrained fit; run auditpipe bench --calibration-out again)`,
      };
    if (cost.low > cost.estimate || cost.high < cost.estimate)
      return {
        path,
        message: `its interval [${cost.low}, ${cost.high}] does not hold its estimate ${cost.estimate}`,
      };
  }
  if (!(f.r2 <= 1)) return { path: "fit.r2", message: `is ${f.r2}: R² is at most 1` };
  if (f.residualStdErrUs !== null && !(f.residualStdErrUs >= 0))
    return { path: "fit.residualStdErrUs", message: "must be 0 or more" };
  if (!(f.degreesOfFreedom >= 0)) return { path: "fit.degreesOfFreedom", message: "must be 0 or more" };
  const cpu = f.cpu;
  if (cpu) {
    const i = cpu.coefficients.findIndex((v) => !Number.isFinite(v) || v < 0);
    if (i >= 0)
      return {
        path: `fit.cpu.coefficients.${i}`,
        message: `is ${cpu.coefficients[i]}: the ${cpu.columns[i]} cost cannot be negative (run auditpipe bench --calibration-out again)`,
      };
    const d = cpu.covariance.findIndex((row, j) => !(row[j]! >= 0));
    if (d >= 0) return { path: `fit.cpu.covariance.${d}.${d}`, message: "a variance must be 0 or more" };
    if (!(cpu.loggerShare >= 0 && cpu.loggerShare <= 1))
      return { path: "fit.cpu.loggerShare", message: `is ${cpu.loggerShare}: a share is from 0 to 1` };
    if (!(cpu.baselineServerUsPerStatement.estimate > 0))
      return { path: "fit.cpu.baselineServerUsPerStatement.estimate", message: "must be above 0 µs" };
    const problem = cpu.collector && collectorProblem(cpu.collector);
    if (problem) return problem;
  }
  if (c.version >= 3 && cpu && !cpu.collector && c.points.some((p) => p.loggerSamples))
    return {
      path: "fit.cpu.collector",
      message: "is missing: a version-3 calibration whose runs measured the collector fits its costs apart",
    };
  return null;
}

/** A collector fit's unphysical value (calibrationProblem), with its path; null when physical. */
function collectorProblem(k: NonNullable<Calibration["fit"]["cpu"]>["collector"] & object): {
  path: string;
  message: string;
} | null {
  for (const name of ["wakeupUs", "lineUs"] as const) {
    const cost = k[name];
    const path = `fit.cpu.collector.${name}`;
    if (!(cost.estimate >= 0 && Number.isFinite(cost.estimate)))
      return { path: `${path}.estimate`, message: `is ${cost.estimate}: a cost cannot be negative` };
    if (cost.low > cost.estimate || cost.high < cost.estimate || cost.low < 0)
      return {
        path,
        message: `its interval [${cost.low}, ${cost.high}] does not hold its estimate ${cost.estimate} or goes below 0`,
      };
  }
  if (!(k.awakeUs >= 0 && Number.isFinite(k.awakeUs)))
    return { path: "fit.cpu.collector.awakeUs", message: `is ${k.awakeUs}: a time cannot be negative` };
  if (!(k.covariance[0][0] >= 0 && k.covariance[1][1] >= 0))
    return { path: "fit.cpu.collector.covariance", message: "a variance must be 0 or more" };
  if (!(k.residualStdErrUs >= 0))
    return { path: "fit.cpu.collector.residualStdErrUs", message: "must be 0 or more" };
  if (!(k.linesPerSec.low > 0 && k.linesPerSec.high >= k.linesPerSec.low))
    return { path: "fit.cpu.collector.linesPerSec", message: "must be a range of line rates above 0" };
  return null;
}
