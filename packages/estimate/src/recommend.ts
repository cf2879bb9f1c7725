/**
 * The recommender: finds sensitive tables and columns (names, types, comments, plus the user's
 * list) and proposes the cheapest configuration that still audits them: session `ddl,role`,
 * object auditing through a NOLOGIN role with column-level SELECT grants where only some columns
 * are sensitive and table-level grants for writes, log_statement_once on, log_catalog off.
 * The SQL script is idempotent and quotes every identifier.
 */
import type { Catalog, CatalogTable } from "./_catalog.ts";
import { quoteIdent, quoteLiteral } from "./_sql.ts";
import { type EstimateOptions, estimate } from "./model.ts";
import type { AuditConfig, Estimate, Grant, Workload } from "./types.ts";

/** What makes a column sensitive, tested against its name, then its comment. */
export const SENSITIVE_PATTERNS: { reason: string; pattern: RegExp }[] = [
  { reason: "email address", pattern: /e[-_]?mail/i },
  {
    reason: "national id / SSN",
    pattern:
      /\b(ssn|social[-_ ]?security|national[-_ ]?id|nin|tax[-_ ]?id|passport)\b|(^|_)(ssn|nin|sin|tin)(_|$)/i,
  },
  { reason: "phone number", pattern: /phone|mobile|msisdn|(^|_)tel(_|$)/i },
  { reason: "birth date", pattern: /birth|(^|_)dob(_|$)/i },
  {
    reason: "card number (PAN)",
    pattern: /card[-_ ]?(number|no|num)|(^|_)(pan|cc_?num|cvv|cvc)(_|$)|credit[-_ ]?card/i,
  },
  {
    reason: "bank account / IBAN",
    pattern: /iban|(^|_)bic(_|$)|account[-_ ]?(number|no|num)|routing|sort[-_ ]?code/i,
  },
  { reason: "postal address", pattern: /address|street|postcode|postal|zip[-_ ]?code/i },
  { reason: "password or secret", pattern: /passw|secret|token|api[-_ ]?key|private[-_ ]?key|salt|hash/i },
  { reason: "salary / income", pattern: /salary|wage|income|compensation/i },
  { reason: "health data", pattern: /health|diagnos|medical|patient|prescription|allerg|disease/i },
];

export interface SensitiveColumn {
  table: string;
  column: string;
  reason: string;
}

export interface SensitiveTable {
  table: string;
  /** Sensitive columns; every column when the whole table is sensitive. */
  columns: string[];
  /** True when the whole table is to be audited (given without columns, or every column is sensitive). */
  wholeTable: boolean;
  reasons: string[];
}

/** Resolves a user's `TABLE` or `TABLE.COLUMN` / `schema.table.column` against the catalog. */
function resolveGiven(catalog: Catalog, given: string): { table: CatalogTable; column?: string } | undefined {
  const parts = given.split(".");
  const tries: [string | null, string, string | undefined][] = [];
  if (parts.length === 1) tries.push([null, parts[0]!, undefined]);
  if (parts.length === 2) tries.push([parts[0]!, parts[1]!, undefined], [null, parts[0]!, parts[1]]);
  if (parts.length === 3) tries.push([parts[0]!, parts[1]!, parts[2]]);
  for (const [schema, name, column] of tries) {
    const named = catalog.tables.filter((t) => t.name === name && (schema === null || t.schema === schema));
    const table = named.find((t) => t.schema === "public") ?? named[0];
    if (table && (column === undefined || table.columns.some((c) => c.name === column)))
      return column === undefined ? { table } : { table, column };
  }
  return undefined;
}

/** Sensitive tables and columns: found by pattern, plus those given (`table`, `table.column`, `schema.table.column`). */
export function findSensitive(
  catalog: Catalog,
  given: string[] = [],
): { tables: SensitiveTable[]; unknown: string[] } {
  const byTable = new Map<string, SensitiveTable>();
  const unknown: string[] = [];
  const note = (t: CatalogTable, column: string | null, reason: string): void => {
    const entry = byTable.get(t.qualified) ?? {
      table: t.qualified,
      columns: [],
      wholeTable: false,
      reasons: [],
    };
    if (column === null) entry.wholeTable = true;
    else if (!entry.columns.includes(column)) entry.columns.push(column);
    if (!entry.reasons.includes(reason)) entry.reasons.push(reason);
    byTable.set(t.qualified, entry);
  };
  for (const t of catalog.tables) {
    if (t.kind !== "r" && t.kind !== "p") continue; // views and partitions: audited through their tables
    if (t.partitionOf) continue;
    for (const c of t.columns) {
      const hit = SENSITIVE_PATTERNS.find(
        (p) => p.pattern.test(c.name) || (c.comment !== null && p.pattern.test(c.comment)),
      );
      if (hit) note(t, c.name, hit.reason);
    }
    const tableHit = t.comment ? SENSITIVE_PATTERNS.find((p) => p.pattern.test(t.comment!)) : undefined;
    if (tableHit) note(t, null, `table comment: ${tableHit.reason}`);
  }
  for (const g of given) {
    const found = resolveGiven(catalog, g);
    if (!found) unknown.push(g);
    else note(found.table, found.column ?? null, "given");
  }
  const tables = [...byTable.values()].map((s) => {
    const all = catalog.tables.find((t) => t.qualified === s.table)!.columns.map((c) => c.name);
    const whole = s.wholeTable || all.every((c) => s.columns.includes(c));
    return { ...s, wholeTable: whole, columns: whole ? all : s.columns };
  });
  tables.sort((a, b) => (a.table < b.table ? -1 : 1));
  return { tables, unknown };
}

