/**
 * The estimator's inputs and outputs. A Workload says what the database does (per-statement
 * rates, the relations each statement touches, foreign keys, how its log lines look); an
 * AuditConfig is a candidate pgAudit configuration; an Estimate is what that configuration would
 * write and cost on that workload.
 */

import type { ArchiveCost } from "./cost.ts";

/** What a statement does, as pgAudit classifies it before looking at relations. */
export type StatementKind = "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "UTILITY";

export type Privilege = "SELECT" | "INSERT" | "UPDATE" | "DELETE";

/** One relation in a statement's range table. */
/** The object types pgaudit prints for a relation other than TABLE. */
export type ObjectType = "VIEW" | "COMPOSITE TYPE" | "MATERIALIZED VIEW" | "FOREIGN TABLE";

export interface RelationUse {
  /** Schema-qualified name as pgAudit prints it (`public.accounts`, `"My Schema"."T"`). */
  relation: string;
  /** INSERT/UPDATE/DELETE when this relation is the statement's target; absent when only read. */
  write?: "INSERT" | "UPDATE" | "DELETE";
  /** Columns the statement reads from it; absent means every column (`SELECT *`, or unknown). */
  columns?: string[];
  /** Columns an UPDATE sets or an INSERT fills; absent means every column. */
  writtenColumns?: string[];
  /** Locked FOR UPDATE/SHARE (as FK checks do), which needs UPDATE privilege as well as SELECT. */
  locked?: boolean;
  /**
   * The privileges PostgreSQL checks on it (the range-table entry's requiredPerms), which are
   * what pgaudit matches the audit role's grants against. Absent: INSERT needs INSERT; UPDATE and
   * DELETE need themselves and SELECT; a read SELECT (and UPDATE when locked). An INSERT …
   * RETURNING needs SELECT too; an UPDATE that reads no column of its target does not.
   */
  privileges?: Privilege[];
  /** A pg_catalog relation (filtered out unless log_catalog is on; information_schema's views are not). */
  catalog?: boolean;
  /**
   * pgaudit's object type when not TABLE (a view prints VIEW, ON CONFLICT's EXCLUDED COMPOSITE
   * TYPE, a materialized view MATERIALIZED VIEW, a foreign table FOREIGN TABLE).
   */
  objectType?: ObjectType;
  /**
   * A relation the planner added without privileges to check (PostgreSQL 15: a view's second
   * range-table entry, the partitions a scan of a partitioned table reaches): pgaudit logs it
   * with log_relation as `MISC,???` (so only with MISC on), never in object mode.
   */
  plannerAdded?: boolean;
  /**
   * An INSERT … ON CONFLICT DO UPDATE's or a MERGE's target: each row it counts is inserted or
   * updated (pg_stat_statements does not say which), the update setting `updatedColumns`.
   */
  upsert?: { updatedColumns: string[] };
}

/** One distinct statement of the workload (a pg_stat_statements row, or a line of a workload file). */
export interface StatementLoad {
  /** Representative text as PostgreSQL logs it; `$n` placeholders stand for constants or parameters. */
  text: string;
  callsPerSec: number;
  kind: StatementKind;
  /** Command tag pgAudit prints for a UTILITY statement (BEGIN, COMMIT, SET, CREATE TABLE, ...). */
  command?: string;
  relations: RelationUse[];
  /**
   * A utility statement's query (CREATE TABLE AS, CREATE MATERIALIZED VIEW, DECLARE CURSOR,
   * COPY (query) TO) and the relations it reads: pgaudit logs it as a READ, with the utility's
   * text, before the utility's own entry. Absent when pg_stat_statements counted the query.
   */
  queryRelations?: RelationUse[];
  /**
   * Parallel workers per call (pg_stat_activity's workers of a backend running it, while it had
   * any): each logs the statement's entries again. Absent: none.
   */
  parallelWorkers?: number;
  /** Rows processed per call (pg_stat_statements `rows / calls`). */
  rowsPerCall: number;
  /** Bind parameters per call sent through the extended protocol (logged with log_parameter); default 0. */
  params?: number;
  /**
   * Their values as pgaudit prints them with log_parameter, in `$n` order, sized from the
   * columns the text ties them to (sample.ts); absent: the log context's constant length each.
   */
  paramValues?: ParamValue[];
  /** Whether the session user may see foreign-key checks this statement fires (member of the parent's owner); default true. */
  fkChecksVisible?: boolean;
  /**
   * The text as it ran, measured on pg_stat_activity (mean UTF-8 bytes and double quotes): the
   * constants pg_stat_statements replaced by `$n` are sized to match. Only sizes are kept.
   */
  observed?: { bytes: number; quotes: number };
  /** User functions and procedures it calls (one FUNCTION entry each per call of the statement). */
  functions?: string[];
  /**
   * Run inside another statement (pg_stat_statements.track = 'all', toplevel false): a foreign-key
   * check or cascade, a statement of a function, procedure or trigger. Logged as a substatement.
   */
  nested?: boolean;
}

