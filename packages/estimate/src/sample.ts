/**
 * Samples a live database into a Workload: pg_stat_statements, pg_stat_user_tables and
 * pg_stat_database read twice over an interval give the rates; the catalog gives relations,
 * columns and foreign keys; pg_settings gives the log format and the current pgAudit setup.
 * Works without pg_stat_statements (coarser, and says so) and names missing privileges.
 */
import type pg from "pg";
import { type Catalog, catalogLookup, readCatalog, SAMPLER_TAG } from "./_catalog.ts";
import { newPgClient } from "./_pg.ts";
import {
  grantSql,
  HIDDEN_QUERY,
  hiddenSessionsWarning,
  type Privileges,
  preloadWarning,
  READ_ALL_SETTINGS,
  readPrivileges,
  unreadableSettings,
} from "./_privileges.ts";
import { type LoadProbeOptions, ServerLoadProbe } from "./_server-load.ts";
import {
  applicationTransactions,
  compounds,
  EVERY_SESSION,
  type Interval,
  type Observed,
  PIECE_KEY_SQL,
  plannedWorkers,
  type SessionRoles,
  type Snapshot,
  type StatRow,
  type UnsizedValues,
  workloadRates,
} from "./_snapshot-rates.ts";
import { qualifiedName, quoteIdent } from "./_sql.ts";
import { nestedTracking } from "./_track-nested.ts";
import { applyValueSizes, columnKey, columnsToSize, type ValueSize } from "./_value-sizes.ts";
import { pgauditLogs } from "./configs.ts";
import { sampleError } from "./errors.ts";
import { modelledMisses } from "./modelled-misses.ts";
import type {
  AuditConfig,
  Grant,
  LogContext,
  LogDestinationName,
  NestedTracking,
  Privilege,
  ServerLoad,
  StatementLoad,
  Workload,
} from "./types.ts";

export interface SampleOptions {
  /** A connection string or node-postgres config; libpq's PG* variables fill in what is missing. */
  connection?: string | pg.ClientConfig;
  /** Time between the two reads of the statistics; default 60 s. */
  intervalMs?: number;
  /** Called about once a second while waiting, and once when the first read is done (elapsed 0). */
  onProgress?: (elapsedMs: number, totalMs: number) => void;
  /** Printed length of a constant standing for a `$n` in normalized statements; default 4. */
  constantLength?: number;
  /**
   * Switch `pg_stat_statements.track` to `all` for the sample (ALTER SYSTEM + reload, put back
   * afterwards, also on error or abort) so statements run inside others are counted. Needs a
   * superuser; without this, a server already tracking `all` is counted as it is.
   */
  trackNested?: boolean;
  /**
   * Ends the sample early (Ctrl-C, a server stopping): the sample fails. Without trackNested the
   * connection is closed at once, cutting a query under way; with it the wait ends and the
   * setting is put back first.
   */
  signal?: AbortSignal;
  /** What to take as the server's load where it cannot be seen, or over what is seen (--cpu-busy, --cores). */
  load?: LoadProbeOptions;
}

/** What a sample found, with the workload the model runs on. */
export interface WorkloadSample {
  takenAt: string;
  intervalSec: number;
  database: string;
  workload: Workload;
  catalog: Catalog;
  /** pgaudit.*, log_destination, log_line_prefix, log_statement and related settings as the server reports them. */
  settings: Record<string, string>;
  /** The configuration the server runs now (pgaudit.* and the audit role's grants). */
  currentConfig: AuditConfig;
  /** Whether per-statement rates came from pg_stat_statements (false: estimated from table statistics). */
  statementStats: boolean;
  /** Whether statements run inside others were counted (see Workload.nestedStatements) and why not. */
  nested?: NestedTracking;
  /** What could not be read and what that costs in accuracy. */
  warnings: string[];
}

/** What a modelled estimate may miss, said wherever it is printed. */
export const MODELLED_MISSES =
  "statements inside functions, procedures and triggers; foreign-key checks PostgreSQL skips (an UPDATE that sets a key to its old value or to NULL) or repeats (an UPDATE of a row its own transaction inserted: assumed for a table that a workload of transaction blocks both inserts into and updates); and which statement's cascade reached how many rows (each table's average is taken)";

export const DEFAULT_INTERVAL_MS = 60_000;

const SETTINGS = [
  "log_destination",
  "log_line_prefix",
  "log_statement",
  "log_duration",
  "log_timezone",
  "logging_collector",
  "compute_query_id",
  "shared_preload_libraries",
  "server_version",
];

const tagged = (sql: string): string => `${sql} ${SAMPLER_TAG}`;

/**
 * Reads pg_stat_statements: top-level rows, and with `nested` the rows of statements run inside
 * others too. `toplevel` exists from PostgreSQL 14 on; before, nested calls of a statement are
 * merged into its row and `nested` is never asked for.
 */
