/**
 * What the estimate routes (routes-estimate.ts) load on their first request: the zod schemas of
 * their bodies and responses (with the estimate package's, ~30 ms of a sidecar's start-up CPU to
 * build) and the answers. The routes validate a body and encode an answer with these schemas the
 * way fastify-type-provider-zod's compilers would, so errors and answers are the same.
 */
import {
  type AuditConfig,
  auditConfigSchema,
  calibrationSummary,
  configByName,
  DEFAULT_CONFIGS,
  estimate,
  overheadBasis,
  recommend,
  type ServerLoad,
  type Workload,
  workloadSchema,
} from "@auditpipe/estimate";
import type { FastifyReply } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { z } from "zod";
import type { estimatesResponseSchema, recommendationSchema } from "./_routes-estimate-schemas.ts";
import { strictBody } from "./_schemas.ts";
import { validationError } from "./errors.ts";
import { AUDITPIPE_ERR_NO_SAMPLE, type EstimatorDeps } from "./routes-estimate.ts";

export {
  estimatesResponseSchema,
  recommendationSchema,
  workloadSampleSchema,
} from "./_routes-estimate-schemas.ts";

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

/** The body schemas: the routes validate with them, the OpenAPI document describes them. */
export const bodies: {
  estimates: z.ZodType;
  recommendations: z.ZodType;
} = {
  estimates: estimatesBody,
  recommendations: recommendationsBody,
};

/**
 * A request body checked as a route's `schema.body` would be: the value zod parsed, or the error
 * Fastify makes of a failed validation (the error handler names the field from it).
 */
function validBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = validatorCompiler({ schema } as never)(body) as { value?: unknown; error?: unknown };
  if (result.error !== undefined)
    throw Object.assign(new Error("body failed validation"), {
      validation: result.error,
      validationContext: "body",
      statusCode: 400,
    });
  return result.value as z.output<T>;
}

/** An answer encoded as a route's `schema.response[200]` would be, sent as JSON. */
export function sendEncoded(
  reply: FastifyReply,
  schema: z.ZodType,
  data: unknown,
  method: string,
  url: string,
): FastifyReply {
  const serialize = serializerCompiler({ schema, method, url } as never) as (data: unknown) => string;
  return reply.type("application/json; charset=utf-8").send(serialize(data));
}

/** POST /v1/estimates: the body validated, then the estimates. */
export function answerEstimates(
  deps: EstimatorDeps,
  requestBody: unknown,
): z.input<typeof estimatesResponseSchema> {
  const body = validBody(estimatesBody, requestBody);
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
}

/** POST /v1/recommendations: the body validated, then the recommendation. */
export function answerRecommendations(
  deps: EstimatorDeps,
  requestBody: unknown,
): z.input<typeof recommendationSchema> {
  const body = validBody(recommendationsBody, requestBody);
  const sample = deps.lastSample();
  if (!sample) throw new AUDITPIPE_ERR_NO_SAMPLE();
  return recommend(sample.catalog, sample.workload, sample.currentConfig, {
    ...(body.sensitive ? { sensitive: body.sensitive } : {}),
    ...(body.role ? { role: body.role } : {}),
    ...(body.pricePerGb === undefined ? {} : { pricePerGb: body.pricePerGb }),
    ...(deps.calibration ? { calibration: deps.calibration } : {}),
  });
}
