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
 * The classes a pgaudit.log value turns on, as pgaudit's check hook reads it: a comma list,
 * case-insensitive, `all` and `none`, a `-` prefix removes a class. `misc` does not include
 * `misc_set`; `all` does.
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
    const names = name === "ALL" ? AUDIT_CLASSES : name === "NONE" ? [] : [name];
    if (name === "NONE" && !remove) on.clear();
    for (const c of names) {
      if (!AUDIT_CLASSES.includes(c)) throw new Error(`pgaudit.log: unknown class ${JSON.stringify(item)}`);
      if (remove) on.delete(c);
      else on.add(c);
    }
  }
  return on;
}
