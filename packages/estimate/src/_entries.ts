/**
 * Which audit entries one call of a statement produces under a configuration: pgaudit 1.7's
 * log_select_dml / log_audit_event rules, one entry template at a time (see docs/estimator.md
 * "Entries").
 */
import { isMiscSetCommand, printedClass, sessionClasses } from "./configs.ts";
import type { AuditConfig, Grant, ParamValue, Privilege, RelationUse, StatementLoad } from "./types.ts";

/** One audit entry of a statement call, before its record is rendered. */
export interface EntryTemplate {
  auditType: "SESSION" | "OBJECT";
  /** Class as printed (MISC_SET prints MISC). */
  class: string;
  command: string;
  objectType: string;
  objectName: string;
  /** Statement text logged, or a marker when it is not. */
  statement: { text: string; params: number; values?: ParamValue[] } | "<previously logged>" | "<not logged>";
  rows: number;
  /** Substatement id (FK checks are substatements of the statement that fired them). */
  substatement: number;
}

interface Resolved {
  on: Set<string>;
  config: AuditConfig;
}

export function resolveConfig(config: AuditConfig): Resolved {
  return { on: sessionClasses(config.log), config };
}

/** The DML a statement text starts with after `PREPARE name [(types)] AS` or `EXPLAIN [(options)] [ANALYZE]`. */
const innerVerb = (text: string): string =>
  (
    /^\s*(?:prepare\s+\S+?\s*(?:\([^)]*\))?\s+as|explain(?:\s*\([^)]*\))?(?:\s+analy[sz]e)?(?:\s+verbose)?)\s+(\w+)/i.exec(
      text,
    )?.[1] ?? ""
  ).toLowerCase();

const WRITES = new Set(["insert", "update", "delete", "merge"]);

/**
 * pgaudit's class for a utility command tag (GetCommandLogLevel's, then log_audit_event's): a
 * PREPARE is its query's (READ, or WRITE for DML), an EXPLAIN ANALYZE of DML is WRITE (a plain
 * EXPLAIN MISC), a COPY … FROM WRITE and a COPY … TO READ, a DECLARE CURSOR READ.
 */
