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
  /** The assumptions made, in words, for the estimate's notes. */
  notes: string[];
}

const TRANSACTION_START = /^(BEGIN|START TRANSACTION)$/i;

const changes = (written: string[] | undefined, keys: string[]): boolean =>
  written === undefined || written.some((c) => keys.includes(c));

/** Whether an INSERT that fills `written` (absent: every column) leaves the key of `fk` NULL. */
const leavesNull = (written: string[] | undefined, fk: ForeignKey): boolean =>
  written !== undefined && !fk.columnsHaveDefault && !fk.columns.some((c) => written.includes(c));

/** Rows per second each table gets from the workload's own (top-level) statements of `kind`. */
function rowsByTable(workload: Workload, kind: "INSERT" | "UPDATE"): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of workload.statements) {
    if (s.nested) continue;
    for (const use of s.relations)
      if (use.write === kind)
        out.set(use.relation, (out.get(use.relation) ?? 0) + s.callsPerSec * s.rowsPerCall);
  }
  return out;
}

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
  const inserted = rowsByTable(workload, "INSERT");
  const updated = rowsByTable(workload, "UPDATE");
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
  const sameTransaction = new Map<string, number>();
  const notes: string[] = [];
  for (const [table, rows] of updated) {
    const ins = inserted.get(table) ?? 0;
    const keyed = workload.foreignKeys.some((f) => f.child === table && !nullKeys.has(f));
    if (!blocks || ins <= 0 || rows <= 0 || !keyed) continue;
    const share = Math.min(1, ins / rows);
    sameTransaction.set(table, share);
    notes.push(
      `assumed: ${(share * 100).toFixed(0)} % of the rows updated in ${table} were inserted by the same transaction, so each re-checks its foreign keys (PostgreSQL re-checks such a row whether or not its key changed; pg_stat_statements cannot say which rows an UPDATE hits)`,
    );
  }
  return { sameTransaction, nullKeys, notes };
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
  const parentAction = (fk: ForeignKey, action: ForeignKey["onDelete"], deleting: boolean): FkAction[] => {
    const child = { table: fk.child, columns: fk.columns, perCall };
    // ri_restrict: NO ACTION looks for another parent row with the old key, then checks the child.
    const noAction: FkAction[] = [check(fk), { kind: "check", ...child }];
    if (action === "cascade") return [{ kind: deleting ? "DELETE" : "UPDATE", ...child }];
    if (action === "set null") return [{ kind: "UPDATE", ...child }];
    if (action === "set default") return [{ kind: "UPDATE", ...child }, ...noAction];
    if (action === "restrict") return [{ kind: "check", ...child }];
    return noAction;
  };
  for (const use of s.relations) {
    if (use.write === "INSERT")
      for (const fk of fks.filter((f) => f.child === use.relation))
        if (!context.nullKeys.has(fk) && !leavesNull(use.writtenColumns, fk)) out.push(check(fk));
    if (use.write === "UPDATE") {
      const same = context.sameTransaction.get(use.relation) ?? 0;
      for (const fk of fks.filter((f) => f.child === use.relation)) {
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
  return out;
}
