/** zod schemas of the estimate routes' responses (they become the OpenAPI document). */
import {
  type AuditConfig,
  auditConfigSchema,
  type Catalog,
  type Estimate,
  type Recommendation,
  type WorkloadSample,
  workloadSchema,
} from "@auditpipe/estimate";
import { z } from "zod";

const rate = z.object({ entriesPerSec: z.number(), bytesPerSec: z.number() });
const rates = z.record(z.string(), rate);

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
    overhead: z.object({
      throughput: z.object({ low: z.number(), high: z.number() }).describe("Fractional throughput loss."),
      latencyMs: z.object({ low: z.number(), high: z.number() }),
      linesPerSec: z.number(),
      collectorBound: z.boolean(),
      confidence: z.enum(["low", "medium", "high"]),
      assumptions: z.array(z.string()),
    }),
    notes: z.array(z.string()),
  })
  .describe("What one configuration writes and costs; decimal units (1 GB = 1e9 bytes).");

export const estimatesResponseSchema: z.ZodType<{
  source: "body" | "sample";
  sampledAt: string | null;
  estimates: Estimate[];
  notes: string[];
  overheadBasis: string;
  calibration: { host: string; createdAt: string } | null;
}> = z.object({
  source: z.enum(["body", "sample"]),
  sampledAt: z.string().nullable(),
  estimates: z.array(estimateSchema),
  notes: z.array(z.string()),
  overheadBasis: z
    .string()
    .describe(
      'What the overhead ranges rest on: "calibrated on <host>, <date>" (the server\'s --calibration), or "uncalibrated: …" citing the public measurements used instead.',
    ),
  calibration: z
    .object({ host: z.string(), createdAt: z.string() })
    .nullable()
    .describe("The auditpipe bench run the overhead coefficients come from; null when uncalibrated."),
});

const catalogSchema: z.ZodType<Catalog> = z.object({
  tables: z.array(
    z.object({
      schema: z.string(),
      name: z.string(),
      qualified: z.string(),
      kind: z.string(),
      owner: z.string(),
      comment: z.string().nullable(),
      partitionOf: z.string().nullable(),
      rowEstimate: z.number(),
      columns: z.array(z.object({ name: z.string(), type: z.string(), comment: z.string().nullable() })),
    }),
  ),
  foreignKeys: z.array(
    z.object({
      child: z.string(),
      parent: z.string(),
      columns: z.array(z.string()),
      parentColumns: z.array(z.string()),
    }),
  ),
});

const configSchema = auditConfigSchema as unknown as z.ZodType<AuditConfig>;

export const workloadSampleSchema: z.ZodType<WorkloadSample> = z.object({
  takenAt: z.string(),
  intervalSec: z.number(),
  database: z.string(),
  workload: workloadSchema as unknown as z.ZodType<WorkloadSample["workload"]>,
  catalog: catalogSchema,
  settings: z.record(z.string(), z.string()),
  currentConfig: configSchema,
  statementStats: z
    .boolean()
    .describe("False: rates estimated from table statistics (no pg_stat_statements)."),
  warnings: z.array(z.string()),
});

export const recommendationSchema: z.ZodType<Recommendation> = z.object({
  sensitive: z.array(
    z.object({
      table: z.string(),
      columns: z.array(z.string()),
      wholeTable: z.boolean(),
      reasons: z.array(z.string()),
    }),
  ),
  unknown: z.array(z.string()).describe("Sensitive names given that the catalog does not have."),
  config: configSchema,
  sql: z.string().describe("Idempotent SQL: run it twice and nothing changes the second time."),
  before: estimateSchema,
  after: estimateSchema,
  all: estimateSchema,
  notes: z.array(z.string()),
});
