/** prom-client's default metrics, one module each (no types of their own; see _default-metrics.ts). */
declare module "prom-client/lib/metrics/*" {
  import type { Registry } from "prom-client";

  const collect: (
    registry: Registry,
    config: { prefix?: string; eventLoopMonitoringPrecision?: number },
  ) => void;
  export default collect;
}
