/**
 * The workload file (`auditpipe estimate --workload FILE`, the body of POST /v1/estimates) and
 * candidate configurations as zod schemas: defaults fill what a planner would not know, and a
 * wrong field is named in the error.
 */
import { z } from "zod";
import type { AuditConfig, LogContext, ServerLoad, WaitShares, Workload } from "./types.ts";

const privilege = z.enum(["SELECT", "INSERT", "UPDATE", "DELETE"]);

const relationUse = z.object({
  relation: z.string().min(1).describe("Schema-qualified, as pgAudit prints it: public.accounts"),
  write: z.enum(["INSERT", "UPDATE", "DELETE"]).optional(),
  columns: z.array(z.string()).optional(),
  writtenColumns: z.array(z.string()).optional(),
  locked: z.boolean().optional(),
  privileges: z.array(privilege).optional(),
  catalog: z.boolean().optional(),
  objectType: z.enum(["VIEW", "COMPOSITE TYPE", "MATERIALIZED VIEW", "FOREIGN TABLE"]).optional(),
  plannerAdded: z.boolean().optional(),
});

const statement = z.object({
  text: z.string().describe("Statement text; $n stands for a constant or parameter"),
  callsPerSec: z.number().nonnegative(),
  kind: z.enum(["SELECT", "INSERT", "UPDATE", "DELETE", "UTILITY"]),
  command: z
    .string()
    .optional()
    .describe("Command tag of a UTILITY statement: BEGIN, COMMIT, SET, CREATE TABLE"),
  relations: z.array(relationUse).default([]),
  parallelWorkers: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      "Parallel workers per call, seen on pg_stat_activity: pgaudit logs the statement's entries once more in each.",
    ),
  queryRelations: z
    .array(relationUse)
    .optional()
    .describe(
      "A utility statement's query (CREATE TABLE AS, CREATE MATERIALIZED VIEW, DECLARE CURSOR, COPY (query) TO) and the relations it reads: logged as a READ before the utility's own entry.",
    ),
  rowsPerCall: z.number().nonnegative().default(1),
  params: z.number().int().nonnegative().optional(),
  fkChecksVisible: z.boolean().optional(),
  observed: z.object({ bytes: z.number().nonnegative(), quotes: z.number().nonnegative() }).optional(),
  paramValues: z
    .array(
      z.object({
        bytes: z.number().nonnegative(),
        quotes: z.number().nonnegative(),
        quoted: z.number().min(0).max(1),
      }),
    )
    .optional()
    .describe(
      "Bind parameters' values as pgaudit prints them with log_parameter, in $n order: mean bytes, double quotes, and the share CSV-quoted; sized from the columns the statement ties them to.",
    ),
  functions: z.array(z.string()).optional(),
  nested: z
    .boolean()
    .optional()
    .describe("Run inside another statement (an RI check, a function's statement)"),
});

const foreignKey = z.object({
  child: z.string().min(1),
  parent: z.string().min(1),
  columns: z.array(z.string()).min(1),
  parentColumns: z.array(z.string()).min(1),
  columnsHaveDefault: z.boolean().optional(),
  onDelete: z.enum(["no action", "restrict", "cascade", "set null", "set default"]).optional(),
  onUpdate: z.enum(["no action", "restrict", "cascade", "set null", "set default"]).optional(),
  deferred: z.boolean().optional(),
});

/** A planner's defaults: TCP clients, no query ids, csvlog. */
export const DEFAULT_LOG_CONTEXT: LogContext = {
  destination: "csvlog",
  prefix: "%m [%p] ",
  timezone: "UTC",
  user: "app",
  database: "app",
  application: "",
  remoteHost: "10.0.0.10",
  remotePort: 54321,
  backendType: "client backend",
  pid: 123456,
  sessionLine: 1,
  statementId: 1,
  vxid: "12/1",
  xid: 10_000_000,
  queryIds: false,
  constantLength: 4,
};

const logContext = z.object({
  destination: z.enum(["csvlog", "jsonlog", "stderr", "syslog"]).default(DEFAULT_LOG_CONTEXT.destination),
  prefix: z.string().default(DEFAULT_LOG_CONTEXT.prefix),
  timezone: z.string().default(DEFAULT_LOG_CONTEXT.timezone),
  user: z.string().default(DEFAULT_LOG_CONTEXT.user),
  database: z.string().default(DEFAULT_LOG_CONTEXT.database),
  application: z.string().default(DEFAULT_LOG_CONTEXT.application),
  remoteHost: z.string().default(DEFAULT_LOG_CONTEXT.remoteHost),
  remotePort: z.number().int().nullable().default(DEFAULT_LOG_CONTEXT.remotePort),
  backendType: z.string().default(DEFAULT_LOG_CONTEXT.backendType),
  pid: z.number().int().positive().default(DEFAULT_LOG_CONTEXT.pid),
  sessionLine: z.number().int().positive().default(1),
  statementId: z.number().int().positive().default(1),
  vxid: z.string().default(DEFAULT_LOG_CONTEXT.vxid),
  xid: z.number().int().nonnegative().default(DEFAULT_LOG_CONTEXT.xid),
  queryIds: z.boolean().default(false),
  constantLength: z.number().positive().default(4),
});

const share = z.number().min(0).max(1);

