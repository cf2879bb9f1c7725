/**
 * POST /v1/estimates, POST /v1/recommendations, GET /v1/workload. The database is the server's
 * own (configured at start, sampled by the `estimator` dependency); a request never names a
 * connection. A workload in the body plans for a database that does not exist yet.
 *
 * The routes' zod schemas and answers (_routes-estimate-answers.ts) are imported on the first
 * request: building them was ~10 % of the sidecar's start-up CPU, for routes most sidecars never
 * serve. The OpenAPI document's twin app registers the routes with those schemas.
 */
import type { OverheadCalibration, WorkloadSample } from "@auditpipe/estimate";
import type { FastifyInstance } from "fastify";
import { errorSchema } from "./_schemas.ts";
import { createError } from "./errors.ts";

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

type Answers = typeof import("./_routes-estimate-answers.ts");
let loading: Promise<Answers> | undefined;
/** The routes' schemas and answers, imported once, on first use. */
export function estimateAnswers(): Promise<Answers> {
  loading ??= import("./_routes-estimate-answers.ts");
  return loading;
}

const SUMMARIES = {
  workload: "The last workload sample of the server's database: rates per statement, catalog, log settings",
  estimates: "Predicted entries/s, bytes, GB/day, $/month and overhead per candidate pgAudit configuration",
  recommendations:
    "The cheapest configuration that audits the sensitive tables: GRANTs, an idempotent SQL script, before/after",
};

/**
 * Registers the routes. `schemas` (the loaded answers module) puts the body and response schemas
 * on the routes themselves, for the OpenAPI document; without it, each request loads them.
 */
export function registerEstimateRoutes(app: FastifyInstance, deps: EstimatorDeps, schemas?: Answers): void {
  const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema };
  const tags = ["estimate"];

  app.get(
    "/v1/workload",
    {
      schema: {
        summary: SUMMARIES.workload,
        tags,
        response: schemas ? { 200: schemas.workloadSampleSchema, ...errors } : errors,
      },
    },
    async (request, reply) => {
      const sample = deps.lastSample();
      if (!sample) throw new AUDITPIPE_ERR_NO_SAMPLE();
      if (schemas) return sample;
      const a = await estimateAnswers();
      return a.sendEncoded(reply, a.workloadSampleSchema, sample, request.method, "/v1/workload");
    },
  );

  app.post(
    "/v1/estimates",
    {
      bodyLimit: BODY_LIMIT,
      schema: {
        summary: SUMMARIES.estimates,
        tags,
        ...(schemas ? { body: schemas.bodies.estimates } : {}),
        response: schemas ? { 200: schemas.estimatesResponseSchema, ...errors } : errors,
      },
    },
    async (request, reply) => {
      const a = await estimateAnswers();
      const answer = a.answerEstimates(deps, request.body);
      return a.sendEncoded(reply, a.estimatesResponseSchema, answer, request.method, "/v1/estimates");
    },
  );

  app.post(
    "/v1/recommendations",
    {
      schema: {
        summary: SUMMARIES.recommendations,
        tags,
        ...(schemas ? { body: schemas.bodies.recommendations } : {}),
        response: schemas ? { 200: schemas.recommendationSchema, ...errors } : errors,
      },
    },
    async (request, reply) => {
      const a = await estimateAnswers();
      const answer = a.answerRecommendations(deps, request.body);
      return a.sendEncoded(reply, a.recommendationSchema, answer, request.method, "/v1/recommendations");
    },
  );
}
