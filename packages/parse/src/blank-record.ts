/** LogRecord construction shared by code that fills fields one by one (parsers, analyze's chunk join). */
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
