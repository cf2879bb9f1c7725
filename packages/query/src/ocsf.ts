/**
 * pgAudit entries as OCSF events: the Datastore Activity class (class_uid 6005) of the Application
 * Activity category (6), OCSF 1.5.0. Pure: one audit row in, one event out. The mapping is
 * documented in docs/archive.md ("OCSF"); tests validate the events against the class's schema as
 * the `ocsf-emitter` package bundles it.
 */

export const OCSF_VERSION = "1.5.0";
export const OCSF_CLASS_UID = 6005;
export const OCSF_CATEGORY_UID = 6;

/** Datastore Activity's activity_id values (the schema's enum). */
export const OcsfActivity = {
  UNKNOWN: 0,
  READ: 1,
  UPDATE: 2,
  CONNECT: 3,
  QUERY: 4,
  WRITE: 5,
  CREATE: 6,
  DELETE: 7,
  LIST: 8,
  OTHER: 99,
} as const;

const ACTIVITY_NAMES: Record<number, string> = {
  0: "Unknown",
  1: "Read",
  2: "Update",
  3: "Connect",
  4: "Query",
  5: "Write",
  6: "Create",
  7: "Delete",
  8: "List",
  99: "Other",
};

/** The audit columns the mapping reads; `ts_ms` is `epoch_ms(ts)` (OCSF times are milliseconds). */
export interface OcsfInput {
  record: string;
  ts_ms: number | string | null;
  user: string | null;
  database: string | null;
  pid: number | null;
  session_id: string | null;
  session_line: number | string | null;
  application_name: string | null;
  remote_host: string | null;
  audit_type: string | null;
  statement_id: number | string | null;
  substatement_id: number | string | null;
  class: string | null;
  command: string | null;
  object_type: string | null;
  object_name: string | null;
  statement: string | null;
  parameter: (string | null)[] | null;
  parameter_marker: string | null;
  rows: number | string | null;
  outcome: string | null;
  sqlstate: string | null;
  host: string | null;
  source: { file: string; offset: number | string } | null;
}

/** The select list over `audit` that gives OcsfInput rows. */
export const OCSF_INPUT_SELECT =
  'record, epoch_ms(ts) AS ts_ms, "user", database, pid, session_id, session_line, application_name, remote_host, audit_type, statement_id, substatement_id, class, command, object_type, object_name, statement, parameter, parameter_marker, "rows", outcome, sqlstate, host, source';

/**
 * activity_id of a pgAudit entry, from its class and command: SELECT is a Query, COPY TO a Read;
 * INSERT and COPY FROM are Writes, UPDATE and MERGE Updates, DELETE and TRUNCATE Deletes; DDL
 * CREATE is Create, DROP Delete, ALTER (and the rest of DDL) Update; ROLE (GRANT, REVOKE,
 * CREATE/ALTER/DROP ROLE) is Update of the datastore's permissions; a MERGE, which pgaudit logs as
 * MISC `???`, an Update; FUNCTION, MISC and anything else is Other, its activity_name the command.
 */
export function activityOf(klass: string | null, command: string | null, statement: string | null): number {
  const cmd = (command ?? "").toUpperCase();
  switch (klass) {
    case "READ":
      return cmd === "SELECT" ? OcsfActivity.QUERY : OcsfActivity.READ;
    case "WRITE":
      if (cmd === "INSERT") return OcsfActivity.WRITE;
      if (cmd === "DELETE" || cmd === "TRUNCATE TABLE" || cmd === "TRUNCATE") return OcsfActivity.DELETE;
      if (cmd === "COPY") return /\bTO\b/i.test(statement ?? "") ? OcsfActivity.READ : OcsfActivity.WRITE;
      return OcsfActivity.UPDATE;
    case "DDL":
      if (cmd.startsWith("CREATE")) return OcsfActivity.CREATE;
      if (cmd.startsWith("DROP")) return OcsfActivity.DELETE;
      return OcsfActivity.UPDATE;
    case "ROLE":
      return OcsfActivity.UPDATE;
    default:
      // pgaudit names no MERGE: its statement entry is MISC `???` (docs/estimator.md, "Entries").
      if (cmd === "???" && /^\s*MERGE\b/i.test(statement ?? "")) return OcsfActivity.UPDATE;
      return OcsfActivity.OTHER;
  }
}

