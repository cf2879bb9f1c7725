/**
 * buildApi(): the Fastify app of the sidecar. The meter and readiness come from the caller (the
 * `run` command wires its sources and sinks), so the app is testable with app.inject alone.
 */
import type { LiveMeter } from "@auditpipe/meter";
import type {} from "@fastify/swagger";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import { bearerChecker, PUBLIC_ROUTES } from "./_auth.ts";
import { guardConnections } from "./_connection-guard.ts";
import { connectionsShedCounter } from "./_connection-metrics.ts";
import { installErrorHandlers } from "./_error-handler.ts";
import { loggerOptions, logRequest } from "./_logger.ts";
import { registerRoutes } from "./_routes.ts";
import { markSecured } from "./_secured.ts";
import { AUDITPIPE_ERR_UNAUTHORIZED } from "./errors.ts";
import { type ApiLimits, DEFAULT_API_LIMITS, serverOptions } from "./limits.ts";
import { type AdviceDeps, registerAdviceRoutes } from "./routes-advice.ts";
import { type EstimatorDeps, estimateAnswers, registerEstimateRoutes } from "./routes-estimate.ts";

export interface ApiOptions {
  /** The live meter behind /metrics and /v1/volume. */
  meter: LiveMeter;
  /**
   * Whether to serve GET /v1/volume (default true). `serve` reads no logs, so its volume would
   * always be zeros: it leaves the route out.
   */
  volume?: boolean;
  /** Whether the sidecar is ready (followed sources open, sink reachable), with the reasons it is not. */
  readiness: () => { ready: boolean; reasons: string[] };
  /** When set, every route but /healthz and /readyz requires `Authorization: Bearer <token>`. */
  token?: string;
  /** A pino logger (a child with the Authorization header redacted is used), true for a default one, false/omitted for none. */
  logger?: Logger | boolean;
  /** When set, serves /v1/estimates, /v1/recommendations and /v1/workload from its last sample. */
  estimator?: EstimatorDeps;
  /** When set, serves /v1/advice (the sidecar: what its audit log's noise is, what to change). */
  advisor?: AdviceDeps;
  /** Connection limits (timeouts, a cap on open connections); defaults in DEFAULT_API_LIMITS. */
  limits?: Partial<ApiLimits>;
}

/** Fastify's compiler factories, answering zod's compilers for every route. */
const ZOD_COMPILERS = {
  buildValidator: () => validatorCompiler,
  buildSerializer: () => serializerCompiler,
} as unknown as NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const token = options.token === "" ? undefined : options.token;
  const limits: ApiLimits = { ...DEFAULT_API_LIMITS, ...options.limits };
  const app = Fastify({
    ...loggerOptions(options.logger),
    ...serverOptions(limits),
    // Nothing the API accepts has a body; keep a stray one small.
    bodyLimit: 64 * 1024,
    // zod validates and serializes every route: given here, Fastify never loads its default
    // compilers (ajv, fast-json-stringify), which cost the sidecar's start-up CPU for nothing.
    schemaController: { compilersFactory: ZOD_COMPILERS },
  }) as unknown as FastifyInstance;
  const shed = connectionsShedCounter(options.meter.registry);
  guardConnections(app.server, limits, (reason) => shed.inc({ reason }));
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandlers(app);
  app.addHook("onResponse", async (request, reply) =>
    logRequest(request, reply.statusCode, reply.elapsedTime),
  );

  if (token !== undefined) {
    const check = bearerChecker(token);
    app.addHook("onRequest", async (request) => {
      // routeOptions.url is the matched route (undefined on a 404), so `/healthz/../metrics` or a
      // query string cannot pass for a public route; unknown routes need the token too.
      if (PUBLIC_ROUTES.has(request.routeOptions.url ?? "")) return;
      if (!check(request.headers.authorization)) throw new AUDITPIPE_ERR_UNAUTHORIZED();
    });
  }
  markSecured(app, token !== undefined);

  let document: Promise<unknown> | undefined;
  const openApi = (): Promise<unknown> =>
    (document ??= openApiDocument(options, token).catch((error: unknown) => {
      document = undefined;
      throw error;
    }));
  registerApiRoutes(app, options, openApi);
  await app.ready();
  return app;
}

/** Every route of the API. */
function registerApiRoutes(
  app: FastifyInstance,
  options: ApiOptions,
  openApi: () => Promise<unknown>,
  estimateSchemas?: Awaited<ReturnType<typeof estimateAnswers>>,
): void {
  registerRoutes(app, {
    meter: options.meter,
    readiness: options.readiness,
    openApi,
    volume: options.volume ?? true,
  });
  if (options.estimator) registerEstimateRoutes(app, options.estimator, estimateSchemas);
  if (options.advisor) registerAdviceRoutes(app, options.advisor);
}

/**
 * The OpenAPI document, built when it is first asked for: @fastify/swagger (and the YAML library
 * it loads) describes a twin app with the same routes, so a sidecar whose /docs/json nobody reads
 * never loads them.
 */
async function openApiDocument(options: ApiOptions, token: string | undefined): Promise<unknown> {
  const { default: fastifySwagger } = await import("@fastify/swagger");
  const twin = Fastify({
    schemaController: { compilersFactory: ZOD_COMPILERS },
  }) as unknown as FastifyInstance;
  await twin.register(fastifySwagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "auditpipe",
        description: "The auditpipe sidecar: live pgAudit volume, Prometheus metrics and probes.",
        version: "0.1.0",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: token === undefined ? [] : [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  // The twin describes the estimate routes with their schemas, which the live app loads on first use.
  registerApiRoutes(twin, options, async () => ({}), options.estimator ? await estimateAnswers() : undefined);
  await twin.ready();
  const document = twin.swagger();
  await twin.close();
  return document;
}
