/**
 * What `auditpipe bench` compares: audit configurations and pgbench workloads, as data. The
 * command applies them; this file says what each one is, so the report can describe it.
 */

export const CONFIGURATION_NAMES = [
  "none",
  "write",
  "read",
  "all",
  "object",
  "log_statement",
  "trigger",
] as const;
export type ConfigurationName = (typeof CONFIGURATION_NAMES)[number];

export type ConfigurationKind =
  | "baseline"
  | "pgaudit-session"
  | "pgaudit-object"
  | "log-statement"
  | "trigger";

export interface ConfigurationSpec {
  name: ConfigurationName;
  kind: ConfigurationKind;
  /** One line for the report. */
  description: string;
  /** Whether pgaudit must be in shared_preload_libraries (a restart on a scratch server). */
  preloadPgaudit: boolean;
  /** Settings applied with ALTER SYSTEM + reload; `pgaudit.role` objects are granted separately. */
  settings: Record<string, string>;
}

/** The role object auditing grants to (pgaudit.role). */
export const AUDIT_ROLE = "auditpipe_bench_auditor";
/** The table the row-level audit trigger writes to. */
export const AUDIT_TABLE = "auditpipe_bench_audit";

export const CONFIGURATIONS: Record<ConfigurationName, ConfigurationSpec> = {
  none: {
    name: "none",
    kind: "baseline",
    description: "baseline: nothing audited",
    preloadPgaudit: false,
    settings: {},
  },
  write: {
    name: "write",
    kind: "pgaudit-session",
    description: "pgaudit session logging, pgaudit.log = 'write'",
    preloadPgaudit: true,
    settings: { "pgaudit.log": "write" },
  },
  read: {
    name: "read",
    kind: "pgaudit-session",
    description: "pgaudit session logging, pgaudit.log = 'read'",
    preloadPgaudit: true,
    settings: { "pgaudit.log": "read" },
  },
  all: {
    name: "all",
    kind: "pgaudit-session",
    description: "pgaudit session logging, pgaudit.log = 'all'",
    preloadPgaudit: true,
    settings: { "pgaudit.log": "all" },
  },
  object: {
    name: "object",
    kind: "pgaudit-object",
    description: "pgaudit object logging on the two largest tables (SELECT, INSERT, UPDATE, DELETE)",
    preloadPgaudit: true,
    settings: { "pgaudit.role": AUDIT_ROLE },
  },
  log_statement: {
    name: "log_statement",
    kind: "log-statement",
    description: "PostgreSQL's own log_statement = 'all', no pgaudit",
    preloadPgaudit: false,
    settings: { log_statement: "all" },
  },
  trigger: {
    name: "trigger",
    kind: "trigger",
    description: "row-level audit trigger: OLD/NEW as jsonb into an audit table, no pgaudit",
    preloadPgaudit: false,
    settings: {},
  },
};

export const WORKLOAD_NAMES = ["tpcb", "read-heavy", "write-heavy", "select-only"] as const;
export type BuiltinWorkloadName = (typeof WORKLOAD_NAMES)[number];

export interface WorkloadSpec {
  /** A built-in name, or `script:<file name>` for --script. */
  name: string;
  description: string;
  /** pgbench arguments selecting the script (`-b tpcb-like`, or `-f FILE`). */
  builtin?: string;
  /** The script text for -f (written to a file by the command). */
  script?: string;
}

/**
 * The read-heavy script of Gold Lapel's "pgAudit Performance Impact: Benchmarks and Mitigation
 * Strategies": nine SELECTs and one UPDATE per transaction; the account range follows the scale.
 */
const READ_HEAVY = `\\set aid random(1, 100000 * :scale - 8)
\\set delta random(-5000, 5000)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 1;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 2;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 3;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 4;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 5;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 6;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 7;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid + 8;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
END;
`;

/** Write-heavy: four writes and one read per transaction (80 % writes by statement count). */
const WRITE_HEAVY = `\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
END;
`;

export const WORKLOADS: Record<BuiltinWorkloadName, WorkloadSpec> = {
  tpcb: {
    name: "tpcb",
    description: "pgbench's built-in TPC-B-like: 1 SELECT, 3 UPDATEs, 1 INSERT per transaction",
    builtin: "tpcb-like",
  },
  "read-heavy": {
    name: "read-heavy",
    description: "9 SELECTs and 1 UPDATE per transaction (Gold Lapel's read-heavy script)",
    script: READ_HEAVY,
  },
  "write-heavy": {
    name: "write-heavy",
    description: "4 writes and 1 SELECT per transaction",
    script: WRITE_HEAVY,
  },
  "select-only": {
    name: "select-only",
    description: "pgbench's built-in select-only: 1 SELECT per transaction",
    builtin: "select-only",
  },
};

/**
 * The generic row-level audit trigger (the classic one of the PostgreSQL wiki's audit trigger and
 * the libraries built on it): one row per changed row, OLD and NEW as jsonb. Identifiers are quoted.
 */
export function auditTriggerSql(tables: readonly string[]): string[] {
  const q = quoteIdent;
  const fn = q("auditpipe_bench_audit_row");
  return [
    `CREATE TABLE IF NOT EXISTS ${q(AUDIT_TABLE)} (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), table_name text NOT NULL, op text NOT NULL, actor text NOT NULL DEFAULT current_user, old_row jsonb, new_row jsonb)`,
    `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${q(AUDIT_TABLE)} (table_name, op, old_row, new_row)
  VALUES (TG_TABLE_NAME, TG_OP,
          CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN to_jsonb(OLD) END,
          CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN to_jsonb(NEW) END);
  RETURN NULL;
END $$`,
    ...tables.map(
      (t) =>
        `CREATE OR REPLACE TRIGGER ${q(`auditpipe_bench_audit_${t}`)} AFTER INSERT OR UPDATE OR DELETE ON ${q(t)} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    ),
  ];
}

export function dropAuditTriggerSql(tables: readonly string[]): string[] {
  const q = quoteIdent;
  return tables.map((t) => `DROP TRIGGER IF EXISTS ${q(`auditpipe_bench_audit_${t}`)} ON ${q(t)}`);
}

/** A quoted SQL identifier (double quotes doubled). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A quoted SQL string literal. */
export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
