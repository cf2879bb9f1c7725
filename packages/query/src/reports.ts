/**
 * The named reports a compliance team asks for, each one SELECT over the `audit` view (pure: SQL
 * text only, every value quoted as a literal). docs/archive.md ("Named reports") describes them.
 */
import { quoteLiteral } from "@auditpipe/compact";

export const REPORT_NAMES = ["who-touched", "failed", "grants", "by-user"] as const;
export type ReportName = (typeof REPORT_NAMES)[number];

export interface ReportParams {
  /** who-touched: the table (`public.accounts`, or `accounts` for any schema). */
  table?: string;
  /** failed (and who-touched, grants): only this database user. */
  user?: string;
}

/** A statement's text as the report shows it: one line, at most 200 characters. */
const STATEMENT = `CASE WHEN length(statement) > 200 THEN left(regexp_replace(statement, '\\s+', ' ', 'g'), 199) || '…'
  ELSE regexp_replace(statement, '\\s+', ' ', 'g') END AS statement`;

function userFilter(params: ReportParams): string {
  return params.user === undefined ? "" : ` AND "user" = ${quoteLiteral(params.user)}`;
}

/** Escapes a string for a regular expression (RE2, as DuckDB uses). */
function regexEscape(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");
}

/**
 * who-touched TABLE: every entry whose `object_name` is the table (schema-qualified as pgAudit
 * writes it; a bare name matches it in any schema), and — because session logging writes one entry
 * per statement with no object when `pgaudit.log_relation` is off (and for statements pgAudit gives
 * no object, such as DO blocks and functions) — every entry without an object whose statement text
 * names the table as a whole word. `matched_by` says which.
 */
function whoTouched(params: ReportParams): string {
  const table = params.table;
  if (!table) throw new Error("who-touched needs a table");
  const bare = table.includes(".") ? table.slice(table.lastIndexOf(".") + 1) : table;
  const objectMatch = table.includes(".")
    ? `object_name = ${quoteLiteral(table)}`
    : `(object_name = ${quoteLiteral(table)} OR object_name LIKE ${quoteLiteral(`%.${table.replaceAll("%", "\\%").replaceAll("_", "\\_")}`)} ESCAPE '\\')`;
  const word = `(?i)(^|[^a-z0-9_$])"?${regexEscape(bare)}"?($|[^a-z0-9_$])`;
  return `SELECT ts, "user", database, class, command, object_name, outcome,
    CASE WHEN ${objectMatch} THEN 'object' ELSE 'statement text' END AS matched_by, ${STATEMENT}
  FROM audit
  WHERE record = 'entry' AND (${objectMatch}
     OR (coalesce(object_name, '') = '' AND regexp_matches(statement, ${quoteLiteral(word)})))${userFilter(params)}
  ORDER BY ts, session_id, session_line`;
}

/** failed --user U: statements that failed or were rolled back, and attempts the server refused. */
function failed(params: ReportParams): string {
  return `SELECT ts, "user", database, record, command, outcome, sqlstate, ${STATEMENT}
  FROM audit
  WHERE (record = 'attempt' OR outcome IN ('failed', 'rolled_back'))${userFilter(params)}
  ORDER BY ts, session_id, session_line`;
}

/** grants: DDL and ROLE changes over time (GRANT, REVOKE, CREATE/ALTER/DROP of objects and roles). */
function grants(params: ReportParams): string {
  return `SELECT ts, "user", database, class, command, object_type, object_name, outcome, ${STATEMENT}
  FROM audit
  WHERE record = 'entry' AND class IN ('ROLE', 'DDL')${userFilter(params)}
  ORDER BY ts, session_id, session_line`;
}

/** by-user: per database user, entries by class, attempts, failures, first and last activity. */
function byUser(params: ReportParams): string {
  return `SELECT "user", count(*) FILTER (record = 'entry') AS entries,
    count(*) FILTER (record = 'attempt') AS attempts,
    count(*) FILTER (class = 'READ') AS "read", count(*) FILTER (class = 'WRITE') AS "write",
    count(*) FILTER (class = 'DDL') AS ddl, count(*) FILTER (class = 'ROLE') AS "role",
    count(*) FILTER (class = 'FUNCTION') AS "function", count(*) FILTER (class LIKE 'MISC%') AS misc,
    count(*) FILTER (outcome IN ('failed', 'rolled_back') OR record = 'attempt') AS failed,
    min(ts) AS first, max(ts) AS last
  FROM audit
  WHERE record IN ('entry', 'attempt')${userFilter(params)}
  GROUP BY "user"
  ORDER BY entries DESC, "user"`;
}

/** The SQL of a named report. */
export function reportSql(name: ReportName, params: ReportParams = {}): string {
  switch (name) {
    case "who-touched":
      return whoTouched(params);
    case "failed":
      return failed(params);
    case "grants":
      return grants(params);
    case "by-user":
      return byUser(params);
  }
}
