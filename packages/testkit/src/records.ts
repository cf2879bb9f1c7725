/**
 * Hand-made log records and audit entries for unit tests of code that counts or converts them
 * (the meter, the API, the advisor): a test names only the fields it is about. Never passed off
 * as real logs; real records come from the captures in fixtures/.
 *
 * Typed by shape, not with @auditpipe/parse's LogRecord and AuditEntry: testkit depends on no
 * package of ours (they all depend on it). TypeScript checks the shape where a record is used, so
 * a field added to LogRecord fails the tests' typecheck until it is added here.
 */

/** The fields of @auditpipe/parse's LogRecord. */
export interface LogRecordShape {
  offset: number;
  size: number;
  timestamp: string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  remoteHost: string | null;
  sessionId: string | null;
  sessionLine: number | null;
  commandTag: string | null;
  sessionStart: string | null;
  virtualTransactionId: string | null;
  transactionId: string | null;
  severity: string;
  sqlState: string | null;
  message: string;
  detail: string | null;
  hint: string | null;
  internalQuery: string | null;
  internalPosition: number | null;
  context: string | null;
  query: string | null;
  queryPosition: number | null;
  location: string | null;
  applicationName: string | null;
  backendType: string | null;
  leaderPid: number | null;
  queryId: string | null;
}

/** The fields of @auditpipe/parse's AuditEntry. */
export interface AuditEntryShape {
  auditType: string;
  statementId: number;
  substatementId: number;
  class: string;
  command: string;
  objectType: string;
  objectName: string;
  statement: string;
  parameter: "<not logged>" | "<none>" | "<previously logged>" | (string | null)[];
  rows: number | null;
}

/**
 * A LOG record of user `app` in database `shop`, 100 bytes at offset 0, without a timestamp;
 * every other field null. `over` sets any field.
 */
export function logRecord<T extends Partial<LogRecordShape> = object>(over?: T): LogRecordShape & T {
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
    ...(over as T),
  };
}

/** A SESSION READ SELECT on table public.t, parameters not logged; `over` sets any field. */
export function auditEntry<T extends Partial<AuditEntryShape> = object>(over?: T): AuditEntryShape & T {
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
    ...(over as T),
  };
}
