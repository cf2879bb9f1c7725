/**
 * What a sample's two reads of the statistics mean, without a connection: statement and table
 * rates from two snapshots, the corrections pg_stat_statements needs (prepared BEGIN/COMMIT,
 * foreign-key checks no session of the workload would be audited for), and the warnings and
 * notes that say how they were counted. sample.ts does the reading.
 */
import { createHash } from "node:crypto";
import { type Catalog, catalogLookup, SAMPLER_TAG } from "./_catalog.ts";
import {
  blindSampleError,
  hiddenStatementsWarning,
  type Privileges,
  type StatementVisibility,
} from "./_privileges.ts";
import { riStatement } from "./_ri.ts";
import { analyzeStatement } from "./_sql.ts";
import type { StatementLoad } from "./types.ts";

export interface StatRow {
  key: string;
  userid: string;
  queryid: string;
  toplevel: boolean;
  query: string;
  calls: number;
  rows: number;
  time: number;
}

export interface Snapshot {
  statements: Map<string, StatRow> | null;
  /** Calls of the rows pg_stat_statements hides from this role (no text, no queryid), by role. */
  hiddenCalls: Map<string, number>;
  tables: Map<string, { ins: number; upd: number; del: number; scans: number }>;
  xacts: number;
  /** Of those, rolled back (pg_stat_database.xact_rollback): by ROLLBACK, or by an error; absent in older snapshots. */
  rollbacks?: number;
  /** pg_stat_statements_info.dealloc (14+): how often it evicted rows to make room; null when unknown. */
  evictions: number | null;
  sessions: number;
  /** Transactions (commits and rollbacks) of the server's other databases, by name; absent in older snapshots. */
  otherDatabases?: Map<string, number>;
}

/** Per query id: sums of the running texts' bytes and double quotes, and how many were seen. */
/**
 * Per query id, what pg_stat_activity showed of its running texts: sums of the whole texts'
 * bytes, double quotes and highest `$n` (bind parameters: the extended protocol shows them, not
 * their values) over `n` sightings, and how many sightings were cut at
 * track_activity_query_size (their size unknown).
 */
export type Observed = Map<
  string,
  {
    bytes: number;
    quotes: number;
    params?: number;
    n: number;
    truncated?: number;
    /** Sightings (cut short or not) inside a transaction block: begun before the statement. */
    inBlock?: number;
    /** The highest `$n` the texts cut short showed: bind parameters (0 or absent: none showed). */
    truncatedParams?: number;
    /** Sightings of the statement with parallel workers of its own, and those workers. */
    parallel?: number;
    workers?: number;
  }
> & {
  unavailable?: boolean;
  /**
   * Statements seen inside query strings that carried others (`BEGIN; UPDATE …; COMMIT`), by
   * pieceKey: the strings' sizes, and the statements (query ids) caught running them.
   */
  compounds?: Map<string, { bytes: number; quotes: number; n: number; hosts: Set<string> }>;
};

/** The Observed's compound pieces, made on first use. */
export function compounds(observed: Observed): NonNullable<Observed["compounds"]> {
  observed.compounds ??= new Map();
  return observed.compounds;
}

/**
 * A statement's key among a query string's pieces: its text lower-cased, its constants (`$n` in
 * pg_stat_statements' text, literals in the string) made `?`, whitespace folded, hashed. The
 * poll computes the same on the server (`PIECE_KEY_SQL`), so no value leaves it.
 */
export const pieceKey = (text: string): string =>
  createHash("md5")
    .update(
      text
        .toLowerCase()
        .replace(/\$\d+/g, "?")
        .replace(/'(?:[^']|'')*'|(?<![\w$])\d+(?:\.\d+)?(?![\w$])|\b(?:true|false)\b/g, "?")
        .replace(/-\s*\?/g, "?")
        .replace(/\s+/g, " ")
        .trim(),
    )
    .digest("hex");
/** pieceKey's text in SQL, of a piece `p`: its literals replaced as pg_stat_statements does. */
export const PIECE_KEY_SQL: string = String.raw`btrim(regexp_replace(regexp_replace(regexp_replace(lower(p),
  '''(?:[^'']|'''')*''|(?<![[:alnum:]_$])[0-9]+(?:\.[0-9]+)?(?![[:alnum:]_$])|\m(?:true|false)\M', '?', 'g'),
  '-\s*\?', '?', 'g'), '\s+', ' ', 'g'))`;

