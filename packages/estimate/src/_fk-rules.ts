/**
 * The foreign-key work PostgreSQL's RI triggers do (ri_triggers.c, PostgreSQL 15), modelled from
 * the catalog and the statements when nested statements are not counted: which checks and
 * actions each call of a statement runs, per affected row.
 *
 * - An INSERT checks each new row's parents, except where the row's key is all NULL
 *   (RI_FKey_check: ri_NullCheck): an INSERT whose column list leaves out every key column of a
 *   foreign key that has no default sets it NULL.
 * - An UPDATE of a child re-checks a parent when RI_FKey_fk_upd_check_required says so: when the
 *   key changed, and — whether or not it changed — when the row was inserted by the same
 *   transaction. Statistics say neither; see `FkContext.sameTransaction` for what is assumed.
 * - Deleting or re-keying a parent row runs the child's ON DELETE / ON UPDATE action (ri_restrict,
 *   ri_set): NO ACTION first looks for another parent row with the old key (ri_Check_Pk_Match, the
 *   same query as a check, on the parent) and then checks the child; RESTRICT checks the child;
 *   CASCADE deletes (or updates) the child's rows; SET NULL updates them; SET DEFAULT updates them
 *   and then runs the NO ACTION pair.
 */
import type { ForeignKey, StatementLoad, Workload } from "./types.ts";

/** One thing PostgreSQL's RI triggers run per affected row: a check, or a cascade's DELETE/UPDATE. */
export interface FkAction {
  kind: "check" | "DELETE" | "UPDATE";
  table: string;
  columns: string[];
  perCall: number;
  /** An UPDATE that sets the key NULL (SET NULL), not to a parent's value (CASCADE, SET DEFAULT). */
  nulls?: boolean;
}

/** What the whole workload says about the foreign keys, beyond one statement. */
export interface FkContext {
  /**
   * Per child table, the share of its updated rows taken to be rows the same transaction
   * inserted (so each re-checks every parent): where the workload runs transaction blocks and
   * inserts into the table too, up to the rows it inserts; 0 elsewhere.
   */
  sameTransaction: Map<string, number>;
  /** Foreign keys whose key every INSERT leaves out (no default): NULL, never checked. */
  nullKeys: Set<ForeignKey>;
  /**
   * Per table an upsert (ON CONFLICT DO UPDATE, MERGE) writes, the share of its rows inserted:
   * the table's inserted rows (pg_stat_user_tables) beyond those of plain INSERTs, over the
   * upserts' rows; absent: all inserted.
   */
  upsertInserted?: Map<string, number>;
  /**
   * Per table, the rows one run of a foreign-key action on it (a CASCADE's DELETE, a SET NULL's or
   * CASCADE's UPDATE) reaches: the table's deleted (updated) rows in pg_stat_user_tables beyond
   * its statements' own, over the runs the statements' actions and those rows' own actions make.
   * Each row reached fires its own actions in turn (a cascade down a chain or a tree).
   */
  actionRows?: { DELETE: Map<string, number>; UPDATE: Map<string, number> };
  /** The assumptions made, in words, for the estimate's notes. */
  notes: string[];
}

const TRANSACTION_START = /^(BEGIN|START TRANSACTION)$/i;

/**
 * An UPDATE whose rows a search of its own table picks (its target read again in a subquery or a
 * CTE: a worker taking the next job, `WHERE id = (SELECT max(id) …)`): existing rows, not ones
 * the transaction wrote (those an application addresses by the key it got back).
 */
const searchesItself = (s: StatementLoad, use: StatementLoad["relations"][number]): boolean =>
  s.relations.some(
    (r) =>
      r !== use &&
      r.relation === use.relation &&
      !r.write &&
      !r.plannerAdded &&
      // ON CONFLICT's EXCLUDED is the row being inserted, not a search.
      r.objectType !== "COMPOSITE TYPE",
  );

const changes = (written: string[] | undefined, keys: string[]): boolean =>
  written === undefined || written.some((c) => keys.includes(c));

