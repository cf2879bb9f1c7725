/**
 * From runs to the report's cells (configuration × workload: medians and intervals) and to the
 * calibration's points. Pure.
 */
import { cpuCell, cpuPointFields, pairedTpsOverhead } from "./_paired-cpu.ts";
import {
  type BootstrapOptions,
  bootstrapMedian,
  median,
  type OverheadInterval,
  overheadInterval,
} from "./stats.ts";
import type {
  CalibrationPoint,
  CellSummary,
  ConfigurationInfo,
  RunResult,
  VariantInfo,
  WorkloadInfo,
} from "./types.ts";

/** The configuration every other is compared with. */
export const BASELINE = "none";

const finite = (x: number): number => (Number.isFinite(x) ? x : 0);
const finiteOverhead = (o: OverheadInterval | null): OverheadInterval | null =>
  o && { ...o, median: finite(o.median), low: finite(o.low), high: finite(o.high) };

export interface SummarizeOptions extends BootstrapOptions {
  configurations: readonly string[];
  workloads: readonly string[];
  /** The mitigation variants, in order (`variants[].name`); runs without one are variant "". */
  variants?: readonly string[];
}

/**
 * One summary per cell that has at least one run, in the order of the workloads, configurations
 * and variants given. Every variant's overhead is against the one baseline of its workload: the
 * baseline logs nothing during a run, so it is measured under one variant only.
 */
export function summarizeCells(runs: readonly RunResult[], options: SummarizeOptions): CellSummary[] {
  const out: CellSummary[] = [];
  const variants = options.variants ?? [...new Set(runs.map((r) => r.variant ?? ""))];
  for (const workload of options.workloads) {
    const baseline = runs.filter((r) => r.workload === workload && r.configuration === BASELINE);
    const baseTps = baseline.map((r) => r.tps);
    for (const configuration of options.configurations)
      for (const variant of variants) {
        const mine = runs.filter(
          (r) =>
            r.workload === workload && r.configuration === configuration && (r.variant ?? "") === variant,
        );
        if (mine.length === 0) continue;
        const tps = mine.map((r) => r.tps);
        const ci = bootstrapMedian(tps, options);
        const perSec = (f: (r: RunResult) => number): number =>
          finite(median(mine.map((r) => (r.durationSec > 0 ? f(r) / r.durationSec : 0))));
        const perTxn = (f: (r: RunResult) => number): number =>
          finite(median(mine.map((r) => (r.transactions > 0 ? f(r) / r.transactions : 0))));
        const logBytesPerSec = perSec((r) => r.log.bytes);
        // Against the baseline around each run where there are two or more; else the medians'.
        const tpsOverhead =
          configuration === BASELINE || baseTps.length === 0
            ? null
            : (pairedTpsOverhead(baseline, mine, options) ?? overheadInterval(baseTps, tps, options));
        const cpu = cpuCell(baseline, mine, configuration === BASELINE, options);
        out.push({
          configuration,
          workload,
          variant,
          runs: mine.length,
          tps: { median: finite(ci.median), low: finite(ci.low), high: finite(ci.high) },
          overhead: finiteOverhead(cpu?.overhead ?? tpsOverhead),
          overheadBasis: cpu?.overhead ? "cpu" : "tps",
          tpsOverhead: finiteOverhead(tpsOverhead),
          cpuUsPerTransaction: cpu?.perTransaction ?? null,
          latencyMs: {
            p50: finite(median(mine.map((r) => r.latencyMs.p50))),
            p95: finite(median(mine.map((r) => r.latencyMs.p95))),
            p99: finite(median(mine.map((r) => r.latencyMs.p99))),
          },
          logRecordsPerSec: perSec((r) => r.log.records),
          auditEntriesPerSec: perSec((r) => r.log.auditEntries),
          logBytesPerSec,
          mbPerHour: (logBytesPerSec * 3600) / 1e6,
          gbPerDay: (logBytesPerSec * 86_400) / 1e9,
          walMbPerRun: finite(median(mine.map((r) => r.walBytes / 1e6))),
          walBytesPerTransaction: perTxn((r) => r.walBytes),
          logRecordsPerTransaction: perTxn((r) => r.log.records),
          ...(mine.every((r) => r.log.auditKinds)
            ? {
                auditEntriesByKindPerTransaction: {
                  statement: perTxn(
                    (r) => r.log.auditEntries - r.log.auditKinds!.misc - r.log.auditKinds!.nested,
                  ),
                  misc: perTxn((r) => r.log.auditKinds!.misc),
                  nested: perTxn((r) => r.log.auditKinds!.nested),
                },
              }
            : {}),
          auditTableRowsPerTransaction: perTxn((r) => r.auditTable?.rows ?? 0),
        });
      }
  }
  return out;
}

