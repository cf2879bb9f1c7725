/** The API's own metric: connections it closed to stay within its caps (see _connection-guard.ts). */
import { Counter, type Registry } from "prom-client";

const NAME = "auditpipe_api_connections_closed_total";

/** The counter on `registry`, created once per registry (buildApi may be called again with one meter). */
export function connectionsShedCounter(registry: Registry): Counter<"reason"> {
  const existing = registry.getSingleMetric(NAME);
  if (existing) return existing as Counter<"reason">;
  return new Counter({
    name: NAME,
    help: "API connections closed to stay within maxConnectionsPerAddress (reason address_limit) or maxConnections (connection_limit): the oldest one not being answered, or the new one when every other is.",
    labelNames: ["reason"],
    registers: [registry],
  });
}
