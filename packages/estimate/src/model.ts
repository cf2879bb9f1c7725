/**
 * The volume model: a workload and a candidate configuration in, entries/s by class, bytes per
 * entry, MB/hour, GB/day, $/month and the overhead range out. Pure: no I/O, no clock.
 */
import {
  type EntryTemplate,
  fkActionEntries,
  fkCheckEntries,
  resolveConfig,
  statementEntries,
} from "./_entries.ts";
import { fkChecksOf, fkContext } from "./_fk-rules.ts";
import { withConstantBytes, withConstants } from "./_sql.ts";
import { sessionClasses } from "./configs.ts";
import { type CostOptions, costOf } from "./cost.ts";
import type { OverheadCalibration } from "./overhead.ts";
import { overheadRange } from "./overhead-range.ts";
import { recordBytes, TYPICAL_QUERY_ID } from "./render.ts";
import type {
  AuditConfig,
  Estimate,
  LogContext,
  ParamValue,
  Rate,
  StatementLoad,
  Workload,
} from "./types.ts";

export interface EstimateOptions extends CostOptions {
  /** Whether the log directory shares a disk with the data directory (overhead model); default true. */
  logOnDataDisk?: boolean;
  /** Overhead coefficients measured by `auditpipe bench` (the public ones when absent). */
  calibration?: OverheadCalibration;
}

/** Sessions of a connection pool live for hours: line numbers and statement ids of about this size. */
const LONG_SESSION_LINES = 200_000;

/** Mean printed digits of the integers 1..n (line numbers and statement ids grow through a session). */
export function meanDigits(n: number): number {
  if (n <= 1) return 1;
  let total = 0;
  for (let d = 1, lo = 1; lo <= n; d++, lo *= 10) total += d * (Math.min(n, lo * 10 - 1) - lo + 1);
  return total / n;
}

interface Stream {
  entries: EntryTemplate[];
  perSec: number;
  commandTag: string;
  /** Whether entries print a transaction id (writes and what they fire). */
  xid: boolean;
  /** Written by a parallel worker: no client address, a leader pid, its own line numbers. */
  worker?: boolean;
}

function streams(workload: Workload, config: AuditConfig): Stream[] {
  const r = resolveConfig(config);
  const out: Stream[] = [];
  const explainedInserts = new Map<string, number>();
  // Counted: the server's own nested statements (RI checks and actions, function and trigger
  // bodies) are in the workload with their calls; nothing of them is modelled on top.
  const counted = workload.nestedStatements === "counted";
  const fk = counted ? undefined : fkContext(workload);
  for (const s of workload.statements) {
    const text = loggedText(s, workload.log);
    const write = s.kind === "INSERT" || s.kind === "UPDATE" || s.kind === "DELETE";
    const entries = statementEntries(r, s, text);
    const xid = write || s.nested === true;
    out.push({ entries, perSec: s.callsPerSec, commandTag: tagOf(s), xid });
    // Each parallel worker runs the plan and logs its entries again.
    if (s.parallelWorkers)
      out.push({
        entries,
        perSec: s.callsPerSec * s.parallelWorkers,
        commandTag: tagOf(s),
        xid,
        worker: true,
      });
    if (counted) continue;
    let sub = 2;
    for (const action of fkChecksOf(s, workload.foreignKeys, fk)) {
      out.push({
        entries:
          action.kind === "check"
            ? fkCheckEntries(r, action.table, action.columns, sub++)
            : fkActionEntries(r, action.kind, action.table, action.columns, sub++),
        perSec: s.callsPerSec * action.perCall,
        commandTag: tagOf(s),
        xid: true,
      });
    }
    for (const use of s.relations)
      if (use.write === "INSERT")
        explainedInserts.set(
          use.relation,
          (explainedInserts.get(use.relation) ?? 0) + s.callsPerSec * s.rowsPerCall,
        );
  }
  // Rows inserted that no statement explains (COPY, triggers, functions) still fire FK checks.
  for (const [table, rate] of Object.entries(counted ? {} : (workload.tableInsertsPerSec ?? {}))) {
    const extra = rate - (explainedInserts.get(table) ?? 0);
    if (extra <= rate * 0.05) continue;
    for (const fk of workload.foreignKeys.filter((f) => f.child === table))
      out.push({
        entries: fkCheckEntries(r, fk.parent, fk.parentColumns, 2),
        perSec: extra * (workload.fkCheckShares?.[fk.parent] ?? 1),
        commandTag: "COPY",
        xid: true,
      });
  }
  return out;
}

