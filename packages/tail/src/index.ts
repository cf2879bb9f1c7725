export {
  SyslogErrorCode,
  type SyslogRecordSource,
  type SyslogSource,
  SyslogSourceError,
  type SyslogSourceOptions,
  type SyslogSourceStats,
  startSyslogSource,
} from "./syslog-source.ts";
