/**
 * Logger options for Fastify. The Authorization header is redacted wherever it could be logged
 * (Fastify's request serializer leaves headers out, but a custom serializer or a child logger of
 * the caller's might not), the query string is cut from the logged URL (a client may put a token
 * in `?access_token=`), and the API never logs request bodies or audited statement text.
 */
import type { FastifyRequest, FastifyServerOptions } from "fastify";
import type { Logger } from "pino";

export const REDACT_PATHS: string[] = [
  "req.headers.authorization",
  "request.headers.authorization",
  "headers.authorization",
  "authorization",
];

/** The path without its query string: `/v1/volume?access_token=x` → `/v1/volume`. */
export function pathOnly(url: string): string {
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** Fastify's request serializer with the query string left out of `url`. */
const serializers = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: pathOnly(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};

export function loggerOptions(
  logger: Logger | boolean | undefined,
): Pick<FastifyServerOptions, "logger" | "loggerInstance"> {
  if (logger === undefined || logger === false) return { logger: false };
  if (logger === true)
    return {
      logger: { level: "info", redact: { paths: REDACT_PATHS, censor: "[redacted]" }, serializers },
    };
  // A child with its own redaction: the caller's logger may have none.
  return {
    loggerInstance: logger.child(
      { component: "api" },
      { redact: { paths: REDACT_PATHS, censor: "[redacted]" }, serializers },
    ),
  };
}
