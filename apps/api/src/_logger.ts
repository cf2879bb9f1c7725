/**
 * Logger options for Fastify. The Authorization header is redacted wherever it could be logged
 * (Fastify's request serializer leaves headers out, but a custom serializer or a child logger of
 * the caller's might not), the query string is cut from the logged URL (a client may put a token
 * in `?access_token=`), and the API never logs request bodies or audited statement text.
 */
import { type FastifyRequest, type FastifyServerOptions, LogController } from "fastify";
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
): Pick<FastifyServerOptions, "logger" | "loggerInstance" | "logController"> {
  if (logger === undefined || logger === false) return { logger: false };
  // Fastify's two lines a request are replaced by one (logRequest), at debug for polls that succeed.
  if (logger === true)
    return {
      logger: { level: "info", redact: { paths: REDACT_PATHS, censor: "[redacted]" }, serializers },
      logController: new LogController({ disableRequestLogging: true }),
    };
  // A child with its own redaction: the caller's logger may have none.
  return {
    logController: new LogController({ disableRequestLogging: true }),
    loggerInstance: logger.child(
      { component: "api" },
      { redact: { paths: REDACT_PATHS, censor: "[redacted]" }, serializers },
    ),
  };
}

/**
 * Routes polled all day (probes, Prometheus, dashboards): a poll that succeeds is logged at debug.
 * At info, the pipeline bench's 10 polls a second wrote 20 lines a second, ~3.5 % of the sidecar's
 * main thread in its profile; Kubernetes probes and scrapes add lines that say nothing.
 */
const POLLED_ROUTES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics", "/v1/volume"]);

/** One line per answered request: at info, unless it is a poll that succeeded (debug); refusals and errors always at info. */
export function logRequest(request: FastifyRequest, statusCode: number, responseTime: number): void {
  const line = { req: request, res: { statusCode }, responseTime };
  if (statusCode < 400 && POLLED_ROUTES.has(request.routeOptions.url ?? ""))
    request.log.debug(line, "request completed");
  else request.log.info(line, "request completed");
}