/** status_id: 1 Success, 2 Failure, 0 Unknown (pending or unknown). */
function statusOf(row: OcsfInput): { status_id: number; status: string; status_detail?: string } {
  if (row.record === "attempt") return { status_id: 2, status: "Failure", status_detail: "refused" };
  switch (row.outcome) {
    case "succeeded":
      return { status_id: 1, status: "Success" };
    case "failed":
      return { status_id: 2, status: "Failure", status_detail: "failed" };
    case "rolled_back":
      return { status_id: 2, status: "Failure", status_detail: "rolled back" };
    default:
      return { status_id: 0, status: "Unknown", ...(row.outcome ? { status_detail: row.outcome } : {}) };
  }
}

const IP = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)$/;

/** Where the client connected from: an IP, a host name, or the local socket (`[local]`). */
function srcEndpoint(remote: string | null): Record<string, string> {
  if (!remote) return { name: "unknown" };
  if (remote === "[local]") return { name: "[local]", type: "Unix socket" };
  const host = remote.replace(/\(\d+\)$/, ""); // log_hostname adds the port as `host(port)`
  return IP.test(host) ? { ip: host } : { hostname: host };
}

function num(v: number | string | null): number | undefined {
  if (v === null || v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** One audit row as an OCSF Datastore Activity event. */
export function toOcsfEvent(row: OcsfInput, product: { version: string }): Record<string, unknown> {
  const activity = activityOf(row.class, row.command, row.statement);
  const hasTable = Boolean(row.object_name) && /TABLE|VIEW|SEQUENCE|INDEX/i.test(row.object_type ?? "");
  const event: Record<string, unknown> = {
    activity_id: activity,
    activity_name: activity === OcsfActivity.OTHER ? row.command || "Other" : ACTIVITY_NAMES[activity],
    category_uid: OCSF_CATEGORY_UID,
    category_name: "Application Activity",
    class_uid: OCSF_CLASS_UID,
    class_name: "Datastore Activity",
    type_uid: OCSF_CLASS_UID * 100 + activity,
    severity_id: 1,
    severity: "Informational",
    time: num(row.ts_ms) ?? 0,
    ...statusOf(row),
    ...(row.sqlstate ? { status_code: row.sqlstate } : {}),
    message: `${row.command ?? "statement"}${row.object_name ? ` ${row.object_name}` : ""} by ${row.user ?? "unknown user"}`,
    metadata: {
      version: OCSF_VERSION,
      product: { name: "auditpipe", vendor_name: "auditpipe", version: product.version },
      log_name: "pgaudit",
      log_provider: "PostgreSQL pgAudit",
      event_code: row.command ?? undefined,
      uid:
        row.session_id !== null && row.session_line !== null
          ? `${row.host ?? ""}/${row.session_id}/${row.session_line}`
          : `${row.host ?? ""}/${row.source?.file ?? ""}@${row.source?.offset ?? ""}`,
      ...(row.session_id ? { correlation_uid: row.session_id } : {}),
    },
    actor: {
      user: { name: row.user ?? "unknown" },
      ...(row.application_name ? { app_name: row.application_name } : {}),
      ...(row.session_id ? { session: { uid: row.session_id } } : {}),
    },
    src_endpoint: srcEndpoint(row.remote_host),
    ...(row.host ? { dst_endpoint: { hostname: row.host } } : {}),
    database: { name: row.database ?? "unknown", type: "Relational", type_id: 1 },
    ...(hasTable ? { table: { name: row.object_name } } : {}),
    type_id: hasTable ? 3 : 1,
    type: hasTable ? "Table" : "Database",
    ...(row.statement ? { query_info: { query_string: row.statement } } : {}),
    unmapped: {
      record: row.record,
      audit_type: row.audit_type,
      class: row.class,
      command: row.command,
      object_type: row.object_type || null,
      object_name: row.object_name || null,
      statement_id: num(row.statement_id) ?? null,
      substatement_id: num(row.substatement_id) ?? null,
      parameter: row.parameter ?? row.parameter_marker,
      rows: num(row.rows) ?? null,
      pid: row.pid,
      outcome: row.outcome,
      source: row.source ? { file: row.source.file, offset: num(row.source.offset) ?? null } : null,
    },
  };
  return JSON.parse(JSON.stringify(event)) as Record<string, unknown>; // drops undefined fields
}