/** Whether an INSERT that fills `written` (absent: every column) leaves the key of `fk` NULL. */
const leavesNull = (written: string[] | undefined, fk: ForeignKey): boolean =>
  written !== undefined && !fk.columnsHaveDefault && !fk.columns.some((c) => written.includes(c));

/**
 * What the workload says about its foreign keys as a whole. pg_stat_statements does not say
 * which statements share a transaction, nor which rows an UPDATE hits: an UPDATE of a table the
 * workload also inserts into, inside transaction blocks, is taken to update rows the same
 * transaction inserted (an application inserting a row and completing it before COMMIT), up to
 * the rows inserted. Autocommitted statements never share a transaction.
 */
export function fkContext(workload: Workload): FkContext {
  const blocks = workload.statements.some(
    (s) => !s.nested && s.kind === "UTILITY" && TRANSACTION_START.test(s.command ?? "") && s.callsPerSec > 0,
  );
  const nullKeys = new Set<ForeignKey>();
  for (const fk of workload.foreignKeys) {
    const inserts = workload.statements.filter(
      (s) => !s.nested && s.relations.some((u) => u.write === "INSERT" && u.relation === fk.child),
    );
    if (
      inserts.length > 0 &&
      inserts.every((s) =>
        s.relations.every(
          (u) => u.write !== "INSERT" || u.relation !== fk.child || leavesNull(u.writtenColumns, fk),
        ),
      )
    )
      nullKeys.add(fk);
  }
  const notes: string[] = [];
  const upsertInserted = upsertShares(workload, notes);
  // Rows per second each table gets inserted and updated (an upsert's split by its share), and
  // the most rows one statement updates in it.
  const inserted = new Map<string, number>();
  const updated = new Map<string, number>();
  const mostByOne = new Map<string, number>();
  const add = (m: Map<string, number>, t: string, v: number): void => {
    m.set(t, (m.get(t) ?? 0) + v);
  };
  for (const s of workload.statements) {
    if (s.nested) continue;
    for (const u of s.relations) {
      const rows = s.callsPerSec * s.rowsPerCall;
      const share = u.upsert ? (upsertInserted.get(u.relation) ?? 1) : u.write === "INSERT" ? 1 : 0;
      if (u.write === "INSERT") add(inserted, u.relation, rows * share);
      const up = u.write === "UPDATE" ? rows : u.upsert ? rows * (1 - share) : 0;
      if (up <= 0 || searchesItself(s, u)) continue;
      add(updated, u.relation, up);
      mostByOne.set(u.relation, Math.max(mostByOne.get(u.relation) ?? 0, up));
    }
  }
  const sameTransaction = new Map<string, number>();
  for (const [table, rows] of updated) {
    const keyed = workload.foreignKeys.some((f) => f.child === table && !nullKeys.has(f));
    if (!blocks || rows <= 0 || !keyed) continue;
    // Rows an earlier statement of the transaction wrote: those it inserted, and those updated
    // again (every statement taken to update the same rows, the most one updates counted once).
    const own = (inserted.get(table) ?? 0) + Math.max(0, rows - (mostByOne.get(table) ?? 0));
    if (own <= 0) continue;
    const share = Math.min(1, own / rows);
    sameTransaction.set(table, share);
    notes.push(
      `assumed: ${(share * 100).toFixed(0)} % of the rows updated in ${table} were inserted or updated before by the same transaction, so each re-checks its foreign keys (PostgreSQL re-checks a row version its own transaction wrote whether or not its key changed; pg_stat_statements cannot say which rows an UPDATE hits)`,
    );
  }
  const context: FkContext = { sameTransaction, nullKeys, notes, upsertInserted };
  const actionRows = actionRowsOf(workload, context);
  return actionRows ? { ...context, actionRows } : context;
}

/**
 * FkContext.actionRows from the table statistics. Rows an action reached in a table T (X_T: its
 * deleted or updated rows beyond its statements') come from the runs of actions on T: those the
 * statements fire (E1_T) and one per row an action reached in a parent with a CASCADE (DELETE) or
 * SET NULL / SET DEFAULT (UPDATE) key to T. So a run reaches X_T / (E1_T + Σ X_parent) rows.
 */
