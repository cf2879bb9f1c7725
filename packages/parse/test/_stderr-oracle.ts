/**
 * Test helpers for the stderr and syslog parsers: csv-parse over PostgreSQL's csvlog is the
 * oracle (it shares no code with @auditpipe/parse), and records are compared per pid because
 * the logging collector may interleave different processes differently across destinations.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { LogParser, LogRecord, MalformedRecord, RecordSink } from "@auditpipe/parse";
import { parse } from "csv-parse/sync";

/** The LogRecord fields every destination carries (the prefix adds more, see `withPrefixFields`). */
export type Comparable = Partial<Record<keyof LogRecord, unknown>>;

const CSV_COLUMNS = [
  "log_time",
  "user_name",
  "database_name",
  "process_id",
  "connection_from",
  "session_id",
  "session_line_num",
  "command_tag",
  "session_start_time",
  "virtual_transaction_id",
  "transaction_id",
  "error_severity",
  "sql_state_code",
  "message",
  "detail",
  "hint",
  "internal_query",
  "internal_query_pos",
  "context",
  "query",
  "query_pos",
  "location",
  "application_name",
  "backend_type",
  "leader_pid",
  "query_id",
] as const;

type CsvRow = Record<(typeof CSV_COLUMNS)[number], string>;

export function readMaybeGz(file: string): Buffer {
  const raw = readFileSync(file);
  return file.endsWith(".gz") ? gunzipSync(raw) : raw;
}

export function csvRows(csv: Buffer | string): CsvRow[] {
  const rows = parse(csv, { relax_column_count: false }) as string[][];
  return rows.map((r) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, r[i] ?? ""])) as CsvRow);
}

const nul = (v: string): string | null => (v === "" ? null : v);
const num = (v: string): number | null => (v === "" ? null : Number(v));

/** Which prefix-carried fields to compare, LogRecord key → csvlog column. */
export type PrefixFieldMap = Partial<Record<keyof LogRecord, (row: CsvRow) => unknown>>;

export const PREFIX_FIELDS: Record<string, (row: CsvRow) => unknown> = {
  timestamp: (r) => r.log_time,
  user: (r) => nul(r.user_name),
  database: (r) => nul(r.database_name),
  applicationName: (r) => nul(r.application_name),
  remoteHost: (r) => nul(r.connection_from),
  host: (r) => nul(r.connection_from.replace(/:\d+$/, "")),
  sessionId: (r) => r.session_id,
  sessionStart: (r) => r.session_start_time,
  commandTag: (r) => nul(r.command_tag),
  virtualTransactionId: (r) => nul(r.virtual_transaction_id),
  transactionId: (r) => r.transaction_id,
  sqlState: (r) => r.sql_state_code,
  backendType: (r) => r.backend_type,
  leaderPid: (r) => num(r.leader_pid),
  queryId: (r) => r.query_id,
};

/** csvlog rows as the comparable part of a LogRecord, grouped by pid in file order. */
export function expectedByPid(rows: CsvRow[], prefixFields: string[]): Map<number, Comparable[]> {
  const out = new Map<number, Comparable[]>();
  for (const r of rows) {
    const c: Comparable = {
      pid: Number(r.process_id),
      severity: r.error_severity,
      message: r.message,
      detail: nul(r.detail),
      hint: nul(r.hint),
      internalQuery: nul(r.internal_query),
      context: nul(r.context),
      query: nul(r.query),
      queryPosition: num(r.query_pos),
    };
    for (const f of prefixFields)
      c[(f === "host" ? "remoteHost" : f) as keyof LogRecord] = PREFIX_FIELDS[f]!(r);
    const list = out.get(c.pid as number) ?? [];
    list.push(c);
    out.set(c.pid as number, list);
  }
  return out;
}

export function actualByPid(records: LogRecord[], keys: string[]): Map<number, Comparable[]> {
  const out = new Map<number, Comparable[]>();
  const all = [
    "pid",
    "severity",
    "message",
    "detail",
    "hint",
    "internalQuery",
    "context",
    "query",
    "queryPosition",
  ];
  for (const rec of records) {
    const c: Comparable = {};
    for (const k of [...all, ...keys]) {
      const key = (k === "host" ? "remoteHost" : k) as keyof LogRecord;
      c[key] = rec[key];
    }
    const list = out.get(rec.pid ?? -1) ?? [];
    list.push(c);
    out.set(rec.pid ?? -1, list);
  }
  return out;
}

export interface Collected {
  records: LogRecord[];
  malformed: MalformedRecord[];
  sink: RecordSink;
}

export function collector(): Collected {
  const records: LogRecord[] = [];
  const malformed: MalformedRecord[] = [];
  return {
    records,
    malformed,
    sink: { record: (r) => records.push(r), malformed: (m) => malformed.push(m) },
  };
}

/** Feeds `data` to a parser in the given chunk sizes (cycled), then ends it. */
export function feed(parser: LogParser, data: Uint8Array, sizes: number[] = [data.length]): void {
  let pos = 0;
  let i = 0;
  while (pos < data.length) {
    const n = Math.max(1, sizes[i++ % sizes.length]!);
    parser.push(data.subarray(pos, pos + n));
    pos += n;
  }
  parser.end();
}
