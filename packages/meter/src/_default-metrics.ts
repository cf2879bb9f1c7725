/**
 * prom-client's default process metrics (collectDefaultMetrics) but its GC histogram,
 * `nodejs_gc_duration_seconds`: that one is a PerformanceObserver of every collection, and Node
 * makes a performance entry and runs the observer for each (~500 scavenges a million entries in
 * the sidecar): ~1.5 % of its main thread for a histogram of pauses (docs/api.md). The others are
 * read at scrape time, or sampled on a timer (event loop lag).
 */

import type { Registry } from "prom-client";
import eventLoopLag from "prom-client/lib/metrics/eventLoopLag.js";
import heapSizeAndUsed from "prom-client/lib/metrics/heapSizeAndUsed.js";
import heapSpacesSizeAndUsed from "prom-client/lib/metrics/heapSpacesSizeAndUsed.js";
import osMemoryHeap from "prom-client/lib/metrics/osMemoryHeap.js";
import processCpuTotal from "prom-client/lib/metrics/processCpuTotal.js";
import processHandles from "prom-client/lib/metrics/processHandles.js";
import processMaxFileDescriptors from "prom-client/lib/metrics/processMaxFileDescriptors.js";
import processOpenFileDescriptors from "prom-client/lib/metrics/processOpenFileDescriptors.js";
import processRequests from "prom-client/lib/metrics/processRequests.js";
import processResources from "prom-client/lib/metrics/processResources.js";
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
import version from "prom-client/lib/metrics/version.js";

/** In prom-client's order (lib/defaultMetrics.js), gc left out. */
const METRICS = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  eventLoopLag,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
];

/** prom-client's default metrics, `prefix` before each name, but the per-GC histogram. */
export function collectProcessMetrics(register: Registry, prefix: string): void {
  // As collectDefaultMetrics configures them: the event loop sampled every 10 ms.
  for (const metric of METRICS) metric(register, { prefix, eventLoopMonitoringPrecision: 10 });
}
