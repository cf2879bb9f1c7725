/**
 * Connection limits of the API server. Without them Node keeps a half-sent request open for a
 * minute and a half (a 60 s header timeout checked every 30 s) and accepts any number of sockets,
 * so a few hundred idle connects use up the sidecar's file descriptors, which its checkpoints,
 * spool and logs need. The API's clients (probes, a Prometheus scrape, an operator's curl) send
 * small requests at once, so tight limits cost them nothing.
 */
import type { ServerOptions } from "node:http";
import type { FastifyServerOptions } from "fastify";

export interface ApiLimits {
  /** All request headers must arrive within this. Node's `server.headersTimeout`. Default 10 s. */
  headersTimeoutMs: number;
  /** The whole request must arrive within this (Fastify `requestTimeout`). Default 15 s. */
  requestTimeoutMs: number;
  /** A socket with no traffic at all is closed after this (Fastify `connectionTimeout`). Default 30 s. */
  idleTimeoutMs: number;
  /** An idle keep-alive socket is closed after this (Fastify `keepAliveTimeout`). Default 5 s. */
  keepAliveTimeoutMs: number;
  /** Requests served on one socket before it is closed (Fastify `maxRequestsPerSocket`). Default 100. */
  maxRequestsPerSocket: number;
  /**
   * Open connections at most. A connection past it closes the oldest one not being answered (a
   * slow or idle client), so a probe always gets in (see _connection-guard.ts). Default 64.
   */
  maxConnections: number;
  /** Open connections from one remote address at most, enforced the same way. Default 16. */
  maxConnectionsPerAddress: number;
  /** How often Node looks for sockets past the header and request timeouts. Default 1 s (Node's is 30 s). */
  timeoutCheckIntervalMs: number;
}

export const DEFAULT_API_LIMITS: Readonly<ApiLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 100,
  maxConnections: 64,
  maxConnectionsPerAddress: 16,
  timeoutCheckIntervalMs: 1_000,
});

/** Fastify's factory options for these limits (the connection caps are kept by guardConnections). */
export function serverOptions(
  limits: ApiLimits,
): Pick<
  FastifyServerOptions,
  "connectionTimeout" | "requestTimeout" | "keepAliveTimeout" | "maxRequestsPerSocket"
> & { http: ServerOptions } {
  return {
    connectionTimeout: limits.idleTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxRequestsPerSocket: limits.maxRequestsPerSocket,
    // Passed to http.createServer: these two exist only as constructor options there.
    http: {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      connectionsCheckingInterval: limits.timeoutCheckIntervalMs,
    },
  };
}