/** A foreign key: inserting a child row runs one check query against the parent. */
export interface ForeignKey {
  /** Referencing table, qualified as pgAudit prints it. */
  child: string;
  /** Referenced table. */
  parent: string;
  /** Referencing columns. */
  columns: string[];
  /** Referenced columns, in the same order. */
  parentColumns: string[];
  /** Whether a referencing column has a default (an INSERT that leaves the key out still sets one). */
  columnsHaveDefault?: boolean;
  /** What deleting a parent row does (default no action: a check of the child per row). */
  onDelete?: FkAction;
  /** What changing a parent's key does (default no action). */
  onUpdate?: FkAction;
  /**
   * DEFERRABLE INITIALLY DEFERRED: its checks run at COMMIT, where pgaudit 1.7 logs nothing of
   * them (measured: packages/estimate/test/proof.test.ts, the stock workload).
   */
  deferred?: boolean;
}

export type FkAction = "no action" | "restrict" | "cascade" | "set null" | "set default";

export type LogDestinationName = "csvlog" | "jsonlog" | "stderr" | "syslog";

/**
 * What the fields around an audit message look like on this server. Representative values: the
 * estimator renders a record with them and counts its bytes.
 */
export interface LogContext {
  destination: LogDestinationName;
  /** log_line_prefix (stderr and syslog). */
  prefix: string;
  /** Time zone abbreviation PostgreSQL prints (log_timezone), e.g. `UTC`, `CEST`. */
  timezone: string;
  user: string;
  database: string;
  application: string;
  /** `[local]` for a unix socket, else the client address. */
  remoteHost: string;
  /** Client port; null for a unix socket. */
  remotePort: number | null;
  backendType: string;
  pid: number;
  /** A parallel worker's leader (csvlog's leader_pid, jsonlog's `leader_pid`); absent for a client backend. */
  leaderPid?: number;
  /** A typical session_line_num / `%l`. */
  sessionLine: number;
  /** A typical pgAudit statement id (statements audited so far in the session). */
  statementId: number;
  /** A typical virtual transaction id (`backendId/localXid`). */
  vxid: string;
  /** A typical transaction id of a writing transaction. */
  xid: number;
  /** Whether query ids are computed (compute_query_id, or pg_stat_statements loaded): a 64-bit number instead of 0. */
  queryIds: boolean;
  /** Printed length of a typical constant replacing a `$n` of pg_stat_statements' normalized text. */
  constantLength: number;
}

/** How statements run inside others got into the estimate. */
export interface NestedTracking {
  /** `counted`: from pg_stat_statements; `modelled`: derived from the catalog. */
  mode: "counted" | "modelled";
  /** Why, in a sentence the output prints. */
  reason: string;
  /** Whether the sampler changed pg_stat_statements.track for the sample (and put it back). */
  changed: boolean;
}

/** A bind parameter's value as text: mean bytes, double quotes, and the share that pgaudit's CSV quotes (`,` `"` CR LF). */
export interface ParamValue {
  bytes: number;
  quotes: number;
  quoted: number;
}

