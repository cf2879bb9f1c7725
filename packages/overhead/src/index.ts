export {
  fitCalibration,
  fitCollectorCost,
  type OverheadPrediction,
  type PredictionInput,
  predictOverhead,
} from "./calibration.ts";
export type { CollectorRun } from "./collector-fit.ts";
export {
  AUDIT_ROLE,
  AUDIT_TABLE,
  auditTriggerSql,
  type BuiltinWorkloadName,
  CONFIGURATION_NAMES,
  CONFIGURATIONS,
  type ConfigurationKind,
  type ConfigurationName,
  type ConfigurationSpec,
  dropAuditTriggerSql,
  quoteIdent,
  quoteLiteral,
  WORKLOAD_NAMES,
  WORKLOADS,
  type WorkloadSpec,
} from "./configurations.ts";
export {
  AUDITPIPE_ERR_BAD_CALIBRATION,
  AUDITPIPE_ERR_BENCH_NEEDS_YES,
  AUDITPIPE_ERR_BENCH_NO_SYSLOG,
  AUDITPIPE_ERR_BENCH_NOT_SUPERUSER,
  AUDITPIPE_ERR_BENCH_PENDING_RESTORE,
  AUDITPIPE_ERR_BENCH_PGBENCH,
  BenchError,
} from "./errors.ts";
export {
  cellTitle,
  hasVariants,
  LOG_DESTINATIONS,
  LOG_PLACEMENTS,
  type LogDestination,
  type LogPlacement,
  type Mitigation,
  type MitigationAxes,
  mitigationName,
  mitigationVariants,
  variantsFor,
} from "./mitigations.ts";
export {
  type LatencyPercentiles,
  latencyFromPgbenchLog,
  type PgbenchSummary,
  parsePgbenchSummary,
} from "./pgbench.ts";
export {
  type Cell,
  cellsOf,
  type DurationOptions,
  type PlannedRun,
  type PlanOptions,
  plannedSeconds,
  planRuns,
} from "./plan.ts";
export { formatOverhead, renderFit, renderReport, renderTable } from "./render.ts";
export { renderHtmlReport } from "./report-html.ts";
export { seededRng } from "./rng.ts";
export { benchReportSchema, CALIBRATION_VERSIONS, calibrationProblem, calibrationSchema } from "./schema.ts";
export {
  BOOTSTRAP_RESAMPLES,
  type BootstrapOptions,
  bootstrapMedian,
  DEFAULT_SEED,
  type Interval,
  MIN_RUNS_FOR_SPREAD,
  median,
  type OverheadInterval,
  overheadInterval,
  pointWeights,
  quantile,
  runsToResolve,
  SMALLEST_USEFUL_DIFFERENCE,
} from "./stats.ts";
export { BASELINE, calibrationPoints, type SummarizeOptions, summarizeCells } from "./summarize.ts";
export type * from "./types.ts";
