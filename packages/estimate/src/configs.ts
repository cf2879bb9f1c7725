/** pgaudit.log parsing and the named configurations `estimate --config NAME` knows. */
import { AUDIT_CLASSES, sessionClasses } from "@auditpipe/parse";
import type { AuditConfig } from "./types.ts";

// pgaudit.log's vocabulary lives with the rest of pgAudit's formats in @auditpipe/parse.
export { AUDIT_CLASSES, sessionClasses } from "@auditpipe/parse";

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

/** A pgaudit.log value that turns on exactly `classes` (the inverse of sessionClasses). */
export function pgauditLogValue(classes: ReadonlySet<string>): string {
  const words = AUDIT_CLASSES.filter((c) => classes.has(c) && !(c === "MISC_SET" && classes.has("MISC"))).map(
    (c) => c.toLowerCase(),
  );
  // `misc` brings MISC_SET with it: take it back out when it is not wanted.
  if (classes.has("MISC") && !classes.has("MISC_SET")) words.push("-misc_set");
  return words.join(", ") || "none";
}

/**
 * Whether pgaudit audits anything with these settings: a class in pgaudit.log (not `none`, not
 * only subtractions), or an audit role. Then its hooks do their per-statement work already.
 */
export function pgauditLogs(settings: Record<string, string>): boolean {
  const classes = (settings["pgaudit.log"] ?? "")
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "none" && !c.startsWith("-"));
  return classes.length > 0 || (settings["pgaudit.role"] ?? "").trim() !== "";
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