/** The audit role's name when none is given. */
export const DEFAULT_AUDIT_ROLE = "auditpipe_auditor";

/** The recommended configuration for the sensitive tables. */
export function recommendedConfig(tables: SensitiveTable[], role: string = DEFAULT_AUDIT_ROLE): AuditConfig {
  const grants: Grant[] = [];
  for (const t of tables) {
    grants.push({ relation: t.table, privileges: ["INSERT", "UPDATE", "DELETE"] });
    grants.push(
      t.wholeTable
        ? { relation: t.table, privileges: ["SELECT"] }
        : { relation: t.table, privileges: ["SELECT"], columns: t.columns },
    );
  }
  return {
    name: "recommended",
    log: ["ddl", "role"],
    logCatalog: false,
    logStatementOnce: true,
    logRelation: false,
    logParameter: false,
    role,
    grants,
  };
}

/** The quoted `"schema"."table"` of a catalog table. */
function quotedTable(catalog: Catalog, qualified: string): string {
  const t = catalog.tables.find((x) => x.qualified === qualified);
  if (!t) throw new Error(`recommend: table ${qualified} is not in the catalog`);
  return `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
}

/**
 * The SQL that applies `config`: safe to run twice (CREATE ROLE guarded, GRANT and ALTER SYSTEM
 * idempotent). ALTER SYSTEM cannot run in a transaction block: run it with psql, not `psql -1`.
 */
export function recommendationSql(catalog: Catalog, config: AuditConfig): string {
  const role = config.role ?? DEFAULT_AUDIT_ROLE;
  const r = quoteIdent(role);
  const lines = [
    "-- auditpipe recommend: object auditing for sensitive tables through a NOLOGIN role.",
    "-- Safe to run more than once. Needs a superuser (ALTER SYSTEM) and pgaudit in shared_preload_libraries.",
    "CREATE EXTENSION IF NOT EXISTS pgaudit;",
    "DO $auditpipe$",
    "BEGIN",
    `  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = ${quoteLiteral(role)}) THEN`,
    `    CREATE ROLE ${r} NOLOGIN;`,
    "  END IF;",
    "END",
    "$auditpipe$;",
  ];
  for (const g of config.grants ?? []) {
    const cols = g.columns ? ` (${g.columns.map(quoteIdent).join(", ")})` : "";
    lines.push(
      `GRANT ${g.privileges.join(", ")}${cols} ON TABLE ${quotedTable(catalog, g.relation)} TO ${r};`,
    );
  }
  lines.push(
    `ALTER SYSTEM SET pgaudit.log = ${quoteLiteral(config.log.join(", "))};`,
    `ALTER SYSTEM SET pgaudit.role = ${quoteLiteral(role)};`,
    `ALTER SYSTEM SET pgaudit.log_catalog = ${config.logCatalog === false ? "off" : "on"};`,
    `ALTER SYSTEM SET pgaudit.log_statement_once = ${config.logStatementOnce ? "on" : "off"};`,
    `ALTER SYSTEM SET pgaudit.log_relation = ${config.logRelation ? "on" : "off"};`,
    `ALTER SYSTEM SET pgaudit.log_parameter = ${config.logParameter ? "on" : "off"};`,
    "SELECT pg_catalog.pg_reload_conf();",
  );
  return `${lines.join("\n")}\n`;
}

/**
 * What the recommended grants log for a sensitive table other tables reference: pgaudit logs a
 * foreign-key check of it (PostgreSQL's `SELECT 1 … FOR KEY SHARE`) when the audit role holds
 * SELECT or UPDATE on it or on any of its columns — the grants recommended always do — and only
 * for a session user who is a member of the table's owner (the check runs as the owner).
 * object-grants.test.ts checks each clause on a real server.
 */
export function referencedNote(table: string, children: string[]): string {
  return `${table} is referenced by foreign keys (from ${children.join(", ")}): the recommended grants make pgaudit log each foreign-key check of it as an OBJECT READ, whichever columns are granted — one per row inserted into a referencing table, one more per such row the same transaction updates, and one per row deleted from ${table} — when the application's role is a member of ${table}'s owner; counted in the estimate`;
}

export interface Recommendation {
  sensitive: SensitiveTable[];
  /** Names given that the catalog does not have. */
  unknown: string[];
  config: AuditConfig;
  sql: string;
  /** The server's current configuration, the recommendation, and session `all` for reference. */
  before: Estimate;
  after: Estimate;
  all: Estimate;
  notes: string[];
}

export function recommend(
  catalog: Catalog,
  workload: Workload,
  current: AuditConfig,
  options: EstimateOptions & { sensitive?: string[]; role?: string } = {},
): Recommendation {
  const { tables, unknown } = findSensitive(catalog, options.sensitive ?? []);
  const config = recommendedConfig(tables, options.role);
  const notes: string[] = [];
  if (tables.length === 0) notes.push("no sensitive table found: give some with --sensitive TABLE[.COLUMN]");
  for (const t of tables) {
    const children = [
      ...new Set(workload.foreignKeys.filter((f) => f.parent === t.table).map((f) => f.child)),
    ];
    if (children.length > 0) notes.push(referencedNote(t.table, children));
  }
  return {
    sensitive: tables,
    unknown,
    config,
    sql: recommendationSql(catalog, config),
    before: estimate(workload, current, options),
    after: estimate(workload, config, options),
    all: estimate(workload, { name: "all", log: ["all"] }, options),
    notes,
  };
}
