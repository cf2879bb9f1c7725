/**
 * The settings bench manages and the values each configuration wants: every managed setting is
 * set explicitly (an existing server's own pgaudit.log in postgresql.conf must not leak into the
 * baseline), except pgaudit's when pgaudit is not loaded (then they are reset).
 */
import type { ConfigurationSpec } from "@auditpipe/overhead";

export const MANAGED_SETTINGS = [
  "pgaudit.log",
  "pgaudit.role",
  "pgaudit.log_statement_once",
  "log_statement",
] as const;

export interface MitigationOptions {
  logStatementOnce: boolean;
}

/** Desired value of each managed setting; null means ALTER SYSTEM RESET. */
export function desiredSettings(
  spec: ConfigurationSpec,
  pgauditLoaded: boolean,
  mitigations: MitigationOptions,
): Record<string, string | null> {
  const neutral: Record<string, string | null> = pgauditLoaded
    ? {
        "pgaudit.log": "none",
        "pgaudit.role": "",
        "pgaudit.log_statement_once": mitigations.logStatementOnce ? "on" : "off",
      }
    : { "pgaudit.log": null, "pgaudit.role": null, "pgaudit.log_statement_once": null };
  return { ...neutral, log_statement: "none", ...spec.settings };
}