/** The workload the estimate runs on. */
export interface Workload {
  /** Committed and rolled back transactions per second. */
  transactionsPerSec: number;
  statements: StatementLoad[];
  foreignKeys: ForeignKey[];
  /** Rows inserted per second by table (pg_stat_user_tables), for FK checks of inserts no statement explains (COPY, triggers). */
  tableInsertsPerSec?: Record<string, number>;
  /**
   * Rows updated and deleted per second by table (pg_stat_user_tables): beyond the statements'
   * own, the rows foreign-key actions (CASCADE, SET NULL) reached, which fire actions in turn.
   */
  tableUpdatesPerSec?: Record<string, number>;
  tableDeletesPerSec?: Record<string, number>;
  /**
   * Per referenced table, the share of its foreign-key checks pgaudit logs, where below 1: the
   * share of top-level calls whose role is a member of the table's owner (the check runs as the
   * owner). For the checks of rows no statement explains; absent: all.
   */
  fkCheckShares?: Record<string, number>;
  /** Sessions opened per second (pg_stat_database.sessions); 0 for a pool of long-lived connections. */
  sessionsPerSec?: number;
  /** Concurrent active clients (for the overhead model). */
  clients?: number;
  /** Mean server time per statement in ms (pg_stat_statements), for the overhead model. */
  meanStatementMs?: number;
  /**
   * Whether the server already loads pgaudit (its pgaudit.* settings are defined: pgaudit loads
   * only through shared_preload_libraries). Absent: not loaded.
   */
  pgauditLoaded?: boolean;
  /**
   * Whether pgaudit already audits something here (pgaudit.log names a class, or pgaudit.role is
   * set). Only then is its work per statement in the sampled CPU: loaded with nothing to log, its
   * ExecutorCheckPerms hook skips log_select_dml, which runs on every DML statement (foreign-key
   * checks included) once any class or the role is on. Absent: not logging.
   */
  pgauditLogging?: boolean;
  log: LogContext;
  /**
   * Where the statements run inside others come from: `counted` (pg_stat_statements tracked
   * nested statements and they are in `statements`), or `modelled` (foreign-key checks and
   * cascades derived from the catalog; statements inside functions and triggers are not seen).
   * Absent means modelled.
   */
  nestedStatements?: "counted" | "modelled";
  /**
   * How busy the server's cores were during the sample and what its transactions waited on:
   * measured where auditpipe sees the database host, given (--cpu-busy, --cores), or unseen.
   * Absent in a workload file: the overhead then gives both regimes' figures.
   */
  load?: ServerLoad;
  /** How the workload was obtained and what it could not see. */
  notes: string[];
}

/** Shares of the polls' observations of the sessions' backends, by what they were doing. */
export interface WaitShares {
  /** Running or runnable (active, no wait event). */
  cpu: number;
  /** Waiting for a commit's WAL flush: IO WALSync/WALWrite, LWLock WALWrite, IPC SyncRep. */
  commit: number;
  /** Other I/O (data file reads, WAL reads …). */
  io: number;
  /** Heavyweight locks: rows, transaction ids, relations (other sessions' transactions). */
  lock: number;
  /** Other lightweight locks (buffer mappings, lock manager …). */
  lwlock: number;
  /** In a transaction, waiting for the client's next statement (idle in transaction, ClientRead). */
  client: number;
  /** Anything else (IPC, timeouts, extensions). */
  other: number;
  /** Observations behind the shares (sessions × polls). */
  samples: number;
}

/**
 * How busy the database server was while the sample ran, and what bound its transactions.
 * Decides which overhead applies to this server at this load (see docs/estimator.md#overhead).
 */
export interface ServerLoad {
  /**
   * Where the CPU figures come from: `host` (PostgreSQL's processes and the machine, from /proc
   * on the database host), `container` (as host, with a cgroup v2 CPU quota as the budget),
   * `given` (--cpu-busy, --cores), `unseen` (the database is on another host or container).
   */
  source: "host" | "container" | "given" | "unseen";
  /** Cores the server may use; null unknown. */
  cores: number | null;
  /** Where `cores` comes from, in words (the cgroup's cpu.max, the machine's CPUs, --cores). */
  coresSource: string;
  /** Share of those cores busy during the sample, all work in that budget (0–1); null unknown. */
  busy: number | null;
  /** PostgreSQL's processes' CPU per transaction, µs (the sampler's own connection left out); null unseen. */
  serverCpuUsPerTransaction: number | null;
  /** CPU of the clients found on the same machine (pgbench, psql …) per transaction, µs; null unseen. */
  localClientCpuUsPerTransaction: number | null;
  /** Cores other work used meanwhile (not PostgreSQL, its local clients or auditpipe); null unseen. */
  otherCores: number | null;
  /**
   * The client backends' (time on a core + time runnable but waiting for one) / time on a core,
   * from the scheduler (/proc/PID/schedstat): 1 is no contention, 2 means every CPU µs took 2 µs.
   */
  stretch: number | null;
  /** Share of the cgroup quota's periods that ran out of quota; null without a quota. */
  throttled: number | null;
  /** What the sessions' backends were doing at the polls; null when none was seen. */
  waits: WaitShares | null;
  /** WAL flushes to disk per transaction (pg_stat_wal.wal_sync): about 1 when each commit waits for fsync. */
  walSyncsPerTransaction: number | null;
  /** Whether commits wait for the disk (fsync and synchronous_commit on); null unknown. */
  durable: boolean | null;
  /** Connections from this machine whose client process was not found (their CPU counts as other work). */
  unidentifiedLocalClients: number;
  /** What could not be seen, and what would show it. */
  notes: string[];
}