/**
 * Calibration points: every log-producing cell with an overhead (the trigger writes no log; its
 * cost is WAL and table I/O, which this model does not describe). Lines are counted above what
 * the baseline logs; pgaudit's hooks process every statement once pgaudit audits anything.
 * With mitigation variants, only the first destination's cells (the model has one cost per line,
 * and a line costs differently by destination), each with its own placement.
 */
export function calibrationPoints(
  cells: readonly CellSummary[],
  configurations: readonly ConfigurationInfo[],
  workloads: readonly WorkloadInfo[],
  context: {
    clients: number;
    logElsewhere: boolean;
    variants?: readonly VariantInfo[];
    /** The runs the cells summarise: with CPU times, points carry each run's added CPU time. */
    runs?: readonly RunResult[];
    seed?: number;
  },
): CalibrationPoint[] {
  const points: CalibrationPoint[] = [];
  const destination = context.variants?.[0]?.logDestination;
  for (const cell of cells) {
    const config = configurations.find((c) => c.name === cell.configuration);
    const workload = workloads.find((w) => w.name === cell.workload);
    if (!cell.overhead || !config || !workload || config.kind === "trigger") continue;
    const variant = context.variants?.find((v) => v.name === cell.variant);
    if (variant && variant.logDestination !== destination) continue;
    if (!(cell.tps.median > 0)) continue;
    const base = cells.find((c) => c.workload === cell.workload && c.configuration === BASELINE);
    const lines = Math.max(0, cell.logRecordsPerTransaction - (base?.logRecordsPerTransaction ?? 0));
    const pgauditActive = config.kind === "pgaudit-session" || config.kind === "pgaudit-object";
    const clients = workload.clients ?? context.clients;
    const added = (f: number): number => (f * clients * 1e6) / cell.tps.median;
    const runsOf = (configuration: string, variant?: string): RunResult[] =>
      (context.runs ?? []).filter(
        (r) =>
          r.workload === cell.workload &&
          r.configuration === configuration &&
          (variant === undefined || (r.variant ?? "") === variant),
      );
    // The baseline logs nothing, so it is measured under one variant only: every variant's runs pair with it.
    const cpu =
      cell.overheadBasis === "cpu"
        ? cpuPointFields(runsOf(BASELINE), runsOf(cell.configuration, cell.variant), { seed: context.seed })
        : null;
    points.push({
      configuration: cell.configuration,
      workload: cell.workload,
      clients,
      ...(workload.rate === undefined ? {} : { rate: workload.rate }),
      linesPerTransaction: lines,
      ...(cell.auditEntriesByKindPerTransaction
        ? {
            linesByKind: {
              misc: cell.auditEntriesByKindPerTransaction.misc,
              nested: cell.auditEntriesByKindPerTransaction.nested,
            },
          }
        : {}),
      auditedStatementsPerTransaction: pgauditActive ? workload.statementsPerTransaction : 0,
      logElsewhere: variant ? !variant.logOnDataDisk : context.logElsewhere,
      addedUs: cpu
        ? cpu.addedUs
        : {
            median: added(cell.overhead.median),
            low: added(cell.overhead.low),
            high: added(cell.overhead.high),
          },
      ...(cpu && {
        samples: cpu.samples,
        addedLoggerUs: cpu.addedLoggerUs,
        baselineServerUs: cpu.baselineServerUs,
        statementsPerTransaction: workload.statementsPerTransaction,
        baselineSamples: cpu.baselineSamples,
        loggerSamples: cpu.loggerSamples,
        linesPerSecSamples: cpu.tpsSamples.map((tps) => tps * lines),
        ...(cpu.wakeupSamples ? { wakeupSamples: cpu.wakeupSamples } : {}),
      }),
    });
  }
  return points;
}