/** A statement whose values' sizes pg_stat_activity could not show: bind parameters, or texts cut short. */
export interface UnsizedValues {
  load: StatementLoad;
  values: "parameters" | "literals";
}

export function delta(a: number, b: number): number {
  return Math.max(0, b - a);
}

/**
 * Transactions the clients ran between two snapshots: pg_stat_database's commits and rollbacks
 * less one per session opened, whose start-up commits a transaction of its own (measured: pgbench
 * `-C`, a connection per transaction, shows two per transaction).
 */
export function applicationTransactions(before: Snapshot, after: Snapshot): number {
  return Math.max(0, delta(before.xacts, after.xacts) - delta(before.sessions, after.sessions));
}

/**
 * Which roles' statements pgaudit logs for which sessions (sample.ts reads them): a statement
 * that reads or writes a table is logged only for a session user who is a member of the role it
 * runs as — a foreign-key check's is its table's owner, a SECURITY DEFINER function's statements'
 * the function's owner. pg_stat_statements counts each under the role it ran as.
 */
export interface SessionRoles {
  /** Whether sessions of `userid` are members of the owner of `table`. */
  ofOwner(userid: string, table: string): boolean;
  /** Whether sessions of `session` are members of `role` (both pg_stat_statements user ids). */
  member(session: string, role: string): boolean;
  /** Whether `userid` owns a SECURITY DEFINER function (its statements may run in others' sessions). */
  definer(userid: string): boolean;
}

/** Every session is a member of every role: nothing is left out (no pg_stat_statements to tell). */
export const EVERY_SESSION: SessionRoles = { ofOwner: () => true, member: () => true, definer: () => false };