export function utilityClass(command: string, text = ""): string {
  const c = command.toUpperCase();
  if (isMiscSetCommand(c)) return "MISC_SET";
  if (c === "DO") return "FUNCTION";
  if (
    c === "GRANT" ||
    c === "REVOKE" ||
    c === "ALTER DEFAULT PRIVILEGES" ||
    /^(CREATE|ALTER|DROP) (ROLE|USER|GROUP)$/.test(c)
  )
    return "ROLE";
  if (c === "TRUNCATE TABLE" || c === "TRUNCATE") return "WRITE";
  if (c === "COPY") return /^\s*copy\s+[^(\s]/i.test(text) && /\bfrom\b/i.test(text) ? "WRITE" : "READ";
  if (c === "DECLARE CURSOR") return "READ";
  if (c === "PREPARE") return WRITES.has(innerVerb(text)) ? "WRITE" : "READ";
  if (c === "EXPLAIN")
    return /^\s*explain\b[^;]*?\banaly[sz]e\b/i.test(text) && WRITES.has(innerVerb(text)) ? "WRITE" : "MISC";
  if (/^(CREATE|ALTER|DROP|COMMENT|SECURITY LABEL|IMPORT|REFRESH|REASSIGN|SELECT INTO|CLUSTER)/.test(c))
    return "DDL";
  return "MISC";
}

function requiredPerms(use: RelationUse): Privilege[] {
  if (use.privileges) return use.privileges;
  if (use.write === "INSERT") return ["INSERT"];
  if (use.write) return [use.write, "SELECT"];
  return use.locked ? ["SELECT", "UPDATE"] : ["SELECT"];
}

const overlaps = (a: string[] | undefined, b: string[] | undefined): boolean =>
  a === undefined || a.length === 0 || b === undefined || b.length === 0 || a.some((x) => b.includes(x));

/**
 * Whether the audit role's grants make pgaudit log this relation (audit_on_relation, then
 * audit_on_any_attribute for the selected, inserted and updated columns; an empty column set
 * means "any column").
 */
export function isGranted(
  grants: Grant[] | undefined,
  relation: string,
  required: Privilege[],
  read: string[] | undefined,
  written: string[] | undefined,
): boolean {
  const mine = (grants ?? []).filter((g) => g.relation === relation);
  if (mine.some((g) => !g.columns && g.privileges.some((p) => required.includes(p)))) return true;
  const columnGrants = mine.filter((g) => g.columns && g.columns.length > 0);
  if (required.includes("SELECT")) {
    if (columnGrants.some((g) => g.privileges.includes("SELECT") && overlaps(read, g.columns))) return true;
  }
  for (const w of ["INSERT", "UPDATE"] as const) {
    if (!required.includes(w)) continue;
    if (
      columnGrants.some((g) => g.privileges.some((p) => required.includes(p)) && overlaps(written, g.columns))
    )
      return true;
  }
  return false;
}

/** Builds the entries of one stack item, applying log_statement_once and log_statement. */
class StackItem {
  private logged = false;
  readonly entries: EntryTemplate[] = [];
  private readonly config: AuditConfig;
  private readonly text: string;
  private readonly params: number;
  private readonly values: ParamValue[] | undefined;
  private readonly rows: number;
  private readonly substatement: number;
  constructor(
    config: AuditConfig,
    text: string,
    params: number,
    rows: number,
    substatement: number,
    values?: ParamValue[],
  ) {
    this.config = config;
    this.text = text;
    this.params = params;
    this.values = values;
    this.rows = rows;
    this.substatement = substatement;
  }
  add(
    auditType: EntryTemplate["auditType"],
    cls: string,
    command: string,
    objectName: string,
    objectType = objectName === "" ? "" : "TABLE",
  ): void {
    const c = this.config;
    let statement: EntryTemplate["statement"];
    if (c.logStatement === false) statement = "<not logged>";
    else if (this.logged && c.logStatementOnce) statement = "<previously logged>";
    else
      statement = { text: this.text, params: this.params, ...(this.values ? { values: this.values } : {}) };
    this.logged = true;
    this.entries.push({
      auditType,
      class: printedClass(cls),
      command,
      objectType,
      objectName,
      statement,
      rows: this.rows,
      substatement: this.substatement,
    });
  }
}

/** Entries of one DML executor run over `relations` (log_select_dml). */
function dmlEntries(
  r: Resolved,
  item: StackItem,
  statementClass: string,
  statementCommand: string,
  relations: RelationUse[],
): void {
  const c = r.config;
  if (relations.length === 0) {
    if (r.on.has(statementClass)) item.add("SESSION", statementClass, statementCommand, "");
    return;
  }
  let first = true;
  for (const use of relations) {
    if (use.catalog && !c.logCatalog) continue;
    if (first && !c.logRelation) {
      if (r.on.has(statementClass)) item.add("SESSION", statementClass, statementCommand, "");
      first = false;
    }
    const type = use.objectType ?? "TABLE";
    // No privileges to check: pgaudit prints MISC,??? and never object-logs it.
    if (use.plannerAdded) {
      if (c.logRelation && r.on.has("MISC")) item.add("SESSION", "MISC", "???", use.relation, type);
      continue;
    }
    const cls = use.write ? "WRITE" : "READ";
    const command = use.write ?? "SELECT";
    if (c.role && isGranted(c.grants, use.relation, requiredPerms(use), use.columns, use.writtenColumns))
      item.add("OBJECT", cls, command, use.relation, type);
    if (c.logRelation && r.on.has(cls)) item.add("SESSION", cls, command, use.relation, type);
  }
}

/**
 * FUNCTION entries: one per user function or procedure a statement calls, each its own stack
 * item (so log_statement_once prints the text again), substatement after the statement's own.
 */
function functionEntries(r: Resolved, s: StatementLoad, text: string, substatement: number): EntryTemplate[] {
  if (!r.on.has("FUNCTION")) return [];
  return (s.functions ?? []).flatMap((f) => {
    const item = new StackItem(
      r.config,
      text,
      s.params ?? 0,
      Math.round(s.rowsPerCall),
      substatement,
      s.paramValues,
    );
    item.add("SESSION", "FUNCTION", "EXECUTE", f, "FUNCTION");
    return item.entries;
  });
}

/**
 * The table a CREATE TABLE (AS) makes, as pgaudit's DDL entry names it (the event trigger's
 * object identity: `pg_temp.t` for a temporary one, unqualified taken as public).
 */
function createdTable(command: string | undefined, text: string): string | undefined {
  if (command !== "CREATE TABLE" && command !== "CREATE TABLE AS") return undefined;
  const m =
    /^\s*create\s+(?:(?:global|local)\s+)?(temp|temporary|unlogged)?\s*table\s+(?:if\s+not\s+exists\s+)?("[^"]+"|[^\s(]+)/i.exec(
      text,
    );
  if (!m) return undefined;
  const name = m[2]!;
  if (/^temp/i.test(m[1] ?? "")) return `pg_temp.${name.split(".").pop()}`;
  return name.includes(".") ? name : `public.${name}`;
}

