/**
 * POST /v1/estimates, POST /v1/recommendations, GET /v1/workload. The database is the server's
 * own (configured at start, sampled by the `estimator` dependency); a request never names a
 * connection. A workload in the body plans for a database that does not exist yet.
 */
import {
  type AuditConfig,
  auditConfigSchema,
  calibrationSummary,
  configByName,
  DEFAULT_CONFIGS,
  estimate,
  type OverheadCalibration,
  overheadBasis,
  recommend,
  type ServerLoad,
  type Workload,
  type WorkloadSample,
  workloadSchema,
} from "@auditpipe/estimate";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  estimatesResponseSchema,
  recommendationSchema,
  workloadSampleSchema,
} from "./_routes-estimate-schemas.ts";
import { errorSchema, strictBody } from "./_schemas.ts";
import { createError, validationError } from "./errors.ts";

/** What the estimate routes need from the server: the last sample of its database, if any. */
export interface EstimatorDeps {
  /** The most recent workload sample, or undefined before the first completes (or without a database). */
  lastSample(): WorkloadSample | undefined;
  /**
   * Overhead coefficients `auditpipe bench` measured (the server's `--calibration`); without one
   * the overhead ranges are uncalibrated, and every answer says so.
   */
  calibration?: OverheadCalibration;
}

export const AUDITPIPE_ERR_NO_SAMPLE: ReturnType<typeof createError> = createError(
  "AUDITPIPE_ERR_NO_SAMPLE",
  "No workload sample yet: the server samples its database (--db or PG* variables) at start and every interval; or send a workload in the body",
  404,
);

/** Workload bodies can list thousands of statements. */
const BODY_LIMIT = 4 * 1024 * 1024;

const estimatesBody = strictBody({
  workload: workloadSchema.optional().describe("A planned workload; the server's last sample when absent."),
  configs: z
    .array(z.union([z.string().min(1), auditConfigSchema]))
    .max(50)
    .optional()
    .describe(
      "Preset names (ddl,role · write · read · all ...), pgaudit.log values, or full configurations.",
    ),
  pricePerGb: z.number().nonnegative().optional(),
  storagePricePerGbMonth: z.number().nonnegative().optional(),
  compressionRatio: z.number().positive().optional(),
  retentionDays: z.number().int().positive().optional(),
  logOnDataDisk: z.boolean().optional(),
  cpuBusy: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe(
      "How busy the database server's cores are (0–1), where the sampler cannot see its host; over what it saw.",
    ),
  cores: z.number().positive().max(4096).optional().describe("The cores the database server may use there."),
});

const recommendationsBody = strictBody({
  sensitive: z
    .array(z.string().min(1))
    .max(1000)
    .optional()
    .describe("TABLE or TABLE.COLUMN, besides those found by name, type and comment."),
  role: z.string().min(1).max(63).optional(),
  pricePerGb: z.number().nonnegative().optional(),
});

function configsOf(items: (string | AuditConfig)[] | undefined): AuditConfig[] {
  return (items ?? [...DEFAULT_CONFIGS]).map((item, i) => {
    if (typeof item !== "string") return item;
    try {
      return configByName(item);
    } catch (error) {
      throw validationError(`body.configs.${i}`, (error as Error).message);
    }
  });
}

/** A body's cpuBusy and cores over what the sample saw (or instead of it, for a planned workload). */
function withGivenLoad(workload: Workload, cpuBusy: number | undefined, cores: number | undefined): Workload {
  if (cpuBusy === undefined && cores === undefined) return workload;
  const seen = workload.load;
  const load: ServerLoad = {
    source: "given",
    cores: cores ?? seen?.cores ?? null,
    coresSource: cores === undefined ? (seen?.coresSource ?? "unknown") : "the request's cores",
    busy: cpuBusy ?? seen?.busy ?? null,
    serverCpuUsPerTransaction: seen?.serverCpuUsPerTransaction ?? null,
    localClientCpuUsPerTransaction: seen?.localClientCpuUsPerTransaction ?? null,
    otherCores: seen?.otherCores ?? null,
    stretch: seen?.stretch ?? null,
    throttled: seen?.throttled ?? null,
    waits: seen?.waits ?? null,
    walSyncsPerTransaction: seen?.walSyncsPerTransaction ?? null,
    durable: seen?.durable ?? null,
    unidentifiedLocalClients: seen?.unidentifiedLocalClients ?? 0,
    notes: seen?.notes ?? [],
  };
  return { ...workload, load };
}

export function registerEstimateRoutes(app: FastifyInstance, deps: EstimatorDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema };

  r.get(
    "/v1/workload",
    {
      schema: {
        summary:
          "The last workload sample of the server's database: rates per statement, catalog, log settings",
        tags: ["estimate"],
        response: { 200: workloadSampleSchema, ...errors },
      },
    },
    async () => {
      const sample = deps.lastSample();
      if (!sample) throw new AUDITPIPE_ERR_NO_SAMPLE();
      return sample;
    },
  );

  r.post(
    "/v1/estimates",
    {
      bodyLimit: BODY_LIMIT,
      schema: {
        summary:
          "Predicted entries/s, bytes, GB/day, $/month and overhead per candidate pgAudit configuration",
        tags: ["estimate"],
        body: estimatesBody,
        response: { 200: estimatesResponseSchema, ...errors },
      },
    },
    async (request) => {
      const body = request.body;
      const sample = body.workload ? undefined : deps.lastSample();
      const sampled = body.workload ?? sample?.workload;
      if (!sampled) throw new AUDITPIPE_ERR_NO_SAMPLE();
      const workload = withGivenLoad(sampled, body.cpuBusy, body.cores);
      const options = {
        ...(deps.calibration ? { calibration: deps.calibration } : {}),
        ...(body.pricePerGb === undefined ? {} : { pricePerGb: body.pricePerGb }),
        ...(body.logOnDataDisk === undefined ? {} : { logOnDataDisk: body.logOnDataDisk }),
        ...(body.storagePricePerGbMonth === undefined
          ? {}
          : { storagePricePerGbMonth: body.storagePricePerGbMonth }),
        ...(body.compressionRatio === undefined ? {} : { compressionRatio: body.compressionRatio }),
        ...(body.retentionDays === undefined ? {} : { retentionDays: body.retentionDays }),
      };
      const configs = configsOf(body.configs);
      if (sample) configs.unshift(sample.currentConfig);
      return {
        source: body.workload ? ("body" as const) : ("sample" as const),
        sampledAt: sample?.takenAt ?? null,
        estimates: configs.map((c) => estimate(workload, c, options)),
        notes: workload.notes,
        overheadBasis: overheadBasis(deps.calibration),
        calibration: deps.calibration ? calibrationSummary(deps.calibration) : null,
      };
    },
  );

  r.post(
    "/v1/recommendations",
    {
      schema: {
        summary:
          "The cheapest configuration that audits the sensitive tables: GRANTs, an idempotent SQL script, before/after",
        tags: ["estimate"],
        body: recommendationsBody,
        response: { 200: recommendationSchema, ...errors },
      },
    },
    async (request) => {
      const sample = deps.lastSample();
      if (!sample) throw new AUDITPIPE_ERR_NO_SAMPLE();
      const body = request.body;
      return recommend(sample.catalog, sample.workload, sample.currentConfig, {
        ...(body.sensitive ? { sensitive: body.sensitive } : {}),
        ...(body.role ? { role: body.role } : {}),
        ...(body.pricePerGb === undefined ? {} : { pricePerGb: body.pricePerGb }),
        ...(deps.calibration ? { calibration: deps.calibration } : {}),
      });
    },
  );
}