function actionRowsOf(workload: Workload, context: FkContext): FkContext["actionRows"] {
  const deleted = workload.tableDeletesPerSec;
  const updated = workload.tableUpdatesPerSec;
  if (!deleted || !updated) return undefined;
  const own = { DELETE: new Map<string, number>(), UPDATE: new Map<string, number>() };
  const runs = { DELETE: new Map<string, number>(), UPDATE: new Map<string, number>() };
  const add = (m: Map<string, number>, t: string, v: number): void => {
    m.set(t, (m.get(t) ?? 0) + v);
  };
  for (const s of workload.statements) {
    if (s.nested) continue;
    for (const u of s.relations)
      if (u.write === "DELETE" || u.write === "UPDATE")
        add(own[u.write], u.relation, s.callsPerSec * s.rowsPerCall);
    for (const a of fkChecksOf(s, workload.foreignKeys, context))
      if (a.kind !== "check") add(runs[a.kind], a.table, s.callsPerSec * a.perCall);
  }
  const reached = (kind: "DELETE" | "UPDATE", table: string): number =>
    Math.max(0, ((kind === "DELETE" ? deleted : updated)[table] ?? 0) - (own[kind].get(table) ?? 0));
  for (const fk of workload.foreignKeys) {
    const fromParent = reached("DELETE", fk.parent);
    if (fromParent <= 0) continue;
    if (fk.onDelete === "cascade") add(runs.DELETE, fk.child, fromParent);
    else if (fk.onDelete === "set null" || fk.onDelete === "set default")
      add(runs.UPDATE, fk.child, fromParent);
  }
  const out = { DELETE: new Map<string, number>(), UPDATE: new Map<string, number>() };
  for (const kind of ["DELETE", "UPDATE"] as const)
    for (const [table, n] of runs[kind]) if (n > 0) out[kind].set(table, reached(kind, table) / n);
  return out;
}

/**
 * Per table an upsert writes, the share of its rows inserted: the table's inserted rows
 * (pg_stat_user_tables) beyond those of plain INSERTs, over the upserts' rows. Unmeasured: all.
 */
function upsertShares(workload: Workload, notes: string[]): Map<string, number> {
  const out = new Map<string, number>();
  const measured = workload.tableInsertsPerSec;
  if (!measured) return out;
  const plain = new Map<string, number>();
  const upserted = new Map<string, number>();
  for (const s of workload.statements) {
    if (s.nested) continue;
    for (const u of s.relations) {
      if (u.write !== "INSERT") continue;
      const into = u.upsert ? upserted : plain;
      into.set(u.relation, (into.get(u.relation) ?? 0) + s.callsPerSec * s.rowsPerCall);
    }
  }
  for (const [table, rows] of upserted) {
    if (rows <= 0) continue;
    const share = Math.min(1, Math.max(0, ((measured[table] ?? 0) - (plain.get(table) ?? 0)) / rows));
    out.set(table, share);
    notes.push(
      `${(share * 100).toFixed(0)} % of the rows upserted into ${table} were inserted (its inserted rows in pg_stat_user_tables beyond plain INSERTs'); the rest were updated, which checks foreign keys only when a key changes or the transaction wrote the row before`,
    );
  }
  return out;
}