export function statementLoads(
  before: Snapshot,
  after: Snapshot,
  seconds: number,
  catalog: Catalog,
  roles: SessionRoles,
  observed: Observed,
): {
  loads: StatementLoad[];
  time: number;
  calls: number;
  visibility: StatementVisibility;
  fkCheckShares: Record<string, number>;
  unsized: UnsizedValues[];
  /** Top-level statements a second run outside transaction blocks, by the polls' sightings. */
  autocommitPerSec: number;
} {
  const lookup = catalogLookup(catalog);
  // Of all sightings, the share inside a transaction block: for statements never caught.
  let sightings = 0;
  let inBlocks = 0;
  for (const o of observed.values()) {
    sightings += o.n + (o.truncated ?? 0);
    inBlocks += o.inBlock ?? 0;
  }
  let autocommitPerSec = 0;
  const loads: StatementLoad[] = [];
  let time = 0;
  let calls = 0;
  /** Top-level calls by role: whose sessions fired the RI statements, counted under the owner. */
  const callsByRole = new Map<string, number>();
  const riLoads: StatementLoad[] = [];
  /** Nested statements that ran as a SECURITY DEFINER function's owner, by that role. */
  const definerLoads: Array<[StatementLoad, string]> = [];
  const unsized: UnsizedValues[] = [];
  /** Top-level calls by query id: how often a query string ran that a poll caught one of them in. */
  const callsById = new Map<string, number>();
  for (const [key, now] of after.statements ?? [])
    if (now.toplevel)
      callsById.set(
        now.queryid,
        (callsById.get(now.queryid) ?? 0) + delta(before.statements?.get(key)?.calls ?? 0, now.calls),
      );
  /** Top-level statements with `$n` the polls never caught running (a fast one among slow ones). */
  const unseen: StatementLoad[] = [];
  /** Of the statements with `$n` the polls caught, how many were sent with bind parameters. */
  const sent = { bound: 0, inline: 0 };
  for (const [key, now] of after.statements ?? []) {
    if (now.query.includes(SAMPLER_TAG)) continue;
    const prev = before.statements?.get(key);
    const dc = delta(prev?.calls ?? 0, now.calls);
    if (dc <= 0) continue;
    // A nested statement's time is inside the statement that ran it: counted once, at the top.
    if (now.toplevel) time += delta(prev?.time ?? 0, now.time);
    if (now.toplevel) callsByRole.set(now.userid, (callsByRole.get(now.userid) ?? 0) + dc);
    const ri = now.toplevel ? null : riStatement(now.query);
    if (ri) {
      const load: StatementLoad = {
        text: ri.text,
        callsPerSec: dc / seconds,
        kind: ri.kind,
        relations: [ri.relation],
        rowsPerCall: delta(prev?.rows ?? 0, now.rows) / dc,
        params: ri.params,
        nested: true,
      };
      loads.push(load);
      riLoads.push(load);
      continue;
    }
    const shape = analyzeStatement(now.query, lookup);
    const sighted = now.toplevel ? observed.get(now.queryid) : undefined;
    if (now.toplevel && shape.kind !== "UTILITY") {
      const seenTimes = sighted ? sighted.n + (sighted.truncated ?? 0) : 0;
      const blockShare =
        seenTimes > 0 ? (sighted?.inBlock ?? 0) / seenTimes : sightings > 0 ? inBlocks / sightings : 1;
      autocommitPerSec += (dc / seconds) * (1 - blockShare);
    }
    const seen = sighted && sighted.n > 0 ? sighted : undefined;
    const written = shape.relations.filter((r) => r.write).map((r) => r.relation);
    const related = catalog.foreignKeys.filter(
      (f) => written.includes(f.child) || written.includes(f.parent),
    );
    if (now.toplevel) calls += dc;
    const rowsPerCall = delta(prev?.rows ?? 0, now.rows) / dc;
    // CHECK and index expressions run once a statement writes a row: most of its calls must.
    const functions = [
      ...shape.functions,
      ...(shape.implicitFunctions ?? []).filter((f) => !f.needsRows || rowsPerCall >= 0.5).map((f) => f.name),
    ];
    const load: StatementLoad = {
      text: now.query,
      callsPerSec: dc / seconds,
      kind: shape.kind,
      ...(shape.kind === "UTILITY" || shape.command === "MERGE" ? { command: shape.command } : {}),
      ...(shape.queryRelations ? { queryRelations: shape.queryRelations } : {}),
      relations: shape.relations,
      rowsPerCall,
      ...(functions.length > 0 ? { functions } : {}),
      // Seen with its constants, or inside a longer string that carried others with it.
      ...(seen && (shape.placeholders > 0 || seen.bytes / seen.n > Buffer.byteLength(now.query) + 2)
        ? { observed: { bytes: seen.bytes / seen.n, quotes: seen.quotes / seen.n } }
        : {}),
      ...(now.toplevel ? {} : { nested: true }),
      ...(related.length > 0 &&
      !related.every((f) => roles.ofOwner(now.userid, f.parent) && roles.ofOwner(now.userid, f.child))
        ? { fkChecksVisible: false }
        : {}),
    };
    // Parallel workers run the plan again, and pgaudit logs its entries in each (measured): as
    // many a call as were seen beside it while it had any (they live only through its Gather).
    const workers = sighted?.parallel ? (sighted.workers ?? 0) / sighted.parallel : 0;
    if (workers >= 0.05) load.parallelWorkers = Math.round(workers * 100) / 100;
    loads.push(load);
    // Sent inside query strings that carried others (`BEGIN; UPDATE …; COMMIT`), one a poll
    // seldom catches running itself: pgaudit logs it with the whole string, for as many of its
    // calls as those strings ran (each runs its statements once: its busiest statement caught).
    const compound =
      now.toplevel && !load.observed ? observed.compounds?.get(pieceKey(now.query)) : undefined;
    if (compound) {
      const runs = Math.max(...[...compound.hosts].map((id) => callsById.get(id) ?? 0));
      const share = Math.min(1, runs / dc);
      const own = Buffer.byteLength(now.query);
      load.observed = {
        bytes: share * (compound.bytes / compound.n) + (1 - share) * own,
        quotes: share * (compound.quotes / compound.n) + (1 - share) * (now.query.split('"').length - 1),
      };
      continue;
    }
    // Bind parameters (the running text shows `$1`…`$k`; pg_stat_statements numbers the
    // constants it replaces after them): their values are logged with log_parameter.
    const bound = seen ? Math.round((seen.params ?? 0) / seen.n) : 0;
    if (seen && shape.placeholders > 0) sent[bound > 0 ? "bound" : "inline"]++;
    if (bound > 0) {
      load.params = bound;
      unsized.push({ load, values: "parameters" });
    } else if (shape.placeholders > 0 && !seen && (sighted?.truncatedParams ?? 0) > 0) {
      // Cut short, but showing `$n` before the cut: a long statement of bind parameters (an
      // ORM's multi-row INSERT), each `$n` of pg_stat_statements' text one of them.
      load.params = bindParameterCount(now.query);
      unsized.push({ load, values: "parameters" });
      sent.bound++;
    } else if (shape.placeholders > 0 && !seen && (sighted?.truncated ?? 0) > 0)
      unsized.push({ load, values: "literals" });
    else if (shape.placeholders > 0 && now.toplevel && !sighted) unseen.push(load);
    // One that reads no table is logged whoever runs it (pgaudit checks the role per table).
    if (!now.toplevel && shape.relations.length > 0 && roles.definer(now.userid))
      definerLoads.push([load, now.userid]);
  }
  // Sized as the statements the polls did catch were sent: bind parameters where most of them
  // were, else constants in the text (an application's driver sends all one way).
  // (No statement caught at all — no query ids, texts hidden —: no evidence, constants stay 4 characters.)
  const parameters = sent.bound > sent.inline;
  for (const load of sent.bound + sent.inline > 0 ? unseen : []) {
    if (parameters) load.params = new Set(load.text.match(/\$\d+/g) ?? []).size;
    unsized.push({ load, values: parameters ? "parameters" : "literals" });
  }
  // An RI statement runs as the owner of the table it reads or writes, and pgaudit logs it only
  // for a session whose role is a member of that owner: counted under the owner, it is kept for
  // the share of the top-level calls made by such roles.
  const allCalls = [...callsByRole.values()].reduce((a, b) => a + b, 0);
  const share = (isMember: (session: string) => boolean): number =>
    allCalls > 0
      ? [...callsByRole].reduce((sum, [role, n]) => sum + (isMember(role) ? n : 0), 0) / allCalls
      : 1;
  for (const ri of riLoads) {
    const table = ri.relations[0]!.relation;
    ri.callsPerSec *= share((session) => roles.ofOwner(session, table));
  }
  // The same for a statement counted under a role that owns SECURITY DEFINER functions: run by
  // one of them (or by that role's own sessions: an invoker's), kept for the share of top-level
  // calls whose role is a member of it.
  for (const [load, role] of definerLoads)
    load.callsPerSec *= share((session) => roles.member(session, role));
  // The same share for the checks of rows no statement in the sample explains (modelled).
  const fkCheckShares: Record<string, number> = {};
  for (const parent of new Set(catalog.foreignKeys.map((f) => f.parent))) {
    const x = share((session) => roles.ofOwner(session, parent));
    if (x < 1) fkCheckShares[parent] = x;
  }
  // A utility's query that pg_stat_statements counted as a nested statement of its own (COPY's,
  // with track = all) is that statement's entry, not the utility's too.
  const nestedTexts = loads.filter((l) => l.nested).map((l) => withoutNumbers(l.text));
  for (const l of loads)
    if (l.queryRelations && nestedTexts.some((t) => t.length > 0 && withoutNumbers(l.text).includes(t)))
      delete l.queryRelations;
  for (let i = loads.length - 1; i >= 0; i--) if (loads[i]!.callsPerSec <= 0) loads.splice(i, 1);
  let hiddenCalls = 0;
  let hiddenRoles = 0;
  for (const [userid, now] of after.hiddenCalls) {
    const d = delta(before.hiddenCalls.get(userid) ?? 0, now);
    hiddenCalls += d;
    if (d > 0) hiddenRoles++;
  }
  return {
    loads,
    time,
    calls,
    visibility: { hiddenCalls, visibleCalls: calls, hiddenRoles },
    fkCheckShares,
    unsized,
    autocommitPerSec,
  };
}

