export { AUDIT_PREFIX, AuditPayloadError, parseAuditPayload } from "./audit-payload.ts";
export { blankRecord } from "./blank-record.ts";
export { createCsvlogParser } from "./csvlog.ts";
export { decodeAuditEntry } from "./decode.ts";
export { detached } from "./detach.ts";
export { createDivertedParser } from "./diverted.ts";
export { ParseErrorCode } from "./errors.ts";
export { createJsonlogParser } from "./jsonlog.ts";
export { DEFAULT_MAX_RECORD_BYTES } from "./limits.ts";
export { createParser } from "./parser.ts";
export { AUDIT_CLASSES, sessionClasses } from "./pgaudit-log.ts";
export { type CompiledPrefix, compilePrefix, createPrefixFields, type PrefixFields } from "./prefix.ts";
export {
  COMMON_PREFIXES,
  guessPrefixes,
  type PrefixGuess,
  type PrefixRival,
} from "./prefix-guess.ts";
export { type PrefixChange, PrefixHistory, type PrefixReading } from "./prefix-history.ts";
export { isGzip, SNIFF_BYTES, sniffFormat } from "./sniff.ts";
export { EXPRESSION_KEYWORDS } from "./sql-keywords.ts";
export {
  isSqlIdentCont,
  isSqlIdentStart,
  lexSql,
  type SqlStringForm,
  type SqlToken,
  type SqlTokenKind,
} from "./sql-lexer.ts";
export { createStderrParser, DEFAULT_PREFIX, type StderrParserOptions } from "./stderr.ts";
export {
  createSyslogParser,
  createSyslogReassembler,
  createSyslogRecordReassembler,
  type SyslogMessage,
  type SyslogMessageSink,
  type SyslogParser,
  type SyslogParserOptions,
  type SyslogReassembler,
  type SyslogStats,
} from "./syslog.ts";
export { parseLogTimestamp, sameStampSecond } from "./timestamp.ts";
export type {
  AuditEntry,
  AuditMarker,
  AuditView,
  AuditViewSink,
  LogFormat,
  LogParser,
  LogRecord,
  MalformedRecord,
  ParserOptions,
  RecordSink,
} from "./types.ts";
export { UNREAD_FIELDS, UNTALLIED_FIELDS } from "./types.ts";
