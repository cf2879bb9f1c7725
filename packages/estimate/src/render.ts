/**
 * Renders a log record around a message the way PostgreSQL 15 writes it (csvlog.c, jsonlog.c,
 * elog.c's log_line_prefix), so its size can be counted instead of guessed. Checked byte for
 * byte against the fixtures' real logs (test/render.test.ts).
 */
import type { LogContext, LogDestinationName } from "./types.ts";

/** Per-record fields that vary within one workload. */
export interface RecordFields {
  /** ps display / command tag of the top-level statement (csvlog `command_tag`, jsonlog `ps`). */
  commandTag: string;
  /** Transaction id, 0 when none is assigned yet. */
  xid: number;
  /** The query id printed (`0` when not computed). */
  queryId: string;
}

const TIMESTAMP = "2026-01-01 00:00:00.000";
const START = "2026-01-01 00:00:00";
/** Every session id prints the session start as 8 hex digits (epoch seconds until 2106). */
const START_HEX = "69559a80";

/** A typical 64-bit query id as `%lld` prints it (19 digits; half of them carry a minus sign). */
export const TYPICAL_QUERY_ID = "-4611686018427387904";

const csvQuote = (value: string): string => `"${value.replaceAll('"', '""')}"`;

function sessionId(pid: number): string {
  return `${START_HEX}.${pid.toString(16)}`;
}

function remote(ctx: LogContext): string {
  return ctx.remotePort === null ? ctx.remoteHost : `${ctx.remoteHost}:${ctx.remotePort}`;
}

/** csvlog: 26 columns; the message and text fields CSV-quoted. */
function csvRecord(ctx: LogContext, message: string, f: RecordFields): string {
  const tz = ctx.timezone;
  return [
    `${TIMESTAMP} ${tz}`,
    csvQuote(ctx.user),
    csvQuote(ctx.database),
    String(ctx.pid),
    csvQuote(remote(ctx)),
    sessionId(ctx.pid),
    String(ctx.sessionLine),
    csvQuote(f.commandTag),
    `${START} ${tz}`,
    ctx.vxid,
    String(f.xid),
    "LOG",
    "00000",
    csvQuote(message),
    "", // detail
    "", // hint
    "", // internal query
    "", // internal position
    "", // context
    "", // query (pgAudit hides the statement)
    "", // query position
    "", // location (log_error_verbosity = verbose only)
    csvQuote(ctx.application),
    csvQuote(ctx.backendType),
    ctx.leaderPid === undefined ? "" : String(ctx.leaderPid),
    f.queryId,
  ].join(",");
}

/** jsonlog: keys in PostgreSQL's order, absent ones left out; JSON.stringify escapes as escape_json does. */
function jsonRecord(ctx: LogContext, message: string, f: RecordFields): string {
  const q = JSON.stringify;
  const parts = [
    `"timestamp":${q(`${TIMESTAMP} ${ctx.timezone}`)}`,
    `"user":${q(ctx.user)}`,
    `"dbname":${q(ctx.database)}`,
    `"pid":${ctx.pid}`,
    // No client connection (a parallel worker): no remote_host.
    ...(ctx.remoteHost === "" ? [] : [`"remote_host":${q(ctx.remoteHost)}`]),
    ...(ctx.remotePort === null ? [] : [`"remote_port":${ctx.remotePort}`]),
    `"session_id":${q(sessionId(ctx.pid))}`,
    `"line_num":${ctx.sessionLine}`,
    `"ps":${q(f.commandTag)}`,
    `"session_start":${q(`${START} ${ctx.timezone}`)}`,
    `"vxid":${q(ctx.vxid)}`,
    `"txid":${f.xid}`,
    `"error_severity":"LOG"`,
    `"message":${q(message)}`,
    ...(ctx.application === "" ? [] : [`"application_name":${q(ctx.application)}`]),
    `"backend_type":${q(ctx.backendType)}`,
    ...(ctx.leaderPid === undefined ? [] : [`"leader_pid":${ctx.leaderPid}`]),
    `"query_id":${f.queryId}`,
  ];
  return `{${parts.join(",")}}`;
}

