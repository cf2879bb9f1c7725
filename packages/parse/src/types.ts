/**
 * The shapes every format parser produces. A parser turns bytes into LogRecords; the pgAudit
 * payload inside a record's message becomes an AuditEntry (see audit-payload.ts).
 */

import type { PrefixHistory } from "./prefix-history.ts";

export type LogFormat = "csvlog" | "jsonlog" | "stderr" | "syslog";

/**
 * One log record as PostgreSQL wrote it. Fields a format (or a log_line_prefix) does not carry
 * are null. Strings are as PostgreSQL printed them, unescaped from the format's quoting.
 */
export interface LogRecord {
  /** Byte offset of the record's first byte in its source (for syslog: of its first chunk's line). */
  offset: number;
  /** Bytes the record occupies in its source, terminating newline(s) included (syslog: all its chunk lines). */
  size: number;
  /** log_time / `%m` / `%t` / jsonlog `timestamp`, as printed. */
  timestamp: string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  /** `host:port` (csvlog connection_from; `%r`), or the host alone when only that is known. */
  remoteHost: string | null;
  sessionId: string | null;
  /** csvlog session_line_num / jsonlog line_num / `%l`. */
  sessionLine: number | null;
  commandTag: string | null;
  sessionStart: string | null;
  virtualTransactionId: string | null;
  transactionId: string | null;
  /** LOG, ERROR, FATAL, PANIC, WARNING, NOTICE, INFO, DEBUG1..5 (as printed; localized servers print others). */
  severity: string;
  sqlState: string | null;
  message: string;
  detail: string | null;
  hint: string | null;
  internalQuery: string | null;
  internalPosition: number | null;
  context: string | null;
  /** The statement that caused an error (csvlog `query`, jsonlog `statement`, stderr `STATEMENT:` line). */
  query: string | null;
  queryPosition: number | null;
  location: string | null;
  applicationName: string | null;
  backendType: string | null;
  leaderPid: number | null;
  queryId: string | null;
  /**
   * Set when the record held bytes that are not UTF-8 (a SQL_ASCII database logs its clients'
   * bytes as they came): in every text field each such byte is written `\xNN` and each backslash
   * `\\`, so nothing is lost and the original bytes can be restored. Absent otherwise.
   */
  invalidUtf8?: true;
}

/** Why a stretch of input could not be read as a record. Parsers report it and carry on. */
export interface MalformedRecord {
  /** Stable code, e.g. `AUDITPIPE_ERR_UNTERMINATED_QUOTE` (see errors.ts). */
  code: string;
  /** A sentence for a person; never contains record text (it may hold personal data). */
  reason: string;
  /** Byte offset in the source where the skipped stretch starts. */
  offset: number;
  /** Bytes skipped. */
  size: number;
}

/** Receives what a parser finds, in source order. */
export interface RecordSink {
  /**
   * A record; with ParserOptions.decodeAuditEntries, also its pgAudit entry where the parser
   * decoded it (the sink decodes the others: decodeAuditEntry gives the same entry, and reports
   * a payload that is not pgAudit's).
   */
  record(record: LogRecord, entry?: AuditEntry): void;
  malformed(error: MalformedRecord): void;
  /**
   * Bytes read and passed over on purpose, neither a record nor malformed (the stderr lines around
   * the records a diverted-records parser reads): reported in order with the records, so a reader
   * knows it is past them.
   */
  skipped?(offset: number, size: number): void;
}

/** An incremental parser: feed chunks split anywhere, then `end()`. Never throws on input. */
export interface LogParser {
  push(chunk: Uint8Array): void;
  /** End of input: flushes or reports (as malformed) a partial record. */
  end(): void;
  /**
   * The writer has gone quiet (a followed file stopped growing): emit a record held back only to
   * see whether continuation lines follow (stderr, syslog), if the input ends at a line boundary.
   * Formats that never hold a complete record (csvlog, jsonlog) need not implement it.
   */
  idle?(): void;
  /**
   * Offsets of the records begun and not yet given out, oldest first. Only a parser that gives
   * out records out of file order implements it (syslog holds each pid's last message while
   * other pids' later ones go out): a checkpoint must not pass these, or a crash loses them.
   */
  held?(): number[];
}

