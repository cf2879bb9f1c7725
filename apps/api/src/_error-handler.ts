/**
 * Turns every failure into the JSON error body of errors.ts: zod validation → 400 naming the
 * field, ApiError → its status, Fastify's own 4xx → AUDITPIPE_ERR_BAD_REQUEST, a known path with
 * another method → 405 with `Allow`, anything else → 500 with a generic message (the cause goes to
 * the log, not to the client).
 */
import type { FastifyError, FastifyInstance } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { pathOnly } from "./_logger.ts";
import {
  ApiError,
  AUDITPIPE_ERR_BAD_REQUEST,
  AUDITPIPE_ERR_INTERNAL,
  AUDITPIPE_ERR_METHOD_NOT_ALLOWED,
  AUDITPIPE_ERR_NOT_FOUND,
  validationError,
} from "./errors.ts";

function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0]!;
    const path = first.instancePath.replace(/^\//, "").replaceAll("/", ".");
    // A strict body's unknown field: named in `field` (body.confgs); the schema's message lists the known ones.
    const unknown = first.keyword === "unrecognized_keys" ? unknownKeys(first.params) : [];
    const field = [error.validationContext, path, unknown[0]].filter(Boolean).join(".");
    return validationError(field || "request", first.message ?? "invalid");
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new AUDITPIPE_ERR_BAD_REQUEST((error as Error).message);
  }
  return undefined;
}

/** The keys zod found and the schema does not name (a strict object's `unrecognized_keys`). */
function unknownKeys(params: unknown): string[] {
  const keys = (params as { keys?: unknown } | undefined)?.keys;
  return Array.isArray(keys) ? keys.map(String) : [];
}

/** Call before any route is added: the 405 answers need every route's methods. */
export function installErrorHandlers(app: FastifyInstance): void {
  /** Path → the methods it is served with, for the `Allow` header of a 405. */
  const methods = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    const set = methods.get(route.url) ?? new Set<string>();
    methods.set(route.url, set);
    for (const method of [route.method].flat()) set.add(method);
  });
  app.setErrorHandler((error, request, reply) => {
    let apiError = toApiError(error);
    if (apiError === undefined) {
      // Only the message and code: a stack or cause could quote data the API was handling.
      request.log.error(
        { code: (error as FastifyError).code, message: (error as Error).message },
        "request failed",
      );
      apiError = new AUDITPIPE_ERR_INTERNAL();
    }
    if (apiError.statusCode === 401) reply.header("www-authenticate", 'Bearer realm="auditpipe"');
    return reply.code(apiError.statusCode).send(apiError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const path = pathOnly(request.url);
    const allowed = methods.get(path);
    if (allowed !== undefined) {
      const allow = [...allowed].sort().join(", ");
      reply.header("allow", allow);
      return reply.code(405).send(new AUDITPIPE_ERR_METHOD_NOT_ALLOWED(request.method, path, allow).toBody());
    }
    const error = new AUDITPIPE_ERR_NOT_FOUND(request.method, path);
    return reply.code(404).send(error.toBody());
  });
}
