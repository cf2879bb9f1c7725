import type { AuditEntry } from "@auditpipe/parse";

/** What a logged parameter value becomes. */
export const REDACTED_VALUE = "<redacted>";

/** pgAudit's own marker for a value it did not log (pgaudit.log_parameter_max_size): no data, kept. */
const VALUE_MARKERS: ReadonlySet<string> = new Set(["<long param suppressed>"]);

/**
 * Replaces each logged parameter value with `<redacted>`. pgAudit's markers (`<not logged>`,
 * `<none>`, `<previously logged>`, and `<long param suppressed>` in place of a value) carry no
 * data and stay; a SQL NULL stays null, so the number of values and which were NULL remain visible.
 */
export function redactParameter(parameter: AuditEntry["parameter"]): AuditEntry["parameter"];
export function redactParameter(parameter: string | (string | null)[]): string | (string | null)[];
export function redactParameter(parameter: string | (string | null)[]): string | (string | null)[] {
  if (typeof parameter === "string") return parameter;
  return parameter.map((value) => (value === null || VALUE_MARKERS.has(value) ? value : REDACTED_VALUE));
}