export interface ParserOptions {
  /** `log_line_prefix` for stderr and syslog; PostgreSQL 15's default `%m [%p] ` when omitted. */
  prefix?: string;
  /**
   * stderr: the stream's log_line_prefix values, followed through reloads that change it (one
   * history shared by the parsers of a stream's files); overrides `prefix`.
   */
  prefixHistory?: PrefixHistory;
  /** Records larger than this are malformed and skipped; default 64 MiB. */
  maxRecordBytes?: number;
  /**
   * csvlog: leave the fields in UNREAD_FIELDS null, whatever the log holds, for a reader that
   * never looks at them (the sidecar: nothing it meters, joins, advises on or ships reads them).
   * Each is a string the parser need not make, and garbage it need not leave: ~0.1 µs a record.
   * Other formats ignore it (they fill few of these fields).
   */
  omitUnreadFields?: boolean;
  /**
   * csvlog: also leave the fields in UNTALLIED_FIELDS null, for a reader that only tallies and
   * joins its records (`analyze`: the volume tally, the outcome join and its events); implies
   * omitUnreadFields. The sidecar ships these fields, so it does not ask for it.
   */
  omitUntalliedFields?: boolean;
  /**
   * csvlog: decode the pgAudit entry of each ASCII record whose message has no doubled quotes
   * from the parser's own text, and give it to the sink with the record (RecordSink.record's
   * second argument): the entry decodeAuditEntry would give, read where the text lies, which costs
   * ~10-15 % less than reading the message's view (`analyze`). A record whose entry is not
   * given (another message, a payload that is not pgAudit's, non-ASCII or escaped text) is for
   * the sink to decode. Other formats ignore it; the sidecar does not ask for it.
   */
  decodeAuditEntries?: boolean;
  /**
   * csvlog: an ordinary pgAudit entry (see AuditView) is offered to this sink first, as numbers
   * and pooled strings, without a LogRecord or an AuditEntry being made; what the sink declines
   * (it returns false) is built and given to `record` as without it. `analyze` only: a reader that
   * keeps or ships records, or checkpoints the join's keys (the sidecar), does not set it.
   */
  auditView?: AuditViewSink;
}

/**
 * An ASCII csvlog record whose message is a pgAudit entry read without doubt: no doubled quotes
 * in the timestamp, user, database, session id or vxid; the payload's leading fields unquoted; the
 * statement unquoted, or quoted with no quote in its text (in a message with doubled quotes, the
 * statement's are its only ones); PARAMETER one of pgAudit's markers and no ROWS field; a process
 * id and a session id. Each value is the one the record and decodeAuditEntry would hold (the same
 * text); the columns of few values (user, database, audit type, class, command, object type and
 * name) are pooled strings, so an equal value is mostly the same string object (BytePool: the
 * last few strings of each column, compared with the bytes).
 * One object, overwritten for each entry: read it during the call only.
 */
export interface AuditView
  extends Pick<
    AuditEntry,
    "auditType" | "statementId" | "substatementId" | "class" | "command" | "objectType" | "objectName"
  > {
  /** As LogRecord's. */
  offset: number;
  size: number;
  pid: number;
  timestamp: string | null;
  user: string | null;
  database: string | null;
  sessionId: string;
  virtualTransactionId: string | null;
  /** A view of the parser's text (as AuditEntry.statement), not pooled. */
  statement: string;
  parameter: AuditMarker;
}

export interface AuditViewSink {
  /** True when the sink took the entry; false to have the record and entry made and given to `record`. */
  entry(view: AuditView): boolean;
}

/**
 * The LogRecord fields that omitUnreadFields leaves null: none of the sidecar's consumers (the
 * meter, the outcome join, the advisor, the NDJSON encoder, the shipped attempts) reads them.
 */
export const UNREAD_FIELDS: readonly (keyof LogRecord)[] = [
  "commandTag",
  "sessionStart",
  "transactionId",
  "detail",
  "hint",
  "internalQuery",
  "internalPosition",
  "context",
  "queryPosition",
  "location",
  "backendType",
  "leaderPid",
  "queryId",
];

/**
 * The LogRecord fields that omitUntalliedFields leaves null besides UNREAD_FIELDS: the volume
 * tally, the outcome join and `analyze`'s report never read them (the sidecar's NDJSON does).
 */
export const UNTALLIED_FIELDS: readonly (keyof LogRecord)[] = [
  "remoteHost",
  "sessionLine",
  "applicationName",
];

/** Markers pgAudit prints in place of a value. */
export type AuditMarker = "<not logged>" | "<none>" | "<previously logged>";

/** One pgAudit entry: the CSV payload after `AUDIT: ` in a log message, decoded. */
export interface AuditEntry {
  /** SESSION or OBJECT (kept as printed). */
  auditType: string;
  statementId: number;
  substatementId: number;
  /** READ, WRITE, FUNCTION, ROLE, DDL, MISC, MISC_SET, ... kept as printed, never rejected. */
  class: string;
  /** e.g. SELECT, CREATE TABLE, ALTER TABLE; may contain spaces. */
  command: string;
  /** e.g. TABLE, TABLE CONSTRAINT; "" when pgAudit printed nothing. */
  objectType: string;
  /** e.g. public.t, t_pkey on public.t; "" when pgAudit printed nothing. */
  objectName: string;
  /** The statement text, or `<previously logged>` with pgaudit.log_statement_once. */
  statement: string;
  /**
   * PARAMETER: a marker (`<not logged>` when log_parameter is off, `<none>` when there were none,
   * `<previously logged>`), or the values; a value is null for SQL NULL, and may itself be the
   * marker `<long param suppressed>`.
   */
  parameter: AuditMarker | (string | null)[];
  /** ROWS with pgaudit.log_rows; null when the field is absent. */
  rows: number | null;
}
