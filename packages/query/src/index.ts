export {
  type AuditView,
  type AuditViewOptions,
  openAuditView,
  PARTITION_SPILL_MS,
  type ViewScope,
} from "./audit-view.ts";
export { QueryError, QueryErrorCode } from "./errors.ts";
export {
  activityOf,
  OCSF_CATEGORY_UID,
  OCSF_CLASS_UID,
  OCSF_INPUT_SELECT,
  OCSF_VERSION,
  OcsfActivity,
  type OcsfInput,
  toOcsfEvent,
} from "./ocsf.ts";
export { REPORT_NAMES, type ReportName, type ReportParams, reportSql } from "./reports.ts";
export { type QueryResult, type RunQueryOptions, runQuery } from "./run-query.ts";
export { type SecurityLakeTarget, writeSecurityLake } from "./security-lake.ts";
