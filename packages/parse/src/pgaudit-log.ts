/** pgaudit.log: the classes a value turns on, as pgAudit reads it. */

export const AUDIT_CLASSES: readonly string[] = [
  "READ",
  "WRITE",
  "FUNCTION",
  "ROLE",
  "DDL",
  "MISC",
  "MISC_SET",
];

/**
 * The classes a pgaudit.log value turns on, as pgaudit 1.7's check_pgaudit_log reads it: a comma
 * list, case-insensitive, applied left to right; a `-` prefix removes. `all` is every class,
 * `none` adds nothing (it does not clear what came before), and `misc` is MISC and MISC_SET both
 * (`misc, -misc_set` leaves SET out; `all, -misc` leaves out both).
 */
export function sessionClasses(log: string[] | string): Set<string> {
  const items = (Array.isArray(log) ? log : log.split(","))
    .flatMap((s) => s.split(","))
    .map((s) => s.trim().toUpperCase())
    .filter((s) => s !== "");
  const on = new Set<string>();
  for (const item of items) {
    const remove = item.startsWith("-");
    const name = remove ? item.slice(1) : item;
    const names =
      name === "ALL" ? AUDIT_CLASSES : name === "NONE" ? [] : name === "MISC" ? ["MISC", "MISC_SET"] : [name];
    for (const c of names) {
      if (!AUDIT_CLASSES.includes(c)) throw new Error(`pgaudit.log: unknown class ${JSON.stringify(item)}`);
      if (remove) on.delete(c);
      else on.add(c);
    }
  }
  return on;
}