/** What the RI triggers run per call of `s`, modelled (see the module comment). */
export function fkChecksOf(
  s: StatementLoad,
  fks: ForeignKey[],
  context: FkContext = { sameTransaction: new Map(), nullKeys: new Set(), notes: [] },
): FkAction[] {
  if (s.fkChecksVisible === false) return [];
  const out: FkAction[] = [];
  const perCall = s.rowsPerCall;
  const check = (fk: ForeignKey, rows = perCall): FkAction => ({
    kind: "check",
    table: fk.parent,
    columns: fk.parentColumns,
    perCall: rows,
  });
  const parentAction = (
    fk: ForeignKey,
    action: ForeignKey["onDelete"],
    deleting: boolean,
    rows = perCall,
  ): FkAction[] => {
    const child = { table: fk.child, columns: fk.columns, perCall: rows };
    // ri_restrict: NO ACTION looks for another parent row with the old key, then checks the child.
    // A deferred key's NO ACTION checks run at COMMIT, which pgaudit does not log (ForeignKey.deferred).
    const noAction: FkAction[] = fk.deferred ? [] : [check(fk, rows), { kind: "check", ...child }];
    if (action === "cascade") return [{ kind: deleting ? "DELETE" : "UPDATE", ...child }];
    if (action === "set null") return [{ kind: "UPDATE", ...child, nulls: true }];
    if (action === "set default") return [{ kind: "UPDATE", ...child }, ...noAction];
    if (action === "restrict") return [{ kind: "check", ...child }];
    return noAction;
  };
  for (const use of s.relations) {
    // A deferred key's checks of the child run at COMMIT, which pgaudit does not log.
    const parentsOf = fks.filter((f) => f.child === use.relation && !f.deferred);
    if (use.write === "INSERT" && use.upsert) {
      // Inserted rows check their parents; updated ones as an UPDATE's rows do.
      const inserted = context.upsertInserted?.get(use.relation) ?? 1;
      const same = context.sameTransaction.get(use.relation) ?? 0;
      for (const fk of parentsOf) {
        if (context.nullKeys.has(fk) || leavesNull(use.writtenColumns, fk)) continue;
        if (inserted > 0) out.push(check(fk, perCall * inserted));
        const updated = perCall * (1 - inserted);
        if (updated <= 0) continue;
        if (changes(use.upsert.updatedColumns, fk.columns)) out.push(check(fk, updated));
        else if (same > 0) out.push(check(fk, updated * same));
      }
    } else if (use.write === "INSERT")
      for (const fk of parentsOf)
        if (!context.nullKeys.has(fk) && !leavesNull(use.writtenColumns, fk)) out.push(check(fk));
    if (use.write === "UPDATE") {
      const same = searchesItself(s, use) ? 0 : (context.sameTransaction.get(use.relation) ?? 0);
      for (const fk of parentsOf) {
        if (changes(use.writtenColumns, fk.columns)) out.push(check(fk));
        else if (same > 0 && !context.nullKeys.has(fk)) out.push(check(fk, perCall * same));
      }
      for (const fk of fks.filter(
        (f) => f.parent === use.relation && changes(use.writtenColumns, f.parentColumns),
      ))
        out.push(...parentAction(fk, fk.onUpdate, false));
    }
    if (use.write === "DELETE")
      for (const fk of fks.filter((f) => f.parent === use.relation))
        out.push(...parentAction(fk, fk.onDelete, true));
  }
  // The rows an action reaches fire their own (FkContext.actionRows): a deleted row its children's
  // ON DELETE actions; an updated row checks the key it was given (not a NULL one) and, where its
  // transaction wrote it, its other keys.
  const reach = (actions: FkAction[], depth: number): FkAction[] =>
    actions.flatMap((a) => {
      const rows = a.kind === "check" ? 0 : a.perCall * (context.actionRows?.[a.kind].get(a.table) ?? 0);
      if (rows < 1e-6 || depth >= MAX_ACTION_DEPTH) return [];
      const next =
        a.kind === "DELETE"
          ? fks.filter((f) => f.parent === a.table).flatMap((fk) => parentAction(fk, fk.onDelete, true, rows))
          : fks
              .filter((f) => f.child === a.table && !f.deferred && !context.nullKeys.has(f))
              .map((f) => {
                const given = f.columns.every((c) => a.columns.includes(c));
                if (given) return check(f, a.nulls ? 0 : rows);
                return check(f, rows * (context.sameTransaction.get(a.table) ?? 0));
              })
              .filter((c) => c.perCall > 0);
      return [...next, ...reach(next, depth + 1)];
    });
  return [...out, ...reach(out, 0)];
}

/** How deep the actions' own actions are followed (a self-referencing cascade is a tree). */
const MAX_ACTION_DEPTH = 16;