/** The parallel workers a plan launches a call: every Gather's and Gather Merge's planned workers. */
export function plannedWorkers(plan: unknown): number {
  if (plan === null || typeof plan !== "object") return 0;
  if (Array.isArray(plan)) return plan.reduce((n: number, p) => n + plannedWorkers(p), 0);
  const node = plan as Record<string, unknown>;
  const own = typeof node["Workers Planned"] === "number" ? (node["Workers Planned"] as number) : 0;
  return own + plannedWorkers(node.Plan) + plannedWorkers(node.Plans);
}

/** A normalized text without its placeholders' numbers (each text numbers them from its own start). */
const withoutNumbers = (text: string): string => text.replace(/\$\d+/g, "$").replace(/\s+/g, " ").trim();

const TRANSACTION_CONTROL: Record<string, RegExp> = {
  BEGIN: /^\s*(BEGIN|START\s+TRANSACTION)\s*;?\s*$/i,
  COMMIT: /^\s*(COMMIT|END)\s*;?\s*$/i,
};

/**
 * BEGIN and COMMIT sent through the extended protocol (prepared, as drivers and pgbench -M
 * prepared do): pg_stat_statements 1.10 (PostgreSQL 15) zeroes a utility statement's query id
 * after its first run, so a prepared one is counted once per session, not per call. Sessions
 * were seen inside transaction blocks and the row grew by no more than the sessions could
 * explain: its rate is the transaction rate. Returns the commands so adjusted.
 */
