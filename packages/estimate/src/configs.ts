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
