/**
 * Builds one LogRecord from the lines PostgreSQL wrote for one message: the head line
 * (`<prefix>ERROR:  text`), tab-led continuation lines, and the DETAIL/HINT/QUERY/CONTEXT/
 * LOCATION/STATEMENT lines that repeat the prefix (send_message_to_server_log in elog.c).
 * Shared by the stderr and syslog parsers.
 */
import type { PrefixFields } from "./prefix.ts";
import type { LogRecord } from "./types.ts";

/** Which field a line's text goes to. */
const MESSAGE = 0;
const DETAIL = 1;
const HINT = 2;
const QUERY = 3;
const CONTEXT = 4;
const STATEMENT = 5;
const LOCATION = 6;
const IGNORED = 7;

/** Severity words of the lines that belong to the message before them, and where their text goes. */
const SECONDARY: Record<string, number> = {
  DETAIL,
  HINT,
  QUERY,
  CONTEXT,
  STATEMENT,
  LOCATION,
  BACKTRACE: IGNORED,
};

/** The field a secondary line fills, or -1 when `severity` starts a message of its own. */
export function secondaryKind(severity: string): number {
  return SECONDARY[severity] ?? -1;
}

export function newRecord(offset: number, f: PrefixFields, message: string): LogRecord {
  return {
    offset,
    size: 0,
    timestamp: f.timestamp,
    user: f.user,
    database: f.database,
    pid: f.pid,
    remoteHost: f.remoteHost,
    sessionId: f.sessionId,
    sessionLine: f.sessionLine,
    commandTag: f.commandTag,
    sessionStart: f.sessionStart,
    virtualTransactionId: f.virtualTransactionId,
    transactionId: f.transactionId,
    severity: f.severity,
    sqlState: f.sqlState,
    message,
    detail: null,
    hint: null,
    internalQuery: null,
    internalPosition: null,
    context: null,
    query: null,
    queryPosition: null,
    location: null,
    applicationName: f.applicationName,
    backendType: f.backendType,
    leaderPid: f.leaderPid,
    queryId: f.queryId,
  };
}

/** Appends text (a secondary line's, or a continuation line's without its tab) to the field `kind`. */
export function appendTo(record: LogRecord, kind: number, text: string, newField: boolean): void {
  switch (kind) {
    case MESSAGE:
      record.message = join(record.message, text, newField);
      break;
    case DETAIL:
      record.detail = join(record.detail, text, newField);
      break;
    case HINT:
      record.hint = join(record.hint, text, newField);
      break;
    case QUERY:
      record.internalQuery = join(record.internalQuery, text, newField);
      break;
    case CONTEXT:
      record.context = join(record.context, text, newField);
      break;
    case STATEMENT:
      record.query = join(record.query, text, newField);
      break;
    case LOCATION:
      record.location = join(record.location, text, newField);
      break;
  }
}

function join(current: string | null, text: string, newField: boolean): string {
  return newField || current === null ? text : `${current}\n${text}`;
}

const AT_CHARACTER = " at character ";

/**
 * stderr appends ` at character N` to the message where csvlog has a separate cursor position
 * (cursorpos, or internalpos when there is an internal query). Only non-LOG messages carry it;
 * pgAudit's `LOG:  AUDIT: ...` never has it, so statement text ending that way is left alone.
 */
export function finishRecord(record: LogRecord): void {
  if (record.severity === "LOG") return;
  const msg = record.message;
  const at = msg.lastIndexOf(AT_CHARACTER);
  if (at < 0) return;
  const digits = at + AT_CHARACTER.length;
  if (digits >= msg.length) return;
  let n = 0;
  for (let i = digits; i < msg.length; i++) {
    const c = msg.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return;
    n = n * 10 + c - 0x30;
  }
  record.message = msg.slice(0, at);
  if (record.internalQuery !== null) record.internalPosition = n;
  else record.queryPosition = n;
}