const tagOf = (s: StatementLoad): string =>
  s.kind === "UTILITY" ? (s.command ?? "???") : s.command === "MERGE" ? "MERGE" : s.kind;

/** The text pgaudit logs: constants where pg_stat_statements shows `$n`, unless they are real parameters. */
function loggedText(s: StatementLoad, log: LogContext): string {
  // The text as it ran (bind parameters' `$n` included), where it was seen.
  if (s.observed) return withConstantBytes(s.text, s.observed.bytes, s.observed.quotes - quotesIn(s.text));
  if ((s.params ?? 0) > 0) return s.text;
  return withConstants(s.text, log.constantLength);
}

const quotesIn = (text: string): number => text.split('"').length - 1;

/**
 * A value of that size as pgaudit prints one parameter: CSV-quoted when it holds `,` `"` CR or
 * LF (the whole list is quoted again after).
 */
function paramText(v: ParamValue): string {
  const quotes = Math.round(v.quotes);
  const special = v.quoted >= 0.5 && quotes === 0 ? "," : "";
  const value =
    '"'.repeat(quotes) + special + "9".repeat(Math.max(0, Math.round(v.bytes) - quotes - special.length));
  return v.quoted >= 0.5 ? auditCsv(value) : value;
}

/** pgaudit's append_valid_csv: quoted (quotes doubled) when the value holds `,` `"` CR or LF. */
export function auditCsv(value: string): string {
  return /[,"\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function message(e: EntryTemplate, config: AuditConfig, log: LogContext, statementId: number): string {
  let tail: string;
  if (typeof e.statement === "string") tail = `${e.statement},${e.statement}`;
  else {
    const n = e.statement.params;
    const values = (e.statement.values ?? Array.from({ length: n }, () => undefined))
      .map((v) => (v ? paramText(v) : "9".repeat(log.constantLength)))
      .join(",");
    const param = !config.logParameter ? "<not logged>" : n === 0 ? "<none>" : auditCsv(values);
    tail = `${auditCsv(e.statement.text)},${param}`;
  }
  const rows = config.logRows ? `,${e.rows}` : "";
  return `AUDIT: ${e.auditType},${statementId},${e.substatement},${e.class},${auditCsv(e.command)},${e.objectType},${auditCsv(e.objectName)},${tail}${rows}`;
}

/** The context with the session-dependent numbers (line, statement id, vxid) set for a line rate. */
function sessionContext(log: LogContext, workload: Workload, entriesPerSec: number): LogContext {
  const sessions = workload.sessionsPerSec ?? 0;
  const perSession = (rate: number): number => (sessions > 0 ? rate / sessions : LONG_SESSION_LINES);
  const lines = Math.max(1, perSession(entriesPerSec));
  const txns = Math.max(1, perSession(workload.transactionsPerSec));
  const typical = (n: number): number => 10 ** Math.round(meanDigits(Math.round(n)) - 1);
  const backendId = log.vxid.split("/")[0] ?? "3";
  return {
    ...log,
    sessionLine: typical(lines),
    statementId: typical(lines),
    vxid: `${backendId}/${typical(txns)}`,
  };
}

function add(map: Record<string, Rate>, key: string, entries: number, bytes: number): void {
  const t = map[key] ?? { entriesPerSec: 0, bytesPerSec: 0 };
  t.entriesPerSec += entries;
  t.bytesPerSec += bytes;
  map[key] = t;
}

/** Bytes per second PostgreSQL's own log_statement / log_duration add (lines that are not audit entries). */
function otherLines(
  workload: Workload,
  config: AuditConfig,
  ctx: LogContext,
): { lines: number; bytes: number } {
  let lines = 0;
  let bytes = 0;
  const level = config.pgLogStatement ?? "none";
  const queryId = ctx.queryIds ? TYPICAL_QUERY_ID : "0";
  for (const s of workload.statements) {
    const fields = { commandTag: tagOf(s), xid: 0, queryId };
    const cls = s.kind === "UTILITY" ? undefined : s.kind;
    const isDdl = s.kind === "UTILITY" && /^(CREATE|ALTER|DROP|GRANT|REVOKE|COMMENT)/.test(s.command ?? "");
    const isMod = cls === "INSERT" || cls === "UPDATE" || cls === "DELETE" || isDdl;
    if (level === "all" || (level === "mod" && isMod) || (level === "ddl" && isDdl)) {
      lines += s.callsPerSec;
      bytes += s.callsPerSec * recordBytes(ctx.destination, ctx, `statement: ${loggedText(s, ctx)}`, fields);
    }
    if (config.pgLogDuration) {
      lines += s.callsPerSec;
      bytes += s.callsPerSec * recordBytes(ctx.destination, ctx, "duration: 0.123 ms", fields);
    }
  }
  return { lines, bytes };
}

/** What `config` would write on `workload`. */
export function estimate(workload: Workload, config: AuditConfig, options: EstimateOptions = {}): Estimate {
  const all = streams(workload, config);
  const entriesPerSec = all.reduce((sum, s) => sum + s.perSec * s.entries.length, 0);
  const ctx = sessionContext(workload.log, workload, entriesPerSec);
  const queryId = ctx.queryIds ? TYPICAL_QUERY_ID : "0";
  // A parallel worker is a process of its own, started for the one statement, with no client
  // connection: no user, database, application or client address (measured on PostgreSQL 15).
  const worker: LogContext = {
    ...ctx,
    user: "",
    database: "",
    application: "",
    remoteHost: "",
    remotePort: null,
    backendType: "parallel worker",
    leaderPid: ctx.pid,
    sessionLine: 1,
    statementId: 1,
  };
  const byClass: Record<string, Rate> = {};
  const byAuditType: Record<string, Rate> = {};
  const byObject: Record<string, Rate> = {};
  let bytesPerSec = 0;
  // Lines by kind, counted as bench counts them (a nested entry first, then MISC): what they cost differs.
  let nestedPerSec = 0;
  let miscPerSec = 0;
  for (const s of all) {
    const c = s.worker ? worker : ctx;
    for (const e of s.entries) {
      if (e.substatement > 1) nestedPerSec += s.perSec;
      else if (e.class === "MISC") miscPerSec += s.perSec;
      const bytes =
        s.perSec *
        recordBytes(c.destination, c, message(e, config, c, c.statementId), {
          commandTag: s.commandTag,
          xid: s.xid ? workload.log.xid : 0,
          queryId,
        });
      bytesPerSec += bytes;
      add(byClass, e.class, s.perSec, bytes);
      add(byAuditType, e.auditType, s.perSec, bytes);
      if (e.objectName !== "") add(byObject, e.objectName, s.perSec, bytes);
    }
  }
  const other = otherLines(workload, config, ctx);
  const cost = costOf(
    (bytesPerSec + other.bytes) * 86_400,
    bytesPerSec * 86_400,
    workload.log.destination,
    options,
  );
  const tps = workload.transactionsPerSec;
  const totalBytes = bytesPerSec + other.bytes;
  const overhead = overheadRange({
    workload,
    entriesPerSec,
    linesPerSec: entriesPerSec + other.lines,
    miscLinesPerSec: miscPerSec,
    nestedLinesPerSec: nestedPerSec,
    bytesPerLine: entriesPerSec + other.lines > 0 ? totalBytes / (entriesPerSec + other.lines) : 0,
    // Once anything is configured, pgaudit's hooks do work on every statement, logged or not.
    auditing: sessionClasses(config.log).size > 0 || Boolean(config.role),
    logOnDataDisk: options.logOnDataDisk ?? true,
    ...(options.calibration ? { calibration: options.calibration } : {}),
  });
  const notes: string[] = [];
  if (
    workload.statements.some(
      (s) => s.kind === "SELECT" && s.relations.length === 0 && /\bfrom\b/i.test(s.text),
    )
  )
    notes.push("some statements name relations the catalog does not know: counted as touching none");
  if (workload.nestedStatements !== "counted") notes.push(...fkContext(workload).notes);
  return {
    config: config.name,
    entriesPerSec,
    bytesPerSec,
    bytesPerEntry: entriesPerSec > 0 ? bytesPerSec / entriesPerSec : 0,
    entriesPerTransaction: tps > 0 ? entriesPerSec / tps : 0,
    bytesPerTransaction: tps > 0 ? bytesPerSec / tps : 0,
    otherBytesPerSec: other.bytes,
    mbPerHour: (totalBytes * 3600) / 1e6,
    gbPerDay: (totalBytes * 86_400) / 1e9,
    dollarsPerMonth: cost.ingestion.dollarsPerMonth,
    pricePerGb: cost.ingestion.pricePerGb,
    archive: cost.archive,
    byClass,
    byAuditType,
    byObject,
    overhead,
    notes,
  };
}
