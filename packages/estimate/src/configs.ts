/** pgaudit.log parsing and the named configurations `estimate --config NAME` knows. */
import { sessionClasses } from "@auditpipe/parse";
import type { AuditConfig } from "./types.ts";

// pgaudit.log's vocabulary lives with the rest of pgAudit's formats in @auditpipe/parse.
export { AUDIT_CLASSES, sessionClasses } from "@auditpipe/parse";

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
