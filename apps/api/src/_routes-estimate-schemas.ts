/** zod schemas of the estimate routes' responses (they become the OpenAPI document). */
import {
  type AuditConfig,
  auditConfigSchema,
  type CalibrationSummary,
  type Catalog,
  calibrationSummarySchema,
  type Estimate,
  estimateSchema,
  type Recommendation,
  type WorkloadSample,
  workloadSchema,
} from "@auditpipe/estimate";
import { z } from "zod";

export const estimatesResponseSchema: z.ZodType<{
  source: "body" | "sample";
  sampledAt: string | null;
  estimates: Estimate[];
  notes: string[];
  overheadBasis: string;
  calibration: CalibrationSummary | null;
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
  calibration: calibrationSummarySchema.nullable(),
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