function preparedTransactionControl(
  before: Snapshot,
  after: Snapshot,
  loads: StatementLoad[],
  xactsPerSec: number,
  seconds: number,
  bound: number,
): string[] {
  const fixed: string[] = [];
  for (const [command, pattern] of Object.entries(TRANSACTION_CONTROL)) {
    const rows = [...(after.statements?.values() ?? [])].filter((r) => r.toplevel && pattern.test(r.query));
    if (rows.length === 0) continue;
    const calls = rows.reduce((n, r) => n + delta(before.statements?.get(r.key)?.calls ?? 0, r.calls), 0);
    if (calls > bound || calls / seconds >= xactsPerSec * 0.5) continue;
    const text = rows[0]!.query;
    const existing = loads.find((l) => l.text === text && l.kind === "UTILITY");
    if (existing) existing.callsPerSec = xactsPerSec;
    else
      loads.push({ text, callsPerSec: xactsPerSec, kind: "UTILITY", command, relations: [], rowsPerCall: 0 });
    fixed.push(command);
  }
  return fixed;
}

/**
 * With pg_stat_statements.track_utility off, BEGIN and COMMIT are nowhere in the statistics: the
 * transactions the application ran beyond its statements run outside a block (autocommit) were
 * blocks, each a BEGIN and a COMMIT. Adds them to `loads`; returns the blocks a second.
 */
export function untrackedTransactionBlocks(
  loads: StatementLoad[],
  xactsPerSec: number,
  autocommitPerSec: number,
): number {
  const blocks = Math.max(0, xactsPerSec - autocommitPerSec);
  if (blocks <= 0) return 0;
  for (const command of ["BEGIN", "COMMIT"])
    loads.push({
      text: command,
      callsPerSec: blocks,
      kind: "UTILITY",
      command,
      relations: [],
      rowsPerCall: 0,
    });
  return blocks;
}

