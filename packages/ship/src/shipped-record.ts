import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { isoTimestamp } from "./_iso-timestamp.ts";
import type { ShippedRecord } from "./types.ts";

/**
 * One audit entry in the shipped-record format. `offset` is the record's byte offset in its
 * source (the parser's offset plus where the source started feeding it).
 */
export function toShippedRecord(
  entry: AuditEntry,
  record: LogRecord,
  sourceName: string,
  offset: number,
): ShippedRecord {
  return {
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
    source: { file: sourceName, offset },
    ...(record.invalidUtf8 ? { invalid_utf8: true as const } : {}),
  };
}