/** A candidate pgAudit configuration (plus the core logging settings that duplicate lines). */
export interface AuditConfig {
  name: string;
  /** pgaudit.log as a list: `read`, `write`, `function`, `role`, `ddl`, `misc`, `misc_set`, `all`, `none`, `-misc`... */
  log: string[];
  logRelation?: boolean;
  logCatalog?: boolean;
  logStatementOnce?: boolean;
  logParameter?: boolean;
  logRows?: boolean;
  /** pgaudit.log_statement (default on). */
  logStatement?: boolean;
  /** pgaudit.role for object auditing. */
  role?: string;
  /** Privileges granted to the audit role. */
  grants?: Grant[];
  /** PostgreSQL's own log_statement, which writes its own line per statement. */
  pgLogStatement?: "none" | "ddl" | "mod" | "all";
  /** PostgreSQL's own log_duration, one more line per statement. */
  pgLogDuration?: boolean;
}

/** A privilege of the audit role: table-level without columns, column-level with them. */
export interface Grant {
  relation: string;
  privileges: Privilege[];
  columns?: string[];
}

export interface Rate {
  entriesPerSec: number;
  bytesPerSec: number;
}

/** A figure with its 95 % interval. */
export interface Interval {
  low: number;
  estimate: number;
  high: number;
}

/**
 * What the configuration costs the server, as numbers per regime, and the answer for this server
 * at the load it was sampled under (see docs/estimator.md#overhead).
 */
export interface Overhead {
  /**
   * The answer: the fraction of its throughput this server loses at the sampled load (0.05 = 5 %
   * fewer transactions per second), from what limits its transactions (`regime`); 95 % interval.
   */
  throughput: Interval;
  /** Server CPU each transaction gains, µs (backends and logging collector); 95 % interval. */
  addedCpuUs: Interval;
  /** The throughput a CPU-bound server loses: the added CPU against a transaction's CPU time. */
  cpuBound: Interval;
  /** Latency each transaction gains, ms: the backends' added CPU, stretched by the machine's contention. */
  latencyMs: Interval;
  /** That latency as a share of a transaction's current duration (clients / TPS); null when the clients are unknown. */
  latencyShare: Interval | null;
  /** What limits this server's transactions at the sampled load, and so which loss applies. */
  regime: OverheadRegime;
  /** Log lines per second through the logging collector's pipe (audit and others). */
  linesPerSec: number;
  /** Whether the line rate is in the regime where the collector pipe is the bottleneck. */
  collectorBound: boolean;
  confidence: "low" | "medium" | "high";
  /** What the figures rest on, one sentence each. */
  assumptions: string[];
}

export interface OverheadRegime {
  /**
   * `none`: the configuration writes nothing; `cpu-bound`: the cores limit the transactions (the
   * CPU share applies); `latency-bound`: they wait more than they compute (the latency share
   * applies); `between`: near the cores' limit; `unknown`: the host's load was neither seen nor
   * given, so the answer spans both.
   */
  kind: "none" | "cpu-bound" | "latency-bound" | "between" | "unknown";
  /** Why, in one sentence with the measurements. */
  reason: string;
  /** The transaction's CPU µs the CPU-bound figure is against. */
  transactionCpuUs: number;
  /** Where that comes from: measured on the host, derived from --cpu-busy/--cores, or a floor from the calibration. */
  transactionCpuSource: "measured" | "given" | "floor";
}

/** What one configuration writes on one workload. Decimal units: 1 MB = 1e6 B, 1 GB = 1e9 B. */
export interface Estimate {
  config: string;
  entriesPerSec: number;
  /** Audit entry bytes per second as they land in the log (the `analyze` report's `bytes`). */
  bytesPerSec: number;
  bytesPerEntry: number;
  entriesPerTransaction: number;
  bytesPerTransaction: number;
  /** Lines log_statement / log_duration add, bytes per second (not audit entries). */
  otherBytesPerSec: number;
  mbPerHour: number;
  gbPerDay: number;
  /** Ingestion by a log service per 30-day month: raw log bytes (audit and other lines) at `pricePerGb`. */
  dollarsPerMonth: number;
  /** $ per GB ingested. */
  pricePerGb: number;
  /** The S3 archive: audit entries compressed, accumulating over the retention period. */
  archive: ArchiveCost;
  byClass: Record<string, Rate>;
  byAuditType: Record<string, Rate>;
  byObject: Record<string, Rate>;
  overhead: Overhead;
  notes: string[];
}