/** Without pg_stat_statements: one synthetic statement per table and operation, from table statistics. */
function tableLoads(before: Snapshot, after: Snapshot, seconds: number, catalog: Catalog): StatementLoad[] {
  const out: StatementLoad[] = [];
  for (const t of catalog.tables) {
    const key = `${t.schema}\u0000${t.name}`;
    const a = before.tables.get(key);
    const b = after.tables.get(key);
    if (!a || !b) continue;
    const ins = delta(a.ins, b.ins) / seconds;
    const upd = delta(a.upd, b.upd) / seconds;
    const del = delta(a.del, b.del) / seconds;
    const reads = Math.max(0, delta(a.scans, b.scans) / seconds - upd - del);
    const name = t.qualified;
    const cols = t.columns.map((c) => c.name);
    const list = cols.slice(0, 6).join(", ");
    if (reads > 0)
      out.push({
        text: `SELECT ${list} FROM ${name} WHERE ${cols[0] ?? "id"} = $1`,
        callsPerSec: reads,
        kind: "SELECT",
        relations: [{ relation: name }],
        rowsPerCall: 1,
      });
    if (ins > 0)
      out.push({
        text: `INSERT INTO ${name} (${list}) VALUES (${cols
          .slice(0, 6)
          .map((_, i) => `$${i + 1}`)
          .join(", ")})`,
        callsPerSec: ins,
        kind: "INSERT",
        relations: [{ relation: name, write: "INSERT" }],
        rowsPerCall: 1,
      });
    if (upd > 0)
      out.push({
        text: `UPDATE ${name} SET ${cols[1] ?? "x"} = $1 WHERE ${cols[0] ?? "id"} = $2`,
        callsPerSec: upd,
        kind: "UPDATE",
        relations: [{ relation: name, write: "UPDATE" }],
        rowsPerCall: 1,
      });
    if (del > 0)
      out.push({
        text: `DELETE FROM ${name} WHERE ${cols[0] ?? "id"} = $1`,
        callsPerSec: del,
        kind: "DELETE",
        relations: [{ relation: name, write: "DELETE" }],
        rowsPerCall: 1,
      });
  }
  return out;
}

/** What the sampler saw between its two reads of the statistics. */
export interface Interval {
  before: Snapshot;
  after: Snapshot;
  seconds: number;
  /** Active client backends at each poll of pg_stat_activity. */
  clientCounts: number[];
  /** Whether some sessions' state was hidden from this role. */
  clientsHidden: boolean;
  /** Whether a session was seen inside a transaction block. */
  transactionBlocksSeen: boolean;
  /**
   * How often each (user, application, client host) was seen running a statement, keyed by
   * `JSON.stringify([user, application, host])`: the names the workload's log lines carry.
   */
  activeNames?: Map<string, number>;
  observed: Observed;
}

/** The rates of a workload over a sample, and what was noticed on the way. */
export interface Rates {
  statements: StatementLoad[];
  meanStatementMs?: number;
  tableInsertsPerSec: Record<string, number>;
  tableUpdatesPerSec: Record<string, number>;
  tableDeletesPerSec: Record<string, number>;
  /** Per referenced table, the share of its foreign-key checks pgaudit logs, where below 1. */
  fkCheckShares: Record<string, number>;
  /** Statements whose values' sizes are still to be measured (sample.ts). */
  unsized: UnsizedValues[];
  transactionsPerSec: number;
  sessionsPerSec: number;
  /** The most client backends seen active at once; 0 when unknown. */
  clients: number;
  notes: string[];
}

/**
 * The workload's rates over an interval: from pg_stat_statements where `useStatements`, else
 * one statement per table and operation. Warnings about the counts go onto `warnings`.
 */
/** ROLLBACK and ABORT as pg_stat_statements keeps them. */
const ROLLBACK_TEXT = /^\s*(rollback|abort)\b(?!\s+to\b)/i;

/**
 * Transactions rolled back beyond the ROLLBACKs the sample counted end in an error. pgaudit
 * logs a statement when its privileges are checked, before it runs, so a failing one is in the
 * log; pg_stat_statements counts only what completes. So where statements fail (a unique
 * violation the application expects, a serialization failure it retries) the estimate is low.
 */
export function failedTransactionsWarning(
  before: Snapshot,
  after: Snapshot,
  seconds: number,
  statements: readonly StatementLoad[],
): string | null {
  if (before.rollbacks === undefined || after.rollbacks === undefined || seconds <= 0) return null;
  const rolledBack = delta(before.rollbacks, after.rollbacks) / seconds;
  const explicit = statements
    .filter((s) => !s.nested && s.kind === "UTILITY" && ROLLBACK_TEXT.test(s.text))
    .reduce((sum, s) => sum + s.callsPerSec, 0);
  const failed = rolledBack - explicit;
  const all = applicationTransactions(before, after) / seconds;
  // Noise: the sampler's own, a client's stray error.
  if (failed < 0.5 || failed < 0.01 * all) {
    // An application that retries (a serialization failure, a deadlock) or catches an expected
    // error rolls back with a ROLLBACK of its own: counted, but the statement that failed is not.
    if (explicit < 0.5 || explicit < 0.01 * all) return null;
    return `${explicit.toFixed(1)} ROLLBACKs/s (${((explicit / Math.max(all, explicit)) * 100).toFixed(0)} % of transactions) were counted: where an application rolls back after a statement failed (a retried serialization failure or deadlock, an expected unique violation), pgaudit logged that statement before it ran but pg_stat_statements counts only statements that complete, so the estimate is low by up to one of its entries per ROLLBACK (the server's log shows them: ERROR and STATEMENT lines)`;
  }
  return `${failed.toFixed(1)} transactions/s (${((failed / Math.max(all, failed)) * 100).toFixed(0)} %) were rolled back without a ROLLBACK this sample counted: they ended in an error. pgaudit logs a statement before it runs, so each failed one is in the log, but pg_stat_statements counts only statements that complete: the estimate is low by the failed statements' entries (the server's log shows them: ERROR and STATEMENT lines)`;
}

