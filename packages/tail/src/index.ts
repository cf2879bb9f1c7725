export { type BatchLimits, DEFAULT_BATCH_LIMITS } from "@auditpipe/ship";
export type { FileCheckpoint } from "./_checkpoint.ts";
export { AUTO_PATTERN, DEFAULT_PATTERNS } from "./file-follower.ts";
export {
  DEFAULT_OUTCOME_HOLD_MS,
  FileSource,
  type FileSourceOptions,
  type SourceObserver,
} from "./file-pipeline.ts";
export {
  DataLostReason,
  FileSourceErrorCode,
  type FileSourceHealth,
  type SourceLogger,
} from "./follow-reports.ts";
export {
  DEFAULT_COMMIT_MS,
  SyslogJournal,
  type SyslogJournalOptions,
  type SyslogJournalStats,
} from "./syslog-journal.ts";
export {
  DEFAULT_TCP_IDLE_TIMEOUT_MS,
  SyslogErrorCode,
  type SyslogRecordSource,
  type SyslogSource,
  SyslogSourceError,
  type SyslogSourceOptions,
  type SyslogSourceStats,
  startSyslogSource,
} from "./syslog-source.ts";
