import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { isoTimestamp } from "./_iso-timestamp.ts";
import type { ShippedAttempt, ShippedOutcome, ShippedRecord } from "./types.ts";

/**
 * One audit entry in the shipped-record format. `offset` is the record's byte offset in its
 * source (the parser's offset plus where the source started feeding it); the outcome is
 * `pending` unless given (an entry is encoded before its outcome is known).
 */
export function toShippedRecord(
  entry: AuditEntry,
  record: LogRecord,
  sourceName: string,
  offset: number,
  outcome: ShippedOutcome = "pending",
  sqlstate: string | null = null,
): ShippedRecord {
  return {
    record: "entry",
    ts: isoTimestamp(record.timestamp),
    user: record.user,
    database: record.database,
    pid: record.pid,
    session_id: record.sessionId,
    session_line: record.sessionLine,
    application_name: record.applicationName,
    remote_host: record.remoteHost,
    audit_type: entry.auditType,
    statement_id: entry.statementId,
    substatement_id: entry.substatementId,
    class: entry.class,
    command: entry.command,
    object_type: entry.objectType,
    object_name: entry.objectName,
    statement: entry.statement,
    parameter: entry.parameter,
    rows: entry.rows,
    outcome,
    sqlstate,
    source: { file: sourceName, offset },
    ...(record.invalidUtf8 ? { invalid_utf8: true as const } : {}),
  };
}

/** An ERROR or FATAL of no audited statement (a refused statement, a failed login) as shipped. */
export function toShippedAttempt(record: LogRecord, sourceName: string, offset: number): ShippedAttempt {
  return {
    record: "attempt",
    ts: isoTimestamp(record.timestamp),
    user: record.user,
    database: record.database,
    pid: record.pid,
    session_id: record.sessionId,
    session_line: record.sessionLine,
    application_name: record.applicationName,
    remote_host: record.remoteHost,
    severity: record.severity,
    sqlstate: record.sqlState,
    message: record.message,
    statement: record.query,
    source: { file: sourceName, offset },
    ...(record.invalidUtf8 ? { invalid_utf8: true as const } : {}),
  };
}
