/**
 * What the sampling role may see, and what it could not. A role without pg_read_all_settings
 * gets no row at all for superuser-only settings (shared_preload_libraries); one without
 * pg_read_all_stats sees other roles' pg_stat_statements rows as `<insufficient privilege>` with
 * a NULL queryid (calls still counted) and their pg_stat_activity rows with NULL backend_type,
 * state and client address. Nothing hidden may be reported as a fact about the server.
 */
import type pg from "pg";
import { AUDITPIPE_ERR_DB_PRIVILEGE, EstimateError } from "./errors.ts";

export const READ_ALL_STATS = "pg_read_all_stats";
export const READ_ALL_SETTINGS = "pg_read_all_settings";
/** The text pg_stat_statements and pg_stat_activity show in place of a hidden statement. */
export const HIDDEN_QUERY = "<insufficient privilege>";

export interface Privileges {
  role: string;
  /** Has the privileges of pg_read_all_settings (or is a superuser). */
  readAllSettings: boolean;
}

export async function readPrivileges(client: pg.Client, tag: (sql: string) => string): Promise<Privileges> {
  const r = await client.query(
    tag(`SELECT current_user AS role, r.rolsuper AS su,
                pg_has_role(current_user, '${READ_ALL_SETTINGS}', 'USAGE') AS settings
           FROM pg_roles r WHERE r.rolname = current_user`),
  );
  const row = r.rows[0];
  return {
    role: row.role,
    readAllSettings: row.su === true || row.settings === true,
  };
}

/** `GRANT pg_read_all_stats TO "role"`, the role quoted as an identifier. */
export function grantSql(roles: string[], role: string): string {
  return `GRANT ${roles.join(", ")} TO "${role.replaceAll('"', '""')}"`;
}

/** The settings asked for that did not come back, when the role may not read them all. */
export function unreadableSettings(
  asked: readonly string[],
  got: Record<string, string>,
  p: Privileges,
): string[] {
  return p.readAllSettings ? [] : asked.filter((name) => !(name in got));
}

/**
 * What is known about pgaudit being preloaded. pgaudit refuses to load except through
 * shared_preload_libraries, so its settings being defined means it is; their absence with the
 * setting unreadable means only "probably not".
 */
export function preloadWarning(settings: Record<string, string>, p: Privileges): string | undefined {
  const preload = settings.shared_preload_libraries;
  const defined = "pgaudit.log" in settings;
  if (preload !== undefined)
    return /pgaudit/.test(preload)
      ? undefined
      : "pgaudit is not in shared_preload_libraries: add it and restart before applying any configuration";
  if (defined) return undefined;
  return `shared_preload_libraries could not be read by role ${p.role} (${grantSql([READ_ALL_SETTINGS], p.role)}, or sample as a superuser to check); pgaudit's settings are not defined in this session, so pgaudit is probably not loaded`;
}

/** Calls of statements pg_stat_statements hid from this role, and the calls it showed, during the sample. */
export interface StatementVisibility {
  hiddenCalls: number;
  visibleCalls: number;
  /** Roles whose hidden statements ran during the sample. */
  hiddenRoles: number;
}

/** A warning for partly hidden statements; undefined when nothing was hidden. */
export function hiddenStatementsWarning(v: StatementVisibility, p: Privileges): string | undefined {
  if (v.hiddenCalls <= 0) return undefined;
  const share = v.hiddenCalls / (v.hiddenCalls + v.visibleCalls);
  return `pg_stat_statements hid the statements of ${v.hiddenRoles} other role(s) from role ${p.role} (${(share * 100).toFixed(0)}% of the calls during the sample): the estimates leave them out and are too low. ${grantSql([READ_ALL_STATS], p.role)} to see them`;
}

/**
 * The refusal when every statement that ran was hidden: a table built on what this role can see
 * would print zeros for a workload it cannot see.
 */
export function blindSampleError(
  v: StatementVisibility,
  p: Privileges,
  unreadable: readonly string[],
): EstimateError {
  const missing = [READ_ALL_STATS, ...(unreadable.length > 0 ? [READ_ALL_SETTINGS] : [])];
  return new EstimateError(
    AUDITPIPE_ERR_DB_PRIVILEGE,
    `every statement run during the sample (${Math.round(v.hiddenCalls)} calls, by ${v.hiddenRoles} other role(s)) was hidden from role ${p.role} by pg_stat_statements (query text ${HIDDEN_QUERY}): there is nothing to estimate from. ` +
      `${grantSql(missing, p.role)} (or sample as a superuser)` +
      (unreadable.length > 0
        ? `; without ${READ_ALL_SETTINGS} it cannot read ${unreadable.join(", ")} either`
        : ""),
  );
}

/** A warning for other sessions whose details pg_stat_activity hid; undefined when none were. */
export function hiddenSessionsWarning(hidden: number, p: Privileges): string | undefined {
  if (hidden <= 0) return undefined;
  return `pg_stat_activity hid the state and client address of ${hidden} other session(s) from role ${p.role}: the client count is unknown (the overhead range is wider) and the client address is assumed to be a unix socket ([local]). ${grantSql([READ_ALL_STATS], p.role)} to see them`;
}
