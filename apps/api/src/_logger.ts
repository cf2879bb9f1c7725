/**
 * Logger options for Fastify. The Authorization header is redacted wherever it could be logged
 * (Fastify's request serializer leaves headers out, but a custom serializer or a child logger of
 * the caller's might not), and the API never logs request bodies or audited statement text.
 */
import type { FastifyServerOptions } from "fastify";
import type { Logger } from "pino";

export const REDACT_PATHS: string[] = [
  "req.headers.authorization",
  "request.headers.authorization",
  "headers.authorization",
  "authorization",
];

export function loggerOptions(
  logger: Logger | boolean | undefined,
): Pick<FastifyServerOptions, "logger" | "loggerInstance"> {
  if (logger === undefined || logger === false) return { logger: false };
  if (logger === true)
    return { logger: { level: "info", redact: { paths: REDACT_PATHS, censor: "[redacted]" } } };
  // A child with its own redaction: the caller's logger may have none.
  return {
    loggerInstance: logger.child(
      { component: "api" },
      { redact: { paths: REDACT_PATHS, censor: "[redacted]" } },
    ),
  };
}
