export { CHECKPOINT_FILE, Checkpointer, type FileCheckpoint } from "./checkpoint.ts";
export {
  type BatchLimits,
  DEFAULT_BATCH_LIMITS,
  DEFAULT_PATTERNS,
  FileSource,
  FileSourceErrorCode,
  type FileSourceHealth,
  type FileSourceOptions,
  type SourceLogger,
  type SourceObserver,
} from "./file-source.ts";
export {
  DEFAULT_COMMIT_MS,
  SyslogJournal,
  type SyslogJournalOptions,
  type SyslogJournalStats,
} from "./syslog-journal.ts";
export {
  SyslogErrorCode,
  type SyslogRecordSource,
  type SyslogSource,
  SyslogSourceError,
  type SyslogSourceOptions,
  type SyslogSourceStats,
  startSyslogSource,
} from "./syslog-source.ts";
