/**
 * The timer every sidecar compaction mode runs on (run/compaction.ts's child, run/compaction-adopt.ts's
 * adoption): a first pass soon after start, then one every interval; a failed pass is logged with its
 * code, counted, and retried with the one backoff (from 5 s up to the interval); /readyz hears of it
 * only after COMPACTION_FAILURES_BEFORE_UNREADY failures in a row. Also the metrics of both.
 */
import { backoffDelay } from "@auditpipe/ship";
import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";

/** Failed runs in a row before /readyz reports compaction: one failure is retried quietly. */
export const COMPACTION_FAILURES_BEFORE_UNREADY = 3;
/** First retry after a failed run; later ones back off up to the interval. */
const RETRY_BASE_MS = 5_000;
/** How soon after start the first run goes (catching up what a stopped sidecar left). */
const FIRST_RUN_MS = 1_000;

/** What the sidecar's compaction has done so far, for its metrics and /readyz. */
export interface CompactionStats {
  runs: { ok: number; failed: number };
  /** Failed runs in a row (0 after a success). */
  failures: number;
  lastCode: string | undefined;
  filesRecorded: number;
  failuresByCode: Map<string, number>;
}

export interface SidecarCompaction {
  /** Why compaction is a readiness problem (failing past the bound), or undefined. */
  problem(): string | undefined;
  registerMetrics(registry: Registry): void;
  /** Stops the timer and what runs (a child is killed: it is crash-safe, the next run redoes it). */
  stop(): Promise<void>;
}

export interface CompactionLoopOptions {
  intervalMs: number;
  logger: Logger;
  /** One pass; rejects with a `code` when it failed. */
  runOnce(stats: CompactionStats): Promise<void>;
  /** Called by stop() before the running pass is awaited (the child's kill). */
  onStop?(): void;
  /** The code of a pass that failed without one. */
  defaultCode: string;
  /** Adopt mode: closed host-hours this sidecar shipped that no adopted record covers yet (the gauge). */
  unadoptedHours?(): number;
}

function registerCompactionMetrics(
  registry: Registry,
  stats: CompactionStats,
  unadoptedHours: () => number,
): void {
  new Counter({
    name: "auditpipe_compaction_runs_total",
    help: "Compaction passes of the sidecar (its child's runs, or adoption passes), by result (ok, failed).",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: "ok" }, stats.runs.ok);
      this.inc({ result: "failed" }, stats.runs.failed);
    },
  });
  new Counter({
    name: "auditpipe_compaction_failures_total",
    help: "Failed compaction passes, by error code (docs/errors.md).",
    labelNames: ["code"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [code, n] of stats.failuresByCode) this.inc({ code }, n);
    },
  });
  new Counter({
    name: "auditpipe_compaction_files_recorded_total",
    help: "Parquet files this sidecar recorded in its manifest journal.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats.filesRecorded);
    },
  });
  new Gauge({
    name: "auditpipe_compaction_failing_runs",
    help: `Failed compaction passes in a row (0 after a success); /readyz reports it from ${COMPACTION_FAILURES_BEFORE_UNREADY}.`,
    registers: [registry],
    collect() {
      this.set(stats.failures);
    },
  });
  new Gauge({
    name: "auditpipe_compaction_unadopted_hours",
    help: "Adopt mode: host-hours this sidecar shipped to, closed for long, that no compaction record adopted covers (is auditpipe compact running?); 0 in the other modes.",
    registers: [registry],
    collect() {
      this.set(unadoptedHours());
    },
  });
}

export function startCompactionLoop(o: CompactionLoopOptions): SidecarCompaction {
  const stats: CompactionStats = {
    runs: { ok: 0, failed: 0 },
    failures: 0,
    lastCode: undefined,
    filesRecorded: 0,
    failuresByCode: new Map(),
  };
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = o.runOnce(stats).then(
        () => {
          stats.failures = 0;
          stats.lastCode = undefined;
          stats.runs.ok++;
          schedule(o.intervalMs);
        },
        (error: unknown) => {
          stats.failures++;
          stats.runs.failed++;
          const code = (error as { code?: string }).code ?? o.defaultCode;
          stats.lastCode = code;
          stats.failuresByCode.set(code, (stats.failuresByCode.get(code) ?? 0) + 1);
          const retryMs = Math.min(o.intervalMs, backoffDelay(stats.failures, RETRY_BASE_MS, o.intervalMs));
          if (!stopped)
            o.logger.error(
              { code, failures: stats.failures, retryMs, err: { message: (error as Error).message } },
              "compaction failed; landing NDJSON is kept, retrying",
            );
          schedule(retryMs);
        },
      );
    }, ms);
    timer.unref();
  };
  schedule(Math.min(FIRST_RUN_MS, o.intervalMs));

  return {
    problem: () =>
      stats.failures >= COMPACTION_FAILURES_BEFORE_UNREADY
        ? `compaction failing (${stats.lastCode}, ${stats.failures} runs in a row); landing NDJSON is kept and retried`
        : undefined,
    registerMetrics: (registry) => registerCompactionMetrics(registry, stats, o.unadoptedHours ?? (() => 0)),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      o.onStop?.();
      await running?.catch(() => undefined);
    },
  };
}
