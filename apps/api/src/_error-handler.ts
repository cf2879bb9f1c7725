/**
 * Turns every failure into the JSON error body of errors.ts: zod validation → 400 naming the
 * field, ApiError → its status, Fastify's own 4xx → AUDITPIPE_ERR_BAD_REQUEST, anything else →
 * 500 with a generic message (the cause goes to the log, not to the client).
 */
import type { FastifyError, FastifyInstance } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { pathOnly } from "./_logger.ts";
import {
  ApiError,
  AUDITPIPE_ERR_BAD_REQUEST,
  AUDITPIPE_ERR_INTERNAL,
  AUDITPIPE_ERR_NOT_FOUND,
  validationError,
} from "./errors.ts";

function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0]!;
    const path = first.instancePath.replace(/^\//, "").replaceAll("/", ".");
    const field = [error.validationContext, path].filter(Boolean).join(".");
    return validationError(field || "request", first.message ?? "invalid");
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new AUDITPIPE_ERR_BAD_REQUEST((error as Error).message);
  }
  return undefined;
}

export function installErrorHandlers(app: FastifyInstance): void {
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
    const error = new AUDITPIPE_ERR_NOT_FOUND(request.method, pathOnly(request.url));
    return reply.code(404).send(error.toBody());
  });
}