/**
 * pgaudit logs every database of the server; the sample reads one. Where the others ran
 * transactions in the meantime (1 a second and 5 % of the server's, or more), it says which
 * and how many, so a server's total is not read as this database's.
 */
export function otherDatabasesWarning(before: Snapshot, after: Snapshot, seconds: number): string | null {
  if (!before.otherDatabases || !after.otherDatabases || seconds <= 0) return null;
  const busy: Array<[string, number]> = [];
  for (const [name, n] of after.otherDatabases) {
    const rate = delta(before.otherDatabases.get(name) ?? n, n) / seconds;
    if (rate > 0) busy.push([name, rate]);
  }
  const others = busy.reduce((sum, [, r]) => sum + r, 0);
  const own = delta(before.xacts, after.xacts) / seconds;
  if (others < 1 || others < 0.05 * (own + others)) return null;
  busy.sort((a, b) => b[1] - a[1]);
  const named = busy
    .slice(0, 3)
    .map(([name, r]) => `${JSON.stringify(name)} ${r.toFixed(1)}/s`)
    .join(", ");
  return `other databases on this server ran ${others.toFixed(1)} transactions/s (${((others / Math.max(own + others, others)) * 100).toFixed(0)} % of the server's) during the sample: ${named}${busy.length > 3 ? `, and ${busy.length - 3} more` : ""}. pgaudit logs every database, and this estimate covers only the one sampled: sample each of the others too (--db with its name) and add them up`;
}

/**
 * How many of the `$n` in pg_stat_statements' text of a statement sent with bind parameters are
 * those: it keeps their `$1`…`$k` and numbers the constants it replaces from k + 1, each in the
 * order of the text. So the first `$n` out of the parameters' sequence is constant k + 1.
 */
export function bindParameterCount(text: string): number {
  let next = 1;
  for (const m of text.matchAll(/\$(\d+)/g)) {
    const n = Number(m[1]);
    if (n === next) next++;
    else if (n > next) return n - 1;
  }
  return next - 1;
}

/**
 * Rows a second by table from pg_stat_user_tables' `field`. A partitioned table's rows are
 * counted on its partitions: its own are theirs (a partition's under every partitioned ancestor,
 * leaves only: a middle level's count is 0).
 */
function tableRates(
  before: Snapshot,
  after: Snapshot,
  seconds: number,
  catalog: Catalog,
  field: "ins" | "upd" | "del",
): Record<string, number> {
  const rates: Record<string, number> = {};
  for (const t of catalog.tables) {
    const key = `${t.schema}\u0000${t.name}`;
    const n = delta(before.tables.get(key)?.[field] ?? 0, after.tables.get(key)?.[field] ?? 0) / seconds;
    if (n > 0) rates[t.qualified] = n;
  }
  const byName = new Map(catalog.tables.map((t) => [t.qualified, t]));
  for (const t of catalog.tables) {
    const n = t.kind === "p" ? 0 : (rates[t.qualified] ?? 0);
    for (let up = t.partitionOf; n > 0 && up; up = byName.get(up)?.partitionOf ?? null)
      rates[up] = (rates[up] ?? 0) + n;
  }
  return rates;
}