/** Expands a log_line_prefix for a client backend (elog.c log_status_format), padding included. */
export function expandPrefix(prefix: string, ctx: LogContext, f: RecordFields): string {
  let out = "";
  for (let i = 0; i < prefix.length; i++) {
    const ch = prefix[i]!;
    if (ch !== "%") {
      out += ch;
      continue;
    }
    let j = i + 1;
    let pad = "";
    while (j < prefix.length && /[-0-9]/.test(prefix[j]!)) pad += prefix[j++];
    const esc = prefix[j];
    i = j;
    const value = escapeValue(esc, ctx, f);
    const width = pad === "" ? 0 : Math.abs(Number(pad));
    out += pad.startsWith("-") ? value.padEnd(width) : value.padStart(width);
  }
  return out;
}

function escapeValue(esc: string | undefined, ctx: LogContext, f: RecordFields): string {
  switch (esc) {
    // In a session, an unset name prints as [unknown].
    case "a":
      return ctx.application || "[unknown]";
    case "u":
      return ctx.user || "[unknown]";
    case "d":
      return ctx.database || "[unknown]";
    case "b":
      return ctx.backendType;
    case "p":
      return String(ctx.pid);
    case "P":
      return "";
    case "l":
      return String(ctx.sessionLine);
    case "m":
      return `${TIMESTAMP} ${ctx.timezone}`;
    case "t":
    case "s":
      return `${START} ${ctx.timezone}`;
    case "n":
      return "1767225600.000";
    case "i":
      return f.commandTag;
    case "e":
      return "00000";
    case "c":
      return sessionId(ctx.pid);
    case "h":
      return ctx.remoteHost;
    case "r":
      return ctx.remotePort === null ? ctx.remoteHost : `${ctx.remoteHost}(${ctx.remotePort})`;
    case "v":
      return ctx.vxid;
    case "x":
      return String(f.xid);
    case "Q":
      return f.queryId;
    case "q":
      return "";
    case "%":
      return "%";
    default:
      return "";
  }
}

/** stderr: prefix, `LOG:  `, the message with a tab after each newline, a newline. */
function stderrRecord(ctx: LogContext, message: string, f: RecordFields): string {
  return `${expandPrefix(ctx.prefix, ctx, f)}LOG:  ${message.replaceAll("\n", "\n\t")}`;
}

/**
 * syslog as rsyslog's traditional file format writes it: `Mmm dd hh:mm:ss host postgres[pid]: [n-1] `
 * then the stderr line without a timestamp; messages over 900 bytes are split into chunks, each
 * with that header (an approximation: the host name and template are the collector's).
 */
function syslogRecord(ctx: LogContext, message: string, f: RecordFields): string {
  const body = `${expandPrefix(ctx.prefix, ctx, f)}LOG:  ${message.replaceAll("\n", "\n\t")}`;
  const header = `Jan  1 00:00:00 dbhost postgres[${ctx.pid}]: [${ctx.sessionLine}-1] `;
  const chunks = Math.max(1, Math.ceil(Buffer.byteLength(body) / 900));
  return `${header}${body}`.padEnd(Buffer.byteLength(body) + chunks * header.length + (chunks - 1), " ");
}

/** The record exactly as written, without its terminating newline. */
export function renderRecord(
  destination: LogDestinationName,
  ctx: LogContext,
  message: string,
  fields: RecordFields,
): string {
  switch (destination) {
    case "csvlog":
      return csvRecord(ctx, message, fields);
    case "jsonlog":
      return jsonRecord(ctx, message, fields);
    case "stderr":
      return stderrRecord(ctx, message, fields);
    case "syslog":
      return syslogRecord(ctx, message, fields);
  }
}

/** On-disk bytes of one record, newline included (the `analyze` report's unit). */
export function recordBytes(
  destination: LogDestinationName,
  ctx: LogContext,
  message: string,
  fields: RecordFields,
): number {
  return Buffer.byteLength(renderRecord(destination, ctx, message, fields), "utf8") + 1;
}
