/**
 * The published shape of an estimate, one copy for every output: `auditpipe estimate --json`
 * and `recommend --json`, and the API's OpenAPI document (POST /v1/estimates,
 * POST /v1/recommendations). docs/cli.md and docs/api.md name every field (a test compares).
 */
import { z } from "zod";
import type { OverheadCalibration } from "./overhead.ts";
import type { Estimate, Overhead, ServerLoad } from "./types.ts";
import { serverLoadSchema } from "./workload-schema.ts";

const interval = z.object({ low: z.number(), estimate: z.number(), high: z.number() });
const rate = z.object({ entriesPerSec: z.number(), bytesPerSec: z.number() });
const rates = z.record(z.string(), rate);

export const overheadSchema: z.ZodType<Overhead> = z
  .object({
    throughput: interval.describe(
      "The answer: the fraction of its throughput this server loses at the sampled load (0.05 = 5 %), 95 % interval.",
    ),
    addedCpuUs: interval.describe("Server CPU each transaction gains, µs (backends and logging collector)."),
    cpuBound: interval.describe(
      "The throughput a CPU-bound server loses: the added CPU against a transaction's CPU.",
    ),
    latencyMs: interval.describe("Latency each transaction gains, ms."),
    latencyShare: interval
      .nullable()
      .describe(
        "That latency as a share of a transaction's current duration (clients / TPS); null when clients are unknown.",
      ),
    regime: z
      .object({
        kind: z.enum(["none", "cpu-bound", "latency-bound", "between", "unknown"]),
        reason: z.string(),
        transactionCpuUs: z.number().describe("The transaction's CPU µs the CPU-bound figure is against."),
        transactionCpuSource: z.enum(["measured", "given", "floor"]),
      })
      .describe("What limits this server's transactions at the sampled load, and so which loss applies."),
    linesPerSec: z.number(),
    collectorBound: z.boolean(),
    confidence: z.enum(["low", "medium", "high"]),
    assumptions: z.array(z.string()),
  })
  .describe("What the configuration costs the server: per regime, and for this server at the sampled load.");

export const estimateSchema: z.ZodType<Estimate> = z
  .object({
    config: z.string(),
    entriesPerSec: z.number(),
    bytesPerSec: z
      .number()
      .describe("Audit entry bytes per second as written (the `analyze` report's bytes)."),
    bytesPerEntry: z.number(),
    entriesPerTransaction: z.number(),
    bytesPerTransaction: z.number(),
    otherBytesPerSec: z.number().describe("log_statement / log_duration lines, not audit entries."),
    mbPerHour: z.number(),
    gbPerDay: z.number(),
    dollarsPerMonth: z.number().describe("Ingestion by a log service: raw log bytes x pricePerGb, 30 days."),
    pricePerGb: z.number(),
    archive: z
      .object({
        compressionRatio: z.number(),
        compressionRatioSource: z.string(),
        gbPerDay: z.number().describe("Compressed GB written to the archive per day."),
        retentionDays: z.number(),
        storedGb: z.number().describe("GB held at steady state: gbPerDay x retentionDays."),
        pricePerGbMonth: z.number(),
        dollarsPerMonth: z.number().describe("Storage bill per month at steady state."),
      })
      .describe(
        "The S3 archive: audit entries as compressed NDJSON (zstd, the sidecar's default), accumulating over the retention period.",
      ),
    byClass: rates,
    byAuditType: rates,
    byObject: rates,
    overhead: overheadSchema,
    notes: z.array(z.string()),
  })
  .describe("What one configuration writes and costs; decimal units (1 GB = 1e9 bytes).");

/** Where a calibration comes from and how well it fits: said wherever it is used. */
export interface CalibrationSummary {
  host: string;
  createdAt: string;
  r2: number | null;
  residualStdErrUs: number | null;
  /** Configurations fitted. */
  points: number | null;
  /** Runs per configuration (CPU basis); null for a TPS-basis file. */
  runs: number | null;
  basis: "cpu" | "tps";
}

export const calibrationSummarySchema: z.ZodType<CalibrationSummary> = z
  .object({
    host: z.string(),
    createdAt: z.string(),
    r2: z.number().nullable().describe("The fit's R² over the configurations' medians."),
    residualStdErrUs: z.number().nullable().describe("Residual standard error, µs per transaction."),
    points: z.number().int().nullable().describe("Configurations the costs were fitted to."),
    runs: z.number().int().nullable().describe("Runs per configuration."),
    basis: z.enum(["cpu", "tps"]).describe("cpu: server CPU time of paired runs; tps: wall time from TPS."),
  })
  .describe("The auditpipe bench run the overhead coefficients come from, and the fit's quality.");

export function calibrationSummary(c: OverheadCalibration): CalibrationSummary {
  return {
    host: c.host,
    createdAt: c.createdAt,
    r2: c.r2 ?? null,
    residualStdErrUs: c.residualStdErrUs,
    points: c.points ?? null,
    runs: c.cpu?.runs ?? null,
    basis: c.cpu ? "cpu" : "tps",
  };
}

/** `auditpipe estimate --json`, one object. */
export interface EstimateReport {
  sample?: { takenAt: string; intervalSec: number; warnings: string[] };
  transactionsPerSec?: number;
  nestedStatements?: { mode: "counted" | "modelled"; reason: string; mayMiss?: string };
  notes?: string[];
  load?: ServerLoad | null;
  calibration?: CalibrationSummary | null;
  estimates: Estimate[];
  observed?: Record<string, unknown>;
  fromLog?: Record<string, unknown>[];
}

/**
 * `auditpipe estimate --json`: the sample (with a database), the workload's rate and how its
 * nested statements got in, the server's load, the calibration, one estimate per configuration,
 * and what observed logs (`--log`) hold.
 */
export const estimateReportSchema: z.ZodType<EstimateReport> = z.object({
  sample: z
    .object({ takenAt: z.string(), intervalSec: z.number(), warnings: z.array(z.string()) })
    .optional()
    .describe("When the database was sampled, for how long, and what could not be read."),
  transactionsPerSec: z.number().optional(),
  nestedStatements: z
    .object({
      mode: z.enum(["counted", "modelled"]),
      reason: z.string(),
      mayMiss: z.string().optional(),
    })
    .optional(),
  notes: z.array(z.string()).optional(),
  load: serverLoadSchema
    .nullable()
    .optional()
    .describe("How busy the server was during the sample; null for a workload file."),
  calibration: calibrationSummarySchema.nullable().optional().describe("null when uncalibrated."),
  estimates: z.array(estimateSchema),
  observed: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("With --log: what the logs hold (see docs/estimator.md)."),
  fromLog: z.array(z.record(z.string(), z.unknown())).optional(),
});