async function snapshot(
  client: pg.Client,
  useStatements: boolean,
  columns: { toplevel: boolean; nested: boolean },
): Promise<Snapshot> {
  // One transaction: the reads are one more transaction in the counts, not three.
  await client.query(tagged("BEGIN"));
  try {
    const s = await readSnapshot(client, useStatements, columns);
    await client.query(tagged("COMMIT"));
    return s;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

async function readSnapshot(
  client: pg.Client,
  useStatements: boolean,
  columns: { toplevel: boolean; nested: boolean },
): Promise<Snapshot> {
  let statements: Map<string, StatRow> | null = null;
  const hiddenCalls = new Map<string, number>();
  if (useStatements) {
    const toplevel = columns.toplevel ? "toplevel" : "true";
    const res = await client.query(
      tagged(`SELECT userid::text AS userid, queryid::text AS queryid, query, calls::float8 AS calls, rows::float8 AS rows,
                     total_exec_time AS time, ${toplevel} AS toplevel
                FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                 ${columns.nested ? "" : `AND ${toplevel}`}`),
    );
    statements = new Map();
    for (const r of res.rows) {
      if (r.queryid === null || r.query === HIDDEN_QUERY) {
        hiddenCalls.set(r.userid, (hiddenCalls.get(r.userid) ?? 0) + r.calls);
        continue;
      }
      const key = `${r.userid}:${r.queryid}:${r.toplevel}`;
      statements.set(key, {
        key,
        userid: r.userid,
        queryid: r.queryid,
        toplevel: r.toplevel,
        query: r.query ?? "",
        calls: r.calls,
        rows: r.rows,
        time: r.time,
      });
    }
  }
  const tables = new Map<string, { ins: number; upd: number; del: number; scans: number }>();
  const t = await client.query(
    tagged(`SELECT schemaname AS s, relname AS r, n_tup_ins::float8 AS ins, n_tup_upd::float8 AS upd, n_tup_del::float8 AS del,
                   (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::float8 AS scans FROM pg_stat_user_tables`),
  );
  for (const r of t.rows)
    tables.set(`${r.s}\u0000${r.r}`, { ins: r.ins, upd: r.upd, del: r.del, scans: r.scans });
  const d = await client.query(
    tagged(`SELECT (xact_commit + xact_rollback)::float8 AS x, xact_rollback::float8 AS r, coalesce(sessions, 0)::float8 AS s,
                   (SELECT json_object_agg(o.datname, o.xact_commit + o.xact_rollback) FROM pg_stat_database o
                     WHERE o.datname IS NOT NULL AND o.datname <> current_database() AND o.datname NOT LIKE 'template_') AS o
              FROM pg_stat_database WHERE datname = current_database()`),
  );
  let evictions: number | null = null;
  if (useStatements) {
    // A savepoint: the view does not exist before 14, and the snapshot's transaction must go on.
    await client.query(tagged("SAVEPOINT info"));
    try {
      const e = await client.query(tagged("SELECT dealloc::float8 AS n FROM pg_stat_statements_info"));
      evictions = e.rows[0]?.n ?? null;
      await client.query(tagged("RELEASE SAVEPOINT info"));
    } catch {
      await client.query(tagged("ROLLBACK TO SAVEPOINT info"));
    }
  }
  return {
    statements,
    hiddenCalls,
    tables,
    xacts: d.rows[0]?.x ?? 0,
    rollbacks: d.rows[0]?.r ?? 0,
    sessions: d.rows[0]?.s ?? 0,
    otherDatabases: new Map(Object.entries((d.rows[0]?.o ?? {}) as Record<string, number>)),
    evictions,
  };
}

async function readSettings(client: pg.Client): Promise<Record<string, string>> {
  const res = await client.query(
    tagged(`SELECT name, setting FROM pg_settings WHERE name LIKE 'pgaudit.%' OR name = ANY($1)`),
    [SETTINGS],
  );
  return Object.fromEntries(res.rows.map((r) => [r.name, r.setting]));
}

async function readGrants(client: pg.Client, role: string): Promise<Grant[]> {
  const res = await client.query(
    tagged(`WITH r AS (SELECT oid FROM pg_roles WHERE rolname = $1)
            SELECT n.nspname AS s, c.relname AS t, NULL::text AS col, a.privilege_type AS p
              FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a, r
             WHERE a.grantee = r.oid
            UNION ALL
            SELECT n.nspname, c.relname, att.attname, a.privilege_type
              FROM pg_attribute att JOIN pg_class c ON c.oid = att.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace,
                   aclexplode(att.attacl) a, r
             WHERE a.grantee = r.oid AND NOT att.attisdropped`),
    [role],
  );
  const grants = new Map<string, Grant>();
  for (const row of res.rows) {
    if (!["SELECT", "INSERT", "UPDATE", "DELETE"].includes(row.p)) continue;
    const relation = qualifiedName(row.s, row.t);
    const key = `${relation}|${row.col === null ? "" : "cols"}|${row.p}`;
    const g = grants.get(key) ?? {
      relation,
      privileges: [row.p as Privilege],
      ...(row.col === null ? {} : { columns: [] }),
    };
    if (row.col !== null) g.columns!.push(row.col);
    grants.set(key, g);
  }
  return [...grants.values()];
}

const onOff = (v: string | undefined): boolean => v === "on";

/** The configuration a server runs, from its settings and the audit role's grants. */
async function currentConfig(client: pg.Client, settings: Record<string, string>): Promise<AuditConfig> {
  const role = settings["pgaudit.role"] ?? "";
  return {
    name: "current",
    log: (settings["pgaudit.log"] ?? "none").split(","),
    logRelation: onOff(settings["pgaudit.log_relation"]),
    logCatalog: settings["pgaudit.log_catalog"] !== "off",
    logStatementOnce: onOff(settings["pgaudit.log_statement_once"]),
    logParameter: onOff(settings["pgaudit.log_parameter"]),
    logRows: onOff(settings["pgaudit.log_rows"]),
    logStatement: settings["pgaudit.log_statement"] !== "off",
    ...(role === "" ? {} : { role, grants: await readGrants(client, role) }),
    pgLogStatement: (settings.log_statement ?? "none") as AuditConfig["pgLogStatement"],
    pgLogDuration: onOff(settings.log_duration),
  };
}

function destinationOf(setting: string | undefined, warnings: string[]): LogDestinationName {
  const list = (setting ?? "stderr").split(",").map((s) => s.trim());
  const pick = (["csvlog", "jsonlog", "syslog", "stderr"] as const).find((d) => list.includes(d)) ?? "stderr";
  if (list.length > 1)
    warnings.push(
      `log_destination is ${setting}: every entry is written ${list.length} times; estimated for ${pick} only`,
    );
  return pick;
}

async function logContext(
  client: pg.Client,
  settings: Record<string, string>,
  constantLength: number,
  statementsLoaded: boolean,
  privileges: Privileges,
  warnings: string[],
): Promise<LogContext> {
  // Without pg_read_all_stats other sessions show their user and application but no
  // backend_type, state or client address: counted as hidden, never as "not connected".
  const others = `FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
                     AND (backend_type = 'client backend' OR (backend_type IS NULL AND query = '${HIDDEN_QUERY}' AND usename IS NOT NULL))`;
  const r = await client.query(
    tagged(`SELECT current_user AS u, current_database() AS d, pg_backend_pid() AS pid,
                   txid_snapshot_xmax(txid_current_snapshot())::text AS xid,
                   (SELECT to_char(now() AT TIME ZONE current_setting('log_timezone'), 'YYYY') ) AS y,
                   (SELECT abbrev FROM pg_timezone_names WHERE name = current_setting('log_timezone')) AS tz,
                   (SELECT mode() WITHIN GROUP (ORDER BY usename) ${others}) AS top_user,
                   (SELECT mode() WITHIN GROUP (ORDER BY application_name) ${others}) AS top_app,
                   (SELECT mode() WITHIN GROUP (ORDER BY coalesce(host(client_addr), '[local]')) ${others}
                       AND backend_type IS NOT NULL) AS top_host,
                   (SELECT count(*)::int ${others} AND backend_type IS NULL) AS hidden`),
  );
  const row = r.rows[0];
  const preload = settings.shared_preload_libraries ?? "";
  // pg_stat_statements being readable means it is loaded, whether or not the preload list is.
  const queryIds =
    settings.compute_query_id === "on" ||
    (settings.compute_query_id !== "off" &&
      settings.compute_query_id !== "regress" &&
      (/pg_stat_statements/.test(preload) || statementsLoaded));
  const host = row.top_host ?? "[local]";
  const hidden = hiddenSessionsWarning(row.hidden, privileges);
  if (hidden) warnings.push(hidden);
  else if (!row.top_user)
    warnings.push("no other client is connected: user and application names are the sampler's own");
  return {
    destination: destinationOf(settings.log_destination, warnings),
    prefix: settings.log_line_prefix ?? "%m [%p] ",
    timezone: row.tz ?? "UTC",
    user: row.top_user ?? row.u,
    database: row.d,
    application: row.top_app ?? "",
    remoteHost: host,
    remotePort: host === "[local]" ? null : 54321,
    backendType: "client backend",
    pid: Number(row.pid),
    sessionLine: 1,
    statementId: 1,
    vxid: "3/1",
    xid: Number(row.xid),
    queryIds,
    constantLength,
  };
}

/** How often the sampler looks at pg_stat_activity (running statements' sizes, active clients). */
const ACTIVITY_POLL_MS = 100;
/** How long one polling transaction lasts before the sampler commits and begins another. */
const POLL_TRANSACTION_MS = 5_000;

/**
 * The sizes of the statements other sessions are running (pg_stat_activity.query, PostgreSQL
 * 14+ with query ids): pg_stat_statements keeps only the text with constants replaced by `$n`,
 * and a JSON literal is many times longer than `$1`. Only sizes leave the server, never text.
 */
async function observeTexts(client: pg.Client, observed: Observed): Promise<void> {
  if (observed.unavailable) return;
  try {
    const r = await client.query(
      tagged(`SELECT query_id::text AS q, octet_length(query)::float8 AS b,
                     (octet_length(query) - octet_length(replace(query, '"', '')))::float8 AS d,
                     coalesce((SELECT max(m[1]::int) FROM regexp_matches(query, '[$]([0-9]+)', 'g') m), 0)::float8 AS p,
                     octet_length(query) >= (SELECT setting::int - 4 FROM pg_settings WHERE name = 'track_activity_query_size') AS t,
                     (SELECT count(*) FROM pg_stat_activity w WHERE w.leader_pid = a.pid AND w.pid <> a.pid)::float8 AS w,
                     (xact_start IS NOT NULL AND xact_start <> query_start) AS x,
                     CASE WHEN query ~ ';\\s*\\S' THEN ARRAY(
                       SELECT DISTINCT md5(${PIECE_KEY_SQL}) FROM regexp_split_to_table(query, ';') p
                        WHERE p ~ '\\S') END AS c
                FROM pg_stat_activity a
               WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'
                 AND query_id IS NOT NULL AND query_id <> 0`),
    );
    for (const row of r.rows) {
      const o = observed.get(row.q) ?? { bytes: 0, quotes: 0, params: 0, n: 0, truncated: 0 };
      // Inside a transaction block (begun before the statement): BEGIN and COMMIT around it.
      if (row.x) o.inBlock = (o.inBlock ?? 0) + 1;
      // Its parallel workers at that moment (a plan runs its Gather for part of the statement only).
      if (row.w > 0) {
        o.parallel = (o.parallel ?? 0) + 1;
        o.workers = (o.workers ?? 0) + row.w;
      }
      // A text cut at track_activity_query_size tells only that its values are long.
      if (row.t) {
        o.truncated = (o.truncated ?? 0) + 1;
        // What shows of it before the cut: `$n` there are bind parameters (a literal would show).
        if (row.p > 0) o.truncatedParams = Math.max(o.truncatedParams ?? 0, row.p);
      } else {
        o.bytes += row.b;
        o.quotes += row.d;
        o.params = (o.params ?? 0) + row.p;
        o.n += 1;
      }
      observed.set(row.q, o);
      // Sent in one query string with others: pgaudit logs the whole string for each of them,
      // the fast ones too (BEGIN, COMMIT) that a poll seldom catches running.
      if (!row.t)
        for (const piece of (row.c as string[] | null) ?? []) {
          const c = compounds(observed).get(piece) ?? { bytes: 0, quotes: 0, n: 0, hosts: new Set<string>() };
          c.bytes += row.b;
          c.quotes += row.d;
          c.n += 1;
          c.hosts.add(row.q);
          compounds(observed).set(piece, c);
        }
    }
  } catch {
    observed.unavailable = true;
  }
}

/**
 * Row-level security the workload's tables enforce on its session user: each policy's subquery is
 * one more relation pgaudit logs (READ, under log_relation and object auditing) and each function
 * it calls a FUNCTION entry, none of which the statements' text shows (measured on a policy with a
 * membership EXISTS and a PL/pgSQL check: `all` 39 % low). Not modelled: named, with what they add.
 */
async function rowSecurityWarning(
  client: pg.Client,
  statements: readonly StatementLoad[],
  user: string,
): Promise<string | null> {
  const touched = [...new Set(statements.flatMap((s) => s.relations.map((r) => r.relation)))];
  if (touched.length === 0) return null;
  try {
    const r = await client.query<{ t: string; rels: string[] | null; funcs: string[] | null }>(
      tagged(`SELECT n.nspname || '.' || c.relname AS t,
                     array_agg(DISTINCT d.refobjid::regclass::text) FILTER (WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid <> c.oid) AS rels,
                     array_agg(DISTINCT d.refobjid::regprocedure::text) FILTER (WHERE d.refclassid = 'pg_proc'::regclass) AS funcs
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_policy p ON p.polrelid = c.oid
                LEFT JOIN pg_depend d ON d.classid = 'pg_policy'::regclass AND d.objid = p.oid
               WHERE c.relrowsecurity AND n.nspname || '.' || c.relname = ANY($1)
                 AND NOT coalesce((SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = $2), false)
                 AND (c.relforcerowsecurity OR NOT coalesce(pg_has_role($2, c.relowner, 'USAGE'), false))
               GROUP BY 1 ORDER BY 1`),
      [touched, user],
    );
    const added = r.rows.filter((row) => (row.rels?.length ?? 0) + (row.funcs?.length ?? 0) > 0);
    if (added.length === 0) return null;
    const what = added
      .map((row) =>
        [
          row.t,
          row.rels?.length ? ` reads ${row.rels.join(", ")}` : "",
          row.funcs?.length ? `${row.rels?.length ? " and" : ""} calls ${row.funcs.join(", ")}` : "",
        ].join(""),
      )
      .join("; ");
    return `row-level security applies to ${user} on ${added.length} table(s) the workload uses, and its policies add to what pgaudit logs what no statement's text shows: ${what}. Each relation a policy reads is one more READ entry per statement under log_relation and object auditing, and each function it calls one FUNCTION entry: not in this estimate, which is low by them`;
  } catch {
    // A role that cannot see the policies or the user: nothing to add.
    return null;
  }
}

/** Whether pg_stat_statements can be read, and why not (what it hides is counted over the sample). */
async function statementsAvailable(client: pg.Client, warnings: string[]): Promise<boolean> {
  try {
    await client.query(tagged("SELECT 1 FROM pg_stat_statements LIMIT 1"));
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "42P01")
      warnings.push(
        "pg_stat_statements is not installed in this database (CREATE EXTENSION pg_stat_statements): rates come from table statistics, per table and operation, without statement text, BEGIN/COMMIT or parameters (coarse)",
      );
    else if (code === "55000")
      warnings.push(
        "pg_stat_statements is not loaded (shared_preload_libraries): rates come from table statistics (coarse)",
      );
    else if (code === "42501")
      warnings.push(
        "permission denied for pg_stat_statements: grant pg_read_all_stats to this role; rates come from table statistics (coarse)",
      );
    else throw error;
    return false;
  }
}

async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Samples the database: two reads `intervalMs` apart. The connection's password is never logged or returned. */
export async function sampleWorkload(options: SampleOptions = {}): Promise<WorkloadSample> {
  const { client, release } = await connectSampler(options);
  try {
    await client.query(tagged("SET application_name = 'auditpipe-estimate'"));
    const setup = await readSetup(client, options);
    const { catalog, warnings } = setup;
    const nested = await nestedTracking(client, {
      statements: setup.useStatements,
      requested: options.trackNested ?? false,
      tag: tagged,
    });
    // track = 'none' counts nothing (unless the sample switched it to 'all' just now).
    const useStatements =
      setup.useStatements && (setup.track !== "none" || nested.tracking.mode === "counted");
    if (setup.useStatements && !useStatements)
      warnings.push(
        "pg_stat_statements.track is 'none': it counts no statement, so rates come from table statistics (coarse); set it to 'top' for the sample, or sample with --track-nested as a superuser",
      );
    const { interval, load } = await watchInterval(client, options, useStatements, nested);
    const roles = useStatements ? await sessionRoles(client, catalog) : EVERY_SESSION;
    const rates = workloadRates(
      interval,
      catalog,
      {
        useStatements,
        roles,
        privileges: setup.privileges,
        unreadable: setup.unreadable,
        trackUtility: setup.trackUtility,
      },
      warnings,
    );
    const notes = [...rates.notes, ...nestedNotes(nested.tracking, rates.statements, catalog)];
    if (useStatements) await parallelPlans(client, rates.statements, notes);
    if (rates.unsized.length > 0)
      await sizeValues(client, rates.unsized, catalog, setup.log.constantLength, notes, warnings);
    const log = withActiveNames(setup.log, interval.activeNames, warnings);
    const rls = await rowSecurityWarning(client, rates.statements, log.user);
    if (rls) warnings.push(rls);
    const workload: Workload = {
      transactionsPerSec: rates.transactionsPerSec,
      statements: rates.statements,
      nestedStatements: nested.tracking.mode,
      foreignKeys: catalog.foreignKeys,
      tableInsertsPerSec: rates.tableInsertsPerSec,
      tableUpdatesPerSec: rates.tableUpdatesPerSec,
      tableDeletesPerSec: rates.tableDeletesPerSec,
      ...(Object.keys(rates.fkCheckShares).length > 0 ? { fkCheckShares: rates.fkCheckShares } : {}),
      sessionsPerSec: rates.sessionsPerSec,
      ...(rates.clients > 0 ? { clients: rates.clients } : {}),
      ...(rates.meanStatementMs === undefined ? {} : { meanStatementMs: rates.meanStatementMs }),
      pgauditLoaded: Object.keys(setup.settings).some((name) => name.startsWith("pgaudit.")),
      pgauditLogging: pgauditLogs(setup.settings),
      load,
      log,
      notes,
    };
    return {
      takenAt: new Date().toISOString(),
      intervalSec: interval.seconds,
      database: log.database,
      workload,
      catalog,
      settings: setup.settings,
      currentConfig: setup.config,
      statementStats: useStatements,
      nested: nested.tracking,
      warnings,
    };
  } catch (error) {
    throw sampleError("sample", error);
  } finally {
    release();
    await client.end().catch(() => {});
  }
}

/**
 * Connects the sampler's client; `release` stops listening for the abort. The connection's
 * password is never logged or returned.
 */
async function connectSampler(options: SampleOptions): Promise<{ client: pg.Client; release: () => void }> {
  const client = await newPgClient(
    typeof options.connection === "string"
      ? { connectionString: options.connection }
      : (options.connection ?? {}),
  );
  // The server going away while the client is idle (between the two reads) is an 'error' event,
  // which would end the process unheard; the next query then fails and is reported as a sample error.
  client.on("error", () => {});
  // An abort ends the connection at once, so a connect that hangs or a query under way ends now,
  // not when it is done (a server stopping on SIGTERM must not wait for it) — unless a setting
  // must still be put back over it (trackNested), which the wait loop's own check then does.
  const endOnAbort = (): void => {
    if (!options.trackNested) client.end().catch(() => {});
  };
  const release = (): void => options.signal?.removeEventListener("abort", endOnAbort);
  options.signal?.addEventListener("abort", endOnAbort, { once: true });
  if (options.signal?.aborted) endOnAbort();
  try {
    await client.connect();
  } catch (error) {
    release();
    throw sampleError("connect", error);
  }
  return { client, release };
}

/** What the sampler reads once before the interval: settings, privileges, catalog, log context. */
interface Setup {
  privileges: Privileges;
  settings: Record<string, string>;
  /** The settings this role cannot read. */
  unreadable: string[];
  useStatements: boolean;
  /** pg_stat_statements.track_utility (true without pg_stat_statements). */
  trackUtility: boolean;
  /** pg_stat_statements.track as the sample began ('top' without pg_stat_statements). */
  track: string;
  catalog: Catalog;
  log: LogContext;
  config: AuditConfig;
  warnings: string[];
}

async function readSetup(client: pg.Client, options: SampleOptions): Promise<Setup> {
  const warnings: string[] = [];
  const privileges = await readPrivileges(client, tagged);
  const settings = await readSettings(client);
  const unreadable = unreadableSettings(SETTINGS, settings, privileges);
  if (unreadable.length > 0)
    warnings.push(
      `role ${privileges.role} cannot read ${unreadable.join(", ")} (${grantSql([READ_ALL_SETTINGS], privileges.role)}, or sample as a superuser): what depends on ${unreadable.length > 1 ? "them" : "it"} is not checked`,
    );
  const preload = preloadWarning(settings, privileges);
  if (preload) warnings.push(preload);
  const useStatements = await statementsAvailable(client, warnings);
  const catalog = await readCatalog(client);
  const log = await logContext(
    client,
    settings,
    options.constantLength ?? 4,
    useStatements,
    privileges,
    warnings,
  );
  const config = await currentConfig(client, settings);
  // track = 'none' counts nothing; track_utility off, no BEGIN, COMMIT, SET or DDL.
  const tracking = useStatements
    ? (
        await client.query<{ t: string | null; u: string | null }>(
          tagged(`SELECT current_setting('pg_stat_statements.track', true) AS t,
                         current_setting('pg_stat_statements.track_utility', true) AS u`),
        )
      ).rows[0]
    : undefined;
  const trackUtility = tracking?.u !== "off";
  const track = tracking?.t ?? "top";
  return {
    privileges,
    settings,
    unreadable,
    useStatements,
    track,
    trackUtility,
    catalog,
    log,
    config,
    warnings,
  };
}

/**
 * The interval: a snapshot, `intervalMs` of polls of pg_stat_activity and the server's load,
 * another snapshot. A setting switched for the sample (`nested`) is put back before anything
 * else can fail, on error or abort too.
 */
async function watchInterval(
  client: pg.Client,
  options: SampleOptions,
  useStatements: boolean,
  nested: Awaited<ReturnType<typeof nestedTracking>>,
): Promise<{ interval: Interval; load: ServerLoad }> {
  const total = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const columns = { toplevel: nested.toplevelColumn, nested: nested.tracking.mode === "counted" };
  const seen = {
    clientCounts: [] as number[],
    clientsHidden: false,
    transactionBlocksSeen: false,
    activeNames: new Map<string, number>(),
  };
  const observed: Observed = new Map();
  const probe = new ServerLoadProbe(options.load);
  let inTransaction = false;
  let before: Snapshot;
  let after: Snapshot;
  let started: number;
  let load: ServerLoad;
  try {
    await probe.start(client);
    before = await snapshot(client, useStatements, columns);
    started = Date.now();
    // The polls run in a transaction so the sampler adds one every few seconds, not ten a
    // second, to the transactions it counts (renewed so no transaction_timeout ends it); each
    // poll clears the statistics snapshot the transaction caches.
    await client.query(tagged("BEGIN"));
    inTransaction = true;
    let began = Date.now();
    options.onProgress?.(0, total);
    while (Date.now() - started < total) {
      if (options.signal?.aborted) throw new Error("interrupted before the sample was complete");
      await sleep(Math.min(ACTIVITY_POLL_MS, total - (Date.now() - started)), options.signal);
      if (options.signal?.aborted) throw new Error("interrupted before the sample was complete");
      if (Date.now() - began > POLL_TRANSACTION_MS) {
        await client.query(tagged("COMMIT"));
        await client.query(tagged("BEGIN"));
        began = Date.now();
      }
      await pollActivity(client, seen);
      if (useStatements) await observeTexts(client, observed);
      await probe.poll(client);
      options.onProgress?.(Math.min(total, Date.now() - started), total);
    }
    await client.query(tagged("COMMIT"));
    inTransaction = false;
    after = await snapshot(client, useStatements, columns);
    load = await probe.finish(client, applicationTransactions(before, after));
  } finally {
    if (inTransaction) await client.query("ROLLBACK").catch(() => {});
    // Put back before anything else can fail; on error or abort too.
    await nested.restore();
  }
  const seconds = (Date.now() - started) / 1000;
  return { interval: { before, after, seconds, ...seen, observed }, load };
}

/**
 * One poll of pg_stat_activity: active clients, hidden sessions, sessions inside transaction
 * blocks, and the names (user, application, client host) of the sessions running statements.
 */
async function pollActivity(
  client: pg.Client,
  seen: {
    clientCounts: number[];
    clientsHidden: boolean;
    transactionBlocksSeen: boolean;
    activeNames: Map<string, number>;
  },
): Promise<void> {
  await client.query(tagged("SELECT pg_stat_clear_snapshot()"));
  const a = await client.query(
    tagged(`SELECT count(*) FILTER (WHERE backend_type = 'client backend' AND state NOT IN ('idle'))::int AS n,
                   count(*) FILTER (WHERE backend_type IS NULL AND query = '${HIDDEN_QUERY}'
                                      AND usename IS NOT NULL)::int AS hidden,
                   count(*) FILTER (WHERE backend_type = 'client backend' AND (state = 'idle in transaction'
                                      OR (state = 'active' AND xact_start < query_start)))::int AS in_block
              FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()`),
  );
  seen.clientCounts.push(a.rows[0].n);
  if (a.rows[0].hidden > 0) seen.clientsHidden = true;
  if (a.rows[0].in_block > 0) seen.transactionBlocksSeen = true;
  if (a.rows[0].n === 0) return;
  const names = await client.query(
    tagged(`SELECT usename AS u, application_name AS a, coalesce(host(client_addr), '[local]') AS h, count(*)::int AS n
              FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
               AND backend_type = 'client backend' AND state <> 'idle' AND usename IS NOT NULL
             GROUP BY 1, 2, 3`),
  );
  for (const r of names.rows) {
    const key = JSON.stringify([r.u, r.a ?? "", r.h]);
    seen.activeNames.set(key, (seen.activeNames.get(key) ?? 0) + r.n);
  }
}

/**
 * The log context with the names of the sessions seen running statements through the sample
 * (the most often seen), rather than those connected when it began: idle pool connections, or a
 * load that starts with the sample, would otherwise name the lines.
 */
function withActiveNames(
  log: LogContext,
  activeNames: Map<string, number> | undefined,
  warnings: string[],
): LogContext {
  const top = [...(activeNames ?? [])].sort((a, b) => b[1] - a[1])[0];
  if (!top) return log;
  const [user, application, host] = JSON.parse(top[0]) as [string, string, string];
  const alone = warnings.findIndex((w) => w.startsWith("no other client is connected"));
  if (alone >= 0) warnings.splice(alone, 1);
  return { ...log, user, application, remoteHost: host, remotePort: host === "[local]" ? null : 54321 };
}

/**
 * Which roles' statements pgaudit logs for which sessions: it logs a statement that reads or
 * writes a table only for a session user who is a member of the role the statement runs as. A
 * foreign-key check runs as the owner of its table; a SECURITY DEFINER function's statements as
 * the function's owner. Unknown pairs count as members.
 */
async function sessionRoles(client: pg.Client, catalog: Catalog): Promise<SessionRoles> {
  const owners = new Map(catalog.tables.map((t) => [t.qualified, t.owner]));
  const members = new Map<string, boolean>();
  const names = new Map<string, string>();
  const pairs = await client.query<{ userid: string; role: string; name: string; m: boolean }>(
    tagged(`SELECT u.userid::text AS userid, r.oid::text AS role, r.rolname AS name, pg_has_role(u.userid, r.oid, 'MEMBER') AS m
              FROM (SELECT DISTINCT userid FROM pg_stat_statements) u, pg_roles r
             WHERE r.rolname = ANY($1) OR r.oid IN (SELECT userid FROM pg_stat_statements)`),
    [[...new Set(owners.values())]],
  );
  for (const r of pairs.rows) {
    members.set(`${r.userid}|${r.role}`, r.m);
    names.set(r.name, r.role);
  }
  const definers = await client.query<{ role: string }>(
    tagged("SELECT DISTINCT proowner::text AS role FROM pg_proc WHERE prosecdef"),
  );
  const definer = new Set(definers.rows.map((r) => r.role));
  const member = (session: string, role: string): boolean => members.get(`${session}|${role}`) ?? true;
  return {
    ofOwner: (userid, table) => {
      const owner = names.get(owners.get(table) ?? "");
      return owner === undefined || member(userid, owner);
    },
    member,
    definer: (userid) => definer.has(userid),
  };
}

/** At most this many statements' plans are read for parallel workers, the most called first. */
const PLANS_READ = 50;

/**
 * Parallel workers of the SELECTs: a worker runs the plan again and pgaudit logs its entries once
 * more (measured: the worker's line has no user, database or client). Too short-lived for the
 * polls to catch reliably, they are read from the plan of each SELECT without `$n` (EXPLAIN
 * without ANALYZE: nothing runs). The others, and one that does not plan here, keep what the
 * polls saw.
 */
async function parallelPlans(client: pg.Client, statements: StatementLoad[], notes: string[]): Promise<void> {
  const selects = statements
    // Only a text without `$n` plans as it runs: one with constants or parameters gets a custom
    // plan for its values (a generic plan of `owner = $1` may be parallel where none runs).
    .filter((s) => !s.nested && s.kind === "SELECT" && s.relations.length > 0 && !/\$\d/.test(s.text))
    .sort((a, b) => b.callsPerSec - a.callsPerSec)
    .slice(0, PLANS_READ);
  let parallel = 0;
  for (const s of selects) {
    try {
      await client.query(tagged("BEGIN"));
      await client.query(tagged("SET LOCAL statement_timeout = '2s'"));
      const r = await client.query<{ "QUERY PLAN": unknown }>(tagged(`EXPLAIN (FORMAT JSON) ${s.text}`));
      const workers = plannedWorkers(r.rows[0]?.["QUERY PLAN"]);
      if (workers > 0) {
        s.parallelWorkers = workers;
        parallel++;
      } else delete s.parallelWorkers;
    } catch {
      // Not plannable here (a temporary table of another session): what the polls saw stands.
    } finally {
      await client.query(tagged("ROLLBACK")).catch(() => undefined);
    }
  }
  if (parallel > 0)
    notes.push(
      `${parallel} statement(s) run parallel plans (their plans' Gather nodes): each worker logs the statement's entries once more, counted`,
    );
}

/** Rows read per column to size its values; a sample of the table's pages, not the table. */
const SIZE_ROWS = 500;

/**
 * Sizes the values pg_stat_activity could not show (bind parameters, texts cut at
 * track_activity_query_size) from the columns their statements tie them to: the mean length of
 * a few hundred of each column's values as text, computed on the server (no value leaves it).
 */
async function sizeValues(
  client: pg.Client,
  unsized: UnsizedValues[],
  catalog: Catalog,
  constantLength: number,
  notes: string[],
  warnings: string[],
): Promise<void> {
  const lookup = catalogLookup(catalog);
  const tables = new Map(catalog.tables.map((t) => [t.qualified, t]));
  const sizes = new Map<string, ValueSize>();
  for (const { relation, column } of columnsToSize(unsized, lookup)) {
    const table = tables.get(relation);
    if (!table || !["r", "p", "m"].includes(table.kind)) continue;
    // About 20 pages' worth of rows for each row wanted, of the table's pages at random.
    const percent = Math.min(100, Math.max(0.01, (100 * 20 * SIZE_ROWS) / Math.max(1, table.rowEstimate)));
    const v = `${quoteIdent(column)}::text`;
    try {
      await client.query(tagged("BEGIN"));
      await client.query(tagged("SET LOCAL statement_timeout = '2s'"));
      const r = await client.query<{ n: number; b: number; q: number; s: number; c: number }>(
        tagged(`SELECT count(*)::float8 AS n, avg(octet_length(v))::float8 AS b,
                       avg(octet_length(v) - octet_length(replace(v, '"', '')))::float8 AS q,
                       avg(octet_length(v) - octet_length(replace(v, '''', '')))::float8 AS s,
                       avg((v ~ '[,"\\r\\n]')::int)::float8 AS c
                  FROM (SELECT ${v} AS v FROM ${relation} TABLESAMPLE SYSTEM (${percent})
                         WHERE ${quoteIdent(column)} IS NOT NULL LIMIT ${SIZE_ROWS}) x`),
      );
      await client.query(tagged("COMMIT"));
      const row = r.rows[0];
      if (row && row.n > 0)
        sizes.set(columnKey(relation, column), {
          bytes: row.b,
          quotes: row.q,
          singleQuotes: row.s,
          quoted: row.c,
        });
    } catch {
      // No SELECT on it, or too slow: its values keep the constant length.
      await client.query(tagged("ROLLBACK")).catch(() => undefined);
    }
  }
  const { unsized: blind } = applyValueSizes(unsized, sizes, catalog, lookup, constantLength);
  const params = unsized.filter((u) => u.values === "parameters").length;
  const literals = unsized.length - params;
  if (sizes.size > 0)
    notes.push(
      `values sized from ${sizes.size} column(s) they are written to or compared with (a sample of each column's rows, sizes only): ${[
        params > 0 ? `bind parameters of ${params} statement(s), logged with log_parameter` : "",
        literals > 0 ? `constants of ${literals} statement(s) longer than track_activity_query_size` : "",
      ]
        .filter(Boolean)
        .join("; ")}`,
    );
  if (blind > 0)
    warnings.push(
      `the values of ${blind} statement(s) could not be sized (bind parameters, or texts longer than track_activity_query_size, tied to no column this role may read): each is taken as ${constantLength} bytes, so a configuration that logs them (log_parameter, or any for long constants) may be estimated low`,
    );
}

/** The notes that say how statements run inside others were counted, or what modelling them misses. */
function nestedNotes(tracking: NestedTracking, statements: StatementLoad[], catalog: Catalog): string[] {
  if (tracking.mode !== "modelled")
    return [`counted: statements run inside others come from pg_stat_statements (${tracking.reason})`];
  const notes = [
    `modelled: statements run inside others are derived from the catalog (${tracking.reason}); may miss ${MODELLED_MISSES}`,
  ];
  const unseen = modelledMisses({ statements, nestedStatements: "modelled" }, catalog);
  if (unseen.length > 0) notes.push(`not counted here: ${unseen.join("; ")}`);
  return notes;
}
