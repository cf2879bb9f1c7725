/** Builders for the records and entries the meter tests feed; only the fields the meter reads matter. */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";

export function record(over: Partial<LogRecord> = {}): LogRecord {
  return {
    offset: 0,
    size: 100,
    timestamp: null,
    user: "app",
    database: "shop",
    pid: 1,
    remoteHost: null,
    sessionId: null,
    sessionLine: null,
    commandTag: null,
    sessionStart: null,
    virtualTransactionId: null,
    transactionId: null,
    severity: "LOG",
    sqlState: null,
    message: "AUDIT: ...",
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
    ...over,
  };
}

export function auditEntry(over: Partial<AuditEntry> = {}): AuditEntry {
  return {
    auditType: "SESSION",
    statementId: 1,
    substatementId: 1,
    class: "READ",
    command: "SELECT",
    objectType: "TABLE",
    objectName: "public.t",
    statement: "select 1",
    parameter: "<not logged>",
    rows: null,
    ...over,
  };
}

/** A clock the test moves by hand; starts on a whole second so bucket edges are predictable. */
export class ManualClock {
  ms = 1_700_000_000_000;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The engine's gc(), for memory assertions (vitest does not start node with --expose-gc). */
export function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}
