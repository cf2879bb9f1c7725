/** The routes: probes, Prometheus scrape, the live volume, and the OpenAPI document. */
import type { LiveMeter } from "@auditpipe/meter";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { errorSchema, healthSchema, liveVolumeSchema, readySchema, volumeQuerySchema } from "./_schemas.ts";

export interface RouteDeps {
  meter: LiveMeter;
  readiness: () => { ready: boolean; reasons: string[] };
  /** The OpenAPI document (built on first use). */
  openApi: () => Promise<unknown>;
  /** Whether GET /v1/volume is served (not by `serve`, which reads no logs). */
  volume: boolean;
}

export function registerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const secured = { 401: errorSchema };

  r.get(
    "/healthz",
    {
      schema: {
        summary: "Liveness: the process answers",
        tags: ["probes"],
        security: [],
        response: { 200: healthSchema },
      },
    },
    async () => ({ status: "ok" as const }),
  );

  r.get(
    "/readyz",
    {
      schema: {
        summary: "Readiness: following its sources and able to ship",
        tags: ["probes"],
        security: [],
        response: { 200: readySchema, 503: readySchema },
      },
    },
    async (_request, reply) => {
      const { ready, reasons } = deps.readiness();
      return reply.code(ready ? 200 : 503).send({ ready, reasons: [...reasons] });
    },
  );

  // Plain `app`: the body is text, not a zod-typed value.
  app.get(
    "/metrics",
    {
      schema: {
        summary: "Prometheus metrics (text exposition format)",
        description: "All names start with `auditpipe_`; no label takes a user, database or object name.",
        tags: ["metrics"],
        response: secured,
      },
    },
    async (_request, reply) => {
      const text = await deps.meter.registry.metrics();
      return reply.header("content-type", deps.meter.registry.contentType).send(text);
    },
  );

  if (deps.volume)
    r.get(
      "/v1/volume",
      {
        schema: {
          summary:
            "The audit volume metered since start: totals, rolling rates, projections, breakdowns, pipeline health",
          tags: ["volume"],
          querystring: volumeQuerySchema,
          response: { 200: liveVolumeSchema, 400: errorSchema, ...secured },
        },
      },
      async (request) =>
        deps.meter.snapshot(request.query.top === undefined ? {} : { limit: request.query.top }),
    );

  r.get("/docs/json", { schema: { hide: true } }, () => deps.openApi());
}