/** The entries one call of `s` writes (without the FK checks it fires). */
export function statementEntries(r: Resolved, s: StatementLoad, text: string): EntryTemplate[] {
  const rows = Math.round(s.rowsPerCall);
  // A statement run inside another is a substatement of it (its id is at least 2).
  const sub = s.nested ? 2 : 1;
  const item = new StackItem(r.config, text, s.params ?? 0, rows, sub, s.paramValues);
  if (s.kind === "UTILITY") {
    const cls = utilityClass(s.command ?? "", text);
    // CALL: the procedure's FUNCTION entry comes first, then CALL's own (MISC) entry.
    const functions = functionEntries(r, s, text, sub);
    // The query it runs: the executor's READ entries first, with the utility's text.
    const query: EntryTemplate[] = [];
    if (s.queryRelations) {
      const run = new StackItem(r.config, text, s.params ?? 0, rows, sub + 1, s.paramValues);
      dmlEntries(r, run, "READ", "SELECT", s.queryRelations);
      query.push(...run.entries);
    }
    // COPY of a table: logged as the DML on it (log_relation, object auditing), COPY without.
    if (s.command === "COPY" && s.relations.length > 0) dmlEntries(r, item, cls, "COPY", s.relations);
    else if (r.on.has(cls)) item.add("SESSION", cls, s.command ?? "???", createdTable(s.command, text) ?? "");
    return [...functions, ...query, ...item.entries];
  }
  // MERGE: pgaudit's ExecutorStart classes only SELECT, INSERT, UPDATE and DELETE; the rest is MISC `???`.
  if (s.command === "MERGE") dmlEntries(r, item, "MISC", "???", s.relations);
  else dmlEntries(r, item, s.kind === "SELECT" ? "READ" : "WRITE", s.kind, s.relations);
  return [...item.entries, ...functionEntries(r, s, text, sub + 1)];
}

/** Splits a qualified name as quote_qualified_identifier printed it. */
export function splitQualified(name: string): [string, string] {
  const parts: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    if (quoted) {
      if (ch === '"' && name[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ".") {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  return parts.length >= 2 ? [parts[0]!, parts.slice(1).join(".")] : ["public", parts[0]!];
}

const q = (s: string): string => `"${s.replaceAll('"', '""')}"`;

/** The RI check query PostgreSQL runs per row (ri_triggers.c), as pgaudit logs it. */
export function fkCheckText(target: string, columns: string[]): string {
  const [schema, table] = splitQualified(target);
  const where = columns.map((col, i) => `${q(col)} OPERATOR(pg_catalog.=) $${i + 1}`).join(" AND ");
  return `SELECT 1 FROM ONLY ${q(schema)}.${q(table)} x WHERE ${where} FOR KEY SHARE OF x`;
}

/**
 * Entries of one FK check (one per inserted child row, or per deleted parent row): a READ of the
 * other table, session-logged with READ on, object-logged when the audit role holds SELECT or
 * UPDATE on it at table level or on any column (the check locks FOR KEY SHARE, which needs
 * UPDATE, and checks no updated columns, which pgaudit reads as "any column").
 */
export function fkCheckEntries(
  r: Resolved,
  checked: string,
  columns: string[],
  substatement: number,
): EntryTemplate[] {
  const item = new StackItem(r.config, fkCheckText(checked, columns), columns.length, 1, substatement);
  dmlEntries(r, item, "READ", "SELECT", [{ relation: checked, columns, writtenColumns: [], locked: true }]);
  return item.entries;
}

/** The RI action query PostgreSQL runs per parent row for ON DELETE/UPDATE CASCADE or SET NULL/DEFAULT. */
export function fkActionText(
  action: "DELETE" | "UPDATE",
  child: string,
  columns: string[],
  setTo = "NULL",
): string {
  const [schema, table] = splitQualified(child);
  const where = columns.map((col, i) => `$${i + 1} OPERATOR(pg_catalog.=) ${q(col)}`).join(" AND ");
  if (action === "DELETE") return `DELETE FROM ONLY ${q(schema)}.${q(table)} WHERE ${where}`;
  const set = columns.map((col) => `${q(col)} = ${setTo}`).join(", ");
  return `UPDATE ONLY ${q(schema)}.${q(table)} SET ${set} WHERE ${where}`;
}

/** Entries of one RI action (a cascade's DELETE, a SET NULL/DEFAULT's UPDATE of the child). */
export function fkActionEntries(
  r: Resolved,
  action: "DELETE" | "UPDATE",
  child: string,
  columns: string[],
  substatement: number,
): EntryTemplate[] {
  const text = fkActionText(action, child, columns);
  const item = new StackItem(r.config, text, columns.length, 1, substatement);
  dmlEntries(r, item, "WRITE", action, [
    { relation: child, write: action, columns, ...(action === "UPDATE" ? { writtenColumns: columns } : {}) },
  ]);
  return item.entries;
}
