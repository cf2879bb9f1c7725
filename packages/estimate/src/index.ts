export type { Catalog, CatalogColumn, CatalogTable, CatalogTrigger } from "./_catalog.ts";
export { fingerprint } from "./_fingerprint.ts";
export type { GivenLoad, LoadProbeOptions } from "./_server-load.ts";
export {
  type Advice,
  type AdviceItem,
  AdviceTally,
  type AdviseOptions,
  adviceSql,
  type NoiseKind,
  sampledStatement,
} from "./advise.ts";
export { calibrationQuality, overheadBasis } from "./calibration-note.ts";
export {
  type CollectorCost,
  collectorUsPerTransaction,
  wakeupsPerLine,
} from "./collector-cost.ts";
export {
  AUDIT_CLASSES,
  configByName,
  DEFAULT_CONFIGS,
  PRESETS,
  pgauditLogs,
  sessionClasses,
} from "./configs.ts";
export {
  type ArchiveCost,
  type Cost,
  type CostOptions,
  costInputs,
  costOf,
  DEFAULT_COMPRESSION_RATIO,
  DEFAULT_PRICE_PER_GB,
  DEFAULT_RETENTION_DAYS,
  DEFAULT_STORAGE_PRICE_PER_GB_MONTH,
  type IngestionCost,
} from "./cost.ts";
export {
  AUDITPIPE_ERR_BAD_WORKLOAD,
  AUDITPIPE_ERR_DB_CONNECT,
  AUDITPIPE_ERR_DB_PRIVILEGE,
  AUDITPIPE_ERR_DB_QUERY,
  EstimateError,
} from "./errors.ts";
export {
  type CalibrationSummary,
  calibrationSummary,
  calibrationSummarySchema,
  type EstimateReport,
  estimateReportSchema,
  estimateSchema,
  overheadSchema,
} from "./estimate-schema.ts";
export { type ConfigFromLog, ConfigsFromLog } from "./from-log.ts";
export {
  type CgroupCpu,
  cgroupCpu,
  cgroupPath,
  cgroupV2,
  commandLine,
  loopbackClientPids,
  type MachineCpu,
  machineCpu,
  type ProcStat,
  postmasterOf,
  processIds,
  procStat,
  type SchedStat,
  schedStat,
  TICKS_PER_SEC,
  unixPeerPids,
  uptimeSec,
  voluntarySwitches,
} from "./host-cpu.ts";
export { auditCsv, type EstimateOptions, estimate, meanDigits } from "./model.ts";
export { modelledMisses } from "./modelled-misses.ts";
export {
  type CalibratedCost,
  type CalibratedInput,
  type CalibratedOverhead,
  COLLECTOR_BOUND_WRITES,
  COLLECTOR_LOSS,
  type CostColumn,
  type CostFeatures,
  type CpuCostModel,
  calibratedOverhead,
  collectorRate,
  costFeature,
  HOOK_COST_US,
  type IntervalLevel,
  kindFeatures,
  LINE_COST_US,
  type OverheadCalibration,
  predictAddedSplit,
  predictAddedUs,
  SAME_DISK_FACTOR,
  stateScale,
  t95,
  tQuantile,
  UNCALIBRATED_NOTE,
} from "./overhead.ts";
export { type OverheadInput, overheadRange, percent } from "./overhead-range.ts";
export {
  DEFAULT_AUDIT_ROLE,
  findSensitive,
  type Recommendation,
  recommend,
  recommendationSql,
  recommendedConfig,
  referencedNote,
  SENSITIVE_PATTERNS,
  type SensitiveColumn,
  type SensitiveTable,
} from "./recommend.ts";
export {
  type Answer,
  type AnswerInput,
  answerFor,
  CONTENDED,
  closedLoop,
  fitLoop,
  type LoopFit,
  lossAt,
} from "./regime.ts";
export { expandPrefix, type RecordFields, recordBytes, renderRecord, TYPICAL_QUERY_ID } from "./render.ts";
export {
  DEFAULT_INTERVAL_MS,
  MODELLED_MISSES,
  type SampleOptions,
  sampleWorkload,
  type WorkloadSample,
} from "./sample.ts";
export { showSetting } from "./show-setting.ts";
export type * from "./types.ts";
export {
  auditConfigSchema,
  DEFAULT_LOG_CONTEXT,
  parseWorkload,
  serverLoadSchema,
  waitSharesSchema,
  workloadSchema,
} from "./workload-schema.ts";
