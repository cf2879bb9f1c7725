/**
 * The log a run wrote, exactly: a marker record before and after the run, and our parser over
 * the bytes between them — so nothing written before or after (set-up, statistics queries)
 * is counted.
 */
import { randomUUID } from "node:crypto";
import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import type { RunLog } from "@auditpipe/overhead";
import {
  AUDIT_PREFIX,
  createParser,
  decodeAuditEntry,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import type pg from "pg";
import type { LogFormat } from "./target.ts";

export interface LogPosition {
  path: string;
  /** Byte offset in `path`. */
  offset: number;
}

/** How far back from a file's end a just-written marker is looked for. */
const MARKER_WINDOW = 4 << 20;
const MARKER_TIMEOUT_MS = 15_000;

function readRange(path: string, from: number, to: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(Math.max(0, to - from));
    const n = readSync(fd, buf, 0, buf.length, from);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Sessions that have the marker function (it lives in the session's temporary schema). */
const withMarkerFunction = new WeakSet<pg.Client>();

/**
 * Logs `id` as one single-line record. A RAISE at the default verbosity also logs CONTEXT and
 * STATEMENT lines, which syslog sends as further chunks of the message: the range after the
 * marker's line would then start inside a message. The function's own settings leave both out
 * while it runs, without changing what anything else logs. Created once per session, so the
 * runs' log ranges hold only the call.
 */
async function raiseMarker(client: pg.Client, id: string): Promise<void> {
  if (!withMarkerFunction.has(client)) {
    await client.query(
      "CREATE OR REPLACE FUNCTION pg_temp.auditpipe_bench_marker(id text) RETURNS void LANGUAGE plpgsql SET log_error_verbosity = terse SET log_min_error_statement = panic AS $$ BEGIN RAISE LOG '%', id; END $$",
    );
    withMarkerFunction.add(client);
  }
  await client.query("SELECT pg_temp.auditpipe_bench_marker($1)", [id]);
}

/**
 * Writes a marker record through the logging collector and waits until it is in the file:
 * resolves with the offsets where that record starts and ends. The collector writes
 * asynchronously, and everything the run's backends logged went down the pipe before it.
 */
export async function writeMarker(
  client: pg.Client,
  logFile: () => Promise<{ path: string } | null>,
  after: LogPosition | null,
): Promise<{ start: LogPosition; end: LogPosition } | null> {
  const id = `auditpipe-bench-marker-${randomUUID()}`;
  await raiseMarker(client, id);
  const needle = Buffer.from(id);
  const deadline = Date.now() + MARKER_TIMEOUT_MS;
  for (;;) {
    const file = await logFile();
    if (!file) return null;
    const size = statSync(file.path).size;
    const from = Math.max(after && after.path === file.path ? after.offset : 0, size - MARKER_WINDOW);
    const buf = readRange(file.path, from, size);
    const at = buf.indexOf(needle);
    if (at >= 0) {
      const lineStart = buf.lastIndexOf(0x0a, at) + 1;
      const nl = buf.indexOf(0x0a, at);
      const lineEnd = nl < 0 ? buf.length : nl + 1;
      return {
        start: { path: file.path, offset: from + lineStart },
        end: { path: file.path, offset: from + lineEnd },
      };
    }
    if (Date.now() > deadline) throw new Error(`the log marker did not reach ${file.path} within 15 s`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A query PostgreSQL's foreign-key triggers run (ri_triggers.c: `SELECT 1 FROM [ONLY] pk x WHERE
 * col OPERATOR(pg_catalog.=) $1 … FOR KEY SHARE OF x`, and the cascades' DELETE and UPDATE). pgaudit
 * numbers substatements as it logs them, so under `read` — the INSERT that fired the checks not
 * logged — the first check is substatement 1, and only its text says it is nested.
 */
export function isReferentialQuery(statement: string): boolean {
  return (
    statement.includes(" OPERATOR(pg_catalog.") &&
    (statement.startsWith("SELECT 1 FROM ") ||
      statement.startsWith("DELETE FROM ") ||
      statement.startsWith("UPDATE "))
  );
}

/** Counts the records between two positions (the start's file to its end, then the end's file, when the log rotated). */
export async function countLogRange(
  from: LogPosition,
  to: LogPosition,
  format: LogFormat,
  prefix: string | undefined,
): Promise<RunLog> {
  const segments =
    from.path === to.path
      ? [{ path: from.path, start: from.offset, end: to.offset }]
      : [
          { path: from.path, start: from.offset, end: statSync(from.path).size },
          { path: to.path, start: 0, end: to.offset },
        ];
  const kinds = { misc: 0, nested: 0 };
  const log: RunLog = { records: 0, auditEntries: 0, bytes: 0, malformed: 0, auditKinds: kinds };
  for (const seg of segments) {
    if (seg.end <= seg.start) continue;
    log.bytes += seg.end - seg.start;
    const parser = createParser(
      format,
      {
        record(record: LogRecord): void {
          log.records++;
          if (!record.message.startsWith(AUDIT_PREFIX)) return;
          log.auditEntries++;
          // A nested entry first (a foreign-key check, a function's SET), then MISC.
          const entry = decodeAuditEntry(record, () => {});
          if (entry === undefined) return;
          if (entry.substatementId > 1 || isReferentialQuery(entry.statement)) kinds.nested++;
          else if (entry.class === "MISC") kinds.misc++;
        },
        malformed(_error: MalformedRecord): void {
          log.malformed++;
        },
      },
      prefix === undefined ? {} : { prefix },
    );
    for await (const chunk of createReadStream(seg.path, { start: seg.start, end: seg.end - 1 }))
      parser.push(chunk as Buffer);
    parser.end();
  }
  return log;
}
