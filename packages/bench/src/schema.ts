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
  columns: z.array(z.enum(["lines", "linesElsewhere", "statements", "transactions"])).min(1),
  coefficients: z.array(num),
  covariance: z.array(z.array(num)),
  runs: z.number().int().positive(),
  loggerShare: num,
  baselineServerUsPerStatement: coefficient,
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
  linesPerTransaction: num,
  auditedStatementsPerTransaction: num,
  logElsewhere: z.boolean(),
  addedUs: interval,
  samples: z.array(num).optional(),
  addedLoggerUs: num.optional(),
  baselineServerUs: interval.optional(),
  statementsPerTransaction: num.optional(),
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
  }),
  auditTable: z.object({ rows: z.number().int(), bytes: z.number().int() }).nullable(),
  cpu: z
    .object({ serverSec: num, loggerSec: num, clientSec: num, machineBusySec: num.nullable().optional() })
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
  workloads: z.array(z.object({ name: z.string(), description: z.string(), statementsPerTransaction: num })),
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

export const calibrationSchema: z.ZodType<Calibration> = z.object({
  kind: z.literal("auditpipe-calibration"),
  version: z.literal(1),
  createdAt: z.string(),
  host: z.string(),
  environment,
  fit,
  points: z.array(point),
});
