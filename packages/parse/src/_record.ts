/** LogRecord construction shared by parsers that fill fields one by one. */
import type { LogRecord } from "./types.ts";

/** A record with every field present (null or empty), so all records share one object shape. */
export function blankRecord(offset: number, size: number): LogRecord {
  return {
    offset,
    size,
    timestamp: null,
    user: null,
    database: null,
    pid: null,
    remoteHost: null,
    sessionId: null,
    sessionLine: null,
    commandTag: null,
    sessionStart: null,
    virtualTransactionId: null,
    transactionId: null,
    severity: "",
    sqlState: null,
    message: "",
    detail: null,
    hint: null,
    internalQuery: null,
    internalPosition: null,
    context: null,
    query: null,
    queryPosition: null,
    location: null,
    applicationName: null,
    backendType: null,
    leaderPid: null,
    queryId: null,
  };
}

/** csvlog's location column: `func, file:line`, or `file:line` without a function name. */
export function formatLocation(func: string | null, file: string | null, line: string | null): string | null {
  if (file === null) return func;
  const at = line === null ? file : `${file}:${line}`;
  return func === null ? at : `${func}, ${at}`;
}
