export type {
  AuditEntry,
  AuditMarker,
  LogFormat,
  LogParser,
  LogRecord,
  MalformedRecord,
  ParserOptions,
  RecordSink,
} from "./types.ts";
export { ParseErrorCode } from "./errors.ts";
