/** pgaudit.log parsing and the named configurations `estimate --config NAME` knows. */
import type { AuditConfig } from "./types.ts";

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
 * Command tags pgaudit 1.7 logs under MISC_SET (its VariableSetStmt: SET, SET LOCAL, SET ROLE,
 * SET TRANSACTION, RESET …): `pgaudit.log`'s misc_set turns them on (and misc, which includes
 * it), and the entry prints the class as MISC.
 */
const MISC_SET_COMMANDS: ReadonlySet<string> = new Set(["SET", "RESET"]);

/** The pgaudit.log class an entry belongs to, from the class and command tag pgaudit printed. */
export function logClassOf(printedClass: string, command: string): string {
  const cls = printedClass.toUpperCase();
  return cls === "MISC" && MISC_SET_COMMANDS.has(command.toUpperCase()) ? "MISC_SET" : cls;
}

/** The class a utility statement's command tag is logged under, if it is MISC_SET. */
export const isMiscSetCommand = (command: string): boolean => MISC_SET_COMMANDS.has(command.toUpperCase());

/** How pgaudit prints a class (MISC_SET as MISC). */
export const printedClass = (cls: string): string => (cls === "MISC_SET" ? "MISC" : cls);

/**
 * The classes a pgaudit.log value turns on, as pgaudit 1.7's check_pgaudit_log reads it: a comma
 * list, case-insensitive, applied left to right; a `-` prefix removes. `all` is every class,
 * `none` adds nothing, and `misc` is MISC and MISC_SET both (`misc, -misc_set` leaves SET out;
 * `all, -misc` leaves out both).
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

/** A pgaudit.log value that turns on exactly `classes` (the inverse of sessionClasses). */
export function pgauditLogValue(classes: ReadonlySet<string>): string {
  const words = AUDIT_CLASSES.filter((c) => classes.has(c) && !(c === "MISC_SET" && classes.has("MISC"))).map(
    (c) => c.toLowerCase(),
  );
  // `misc` brings MISC_SET with it: take it back out when it is not wanted.
  if (classes.has("MISC") && !classes.has("MISC_SET")) words.push("-misc_set");
  return words.join(", ") || "none";
}

/** The session configurations people start from (Gold Lapel's five in "pgAudit Performance Impact", plus the narrow ones). */
export const PRESETS: Record<string, AuditConfig> = {
  none: { name: "none", log: ["none"] },
  "ddl,role": { name: "ddl,role", log: ["ddl", "role"], logCatalog: false, logStatementOnce: true },
  write: { name: "write", log: ["write"] },
  read: { name: "read", log: ["read"] },
  "read,write": { name: "read,write", log: ["read", "write"] },
  all: { name: "all", log: ["all"] },
  "all,-misc": { name: "all,-misc", log: ["all", "-misc", "-misc_set"] },
  "all+relation": { name: "all+relation", log: ["all"], logRelation: true },
  "all+parameter": { name: "all+parameter", log: ["all"], logParameter: true },
};

/** The configurations estimated when none is asked for. */
export const DEFAULT_CONFIGS: readonly string[] = ["ddl,role", "write", "read", "all"];

/** A preset by name, or a `pgaudit.log` value such as `read,write,-misc` as a session configuration. */
export function configByName(name: string): AuditConfig {
  const preset = PRESETS[name];
  if (preset) return preset;
  sessionClasses(name); // throws on an unknown class
  return { name, log: name.split(",") };
}