export function workloadRates(
  interval: Interval,
  catalog: Catalog,
  sampled: {
    useStatements: boolean;
    /** Which roles' statements pgaudit logs for which sessions. */
    roles: SessionRoles;
    privileges: Privileges;
    unreadable: string[];
    /** pg_stat_statements.track_utility: off, it counts no BEGIN, COMMIT, SET or DDL. */
    trackUtility?: boolean;
  },
  warnings: string[],
): Rates {
  const { before, after, seconds, clientCounts } = interval;
  const notes: string[] = [];
  const elsewhere = otherDatabasesWarning(before, after, seconds);
  if (elsewhere) warnings.push(elsewhere);
  let statements: StatementLoad[];
  let meanStatementMs: number | undefined;
  let fkCheckShares: Record<string, number> = {};
  let unsized: UnsizedValues[] = [];
  if (sampled.useStatements) {
    const s = statementLoads(before, after, seconds, catalog, sampled.roles, interval.observed);
    if (s.visibility.hiddenCalls > 0 && s.visibility.visibleCalls === 0)
      throw blindSampleError(s.visibility, sampled.privileges, sampled.unreadable);
    const hidden = hiddenStatementsWarning(s.visibility, sampled.privileges);
    if (hidden) warnings.push(hidden);
    statements = s.loads;
    fkCheckShares = s.fkCheckShares;
    unsized = s.unsized;
    if (before.evictions !== null && after.evictions !== null && after.evictions > before.evictions)
      warnings.push(
        `pg_stat_statements evicted rows ${after.evictions - before.evictions} times during the sample (pg_stat_statements.max is full): statements run rarely or with text it does not normalize (CALL and other utility statements before PostgreSQL 16) lost their calls, so the estimate is low; raise pg_stat_statements.max`,
      );
    const failed = failedTransactionsWarning(before, after, seconds, statements);
    if (failed) warnings.push(failed);
    if (sampled.trackUtility === false) {
      const blocks = untrackedTransactionBlocks(
        statements,
        applicationTransactions(before, after) / seconds,
        s.autocommitPerSec,
      );
      warnings.push(
        `pg_stat_statements.track_utility is off: it counted no utility statement. BEGIN and COMMIT were taken as ${blocks.toFixed(1)} transaction blocks a second (the transactions beyond the statements the polls saw run outside one); SET, SAVEPOINT, DDL and other utility statements are not in this estimate (turn track_utility on for the sample to see them)`,
      );
    }
    if (interval.transactionBlocksSeen) {
      const bound = Math.max(1, ...clientCounts) + delta(before.sessions, after.sessions) + 1;
      const fixed = preparedTransactionControl(
        before,
        after,
        statements,
        applicationTransactions(before, after) / seconds,
        seconds,
        bound,
      );
      if (fixed.length > 0)
        warnings.push(
          `${fixed.join(" and ")} ran as prepared statements, which pg_stat_statements (PostgreSQL 15) counts once per session: taken as one per transaction`,
        );
    }
    meanStatementMs = s.calls > 0 ? s.time / s.calls : undefined;
    notes.push(
      `pg_stat_statements over ${seconds.toFixed(1)} s: ${statements.length} statements${hidden ? " (others hidden from this role)" : ""}`,
    );
  } else {
    statements = tableLoads(before, after, seconds, catalog);
    notes.push(
      `table statistics over ${seconds.toFixed(1)} s (no pg_stat_statements): one statement per table and operation, no BEGIN/COMMIT`,
    );
  }
  const [tableInsertsPerSec, tableUpdatesPerSec, tableDeletesPerSec] = (["ins", "upd", "del"] as const).map(
    (field) => tableRates(before, after, seconds, catalog, field),
  ) as [Record<string, number>, Record<string, number>, Record<string, number>];
  return {
    statements,
    ...(meanStatementMs === undefined ? {} : { meanStatementMs }),
    tableInsertsPerSec,
    tableUpdatesPerSec,
    tableDeletesPerSec,
    fkCheckShares,
    unsized,
    transactionsPerSec: applicationTransactions(before, after) / seconds,
    sessionsPerSec: delta(before.sessions, after.sessions) / seconds,
    // Hidden sessions' state is unknown, so the count of active clients is too.
    clients: clientCounts.length > 0 && !interval.clientsHidden ? Math.max(...clientCounts) : 0,
    notes,
  };
}