/** What the sessions' backends were doing at the sampler's polls (ServerLoad.waits). */
export const waitSharesSchema: z.ZodType<WaitShares> = z
  .object({
    cpu: share.describe("Running or runnable: active with no wait event."),
    commit: share.describe(
      "Waiting for a commit's WAL flush (IO WALSync/WALWrite, LWLock WALWrite, IPC SyncRep).",
    ),
    io: share.describe("Other I/O."),
    lock: share.describe("Heavyweight locks: rows, transaction ids, relations."),
    lwlock: share.describe("Other lightweight locks."),
    client: share.describe("In a transaction, waiting for the client's next statement."),
    other: share.describe("Anything else (IPC, timeouts, extensions)."),
    samples: z.number().int().nonnegative().describe("Observations behind the shares (sessions × polls)."),
  })
  .describe("Shares of the polls' observations of the sessions' backends, by what they were doing.");

/** How busy the server was during the sample (Workload.load): see docs/estimator.md#overhead. */
export const serverLoadSchema: z.ZodType<ServerLoad> = z
  .object({
    source: z
      .enum(["host", "container", "given", "unseen"])
      .describe(
        "host: PostgreSQL's processes and the machine seen in /proc; container: the same with a cgroup v2 CPU quota as the budget; given: --cpu-busy/--cores; unseen: another host or container.",
      ),
    cores: z.number().positive().nullable().describe("Cores the server may use; null unknown."),
    coresSource: z.string().describe("Where `cores` comes from."),
    busy: share.nullable().describe("Share of those cores busy during the sample; null unknown."),
    serverCpuUsPerTransaction: z
      .number()
      .nonnegative()
      .nullable()
      .describe("PostgreSQL's processes' CPU per transaction, µs; null unseen."),
    localClientCpuUsPerTransaction: z
      .number()
      .nonnegative()
      .nullable()
      .describe("CPU per transaction of the clients found on the same machine, µs; null unseen."),
    otherCores: z.number().nonnegative().nullable().describe("Cores other work used meanwhile; null unseen."),
    stretch: z
      .number()
      .nullable()
      .describe("The client backends' (time on a core + waiting for one) / time on a core; null unmeasured."),
    throttled: share
      .nullable()
      .describe("Share of the cgroup quota's periods that ran out of quota; null without a quota."),
    waits: waitSharesSchema.nullable(),
    walSyncsPerTransaction: z
      .number()
      .nonnegative()
      .nullable()
      .describe("pg_stat_wal.wal_sync per transaction."),
    durable: z
      .boolean()
      .nullable()
      .describe("Whether commits wait for the disk (fsync and synchronous_commit on)."),
    unidentifiedLocalClients: z
      .number()
      .int()
      .nonnegative()
      .describe("Connections from this machine whose client process was not found."),
    notes: z.array(z.string()).describe("What could not be seen, and what would show it."),
  })
  .describe("How busy the server's cores were during the sample, and what its transactions waited on.");

export const workloadSchema: z.ZodType<Workload, unknown> = z.object({
  transactionsPerSec: z.number().nonnegative(),
  statements: z.array(statement),
  foreignKeys: z.array(foreignKey).default([]),
  tableInsertsPerSec: z.record(z.string(), z.number().nonnegative()).optional(),
  tableUpdatesPerSec: z.record(z.string(), z.number().nonnegative()).optional(),
  tableDeletesPerSec: z.record(z.string(), z.number().nonnegative()).optional(),
  fkCheckShares: z
    .record(z.string(), z.number().min(0).max(1))
    .optional()
    .describe(
      "Per referenced table, the share of its foreign-key checks pgaudit logs, where below 1: the share of top-level calls whose role is a member of the table's owner. Used for the checks of rows no statement explains (inserted by functions, triggers, COPY); absent: all.",
    ),
  sessionsPerSec: z.number().nonnegative().optional(),
  clients: z.number().int().nonnegative().optional(),
  meanStatementMs: z.number().nonnegative().optional(),
  pgauditLoaded: z
    .boolean()
    .optional()
    .describe("Whether the server already loads pgaudit (shared_preload_libraries)."),
  pgauditLogging: z
    .boolean()
    .optional()
    .describe(
      "Whether pgaudit already audits something (pgaudit.log names a class, or pgaudit.role is set): its work per statement is then in the server's CPU already, and is not added again.",
    ),
  log: logContext.default(() => ({ ...DEFAULT_LOG_CONTEXT })),
  nestedStatements: z.enum(["counted", "modelled"]).optional(),
  load: serverLoadSchema.optional(),
  notes: z.array(z.string()).default([]),
}) as unknown as z.ZodType<Workload, unknown>;

export const auditConfigSchema: z.ZodType<AuditConfig, unknown> = z.object({
  name: z.string().min(1),
  log: z.array(z.string()).default(["none"]),
  logRelation: z.boolean().optional(),
  logCatalog: z.boolean().optional(),
  logStatementOnce: z.boolean().optional(),
  logParameter: z.boolean().optional(),
  logRows: z.boolean().optional(),
  logStatement: z.boolean().optional(),
  role: z.string().optional(),
  grants: z
    .array(
      z.object({
        relation: z.string().min(1),
        privileges: z.array(privilege).min(1),
        columns: z.array(z.string()).optional(),
      }),
    )
    .optional(),
  pgLogStatement: z.enum(["none", "ddl", "mod", "all"]).optional(),
  pgLogDuration: z.boolean().optional(),
}) as unknown as z.ZodType<AuditConfig, unknown>;

/** Parses a workload file's JSON; the error names the field (`statements.0.callsPerSec: ...`). */
export function parseWorkload(value: unknown): Workload {
  const result = workloadSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new Error(`workload: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
}
