import type { ShippedRecord } from "../types.ts";
import { redactParameter } from "./parameter.ts";
import { redactStatement } from "./statement.ts";

/** Which redactions to apply (`--redact literals`, `--redact parameters`). */
export interface RedactionMode {
  /** Replace string and numeric constants in the statement with placeholders. */
  literals: boolean;
  /** Replace each logged parameter value with `<redacted>`. */
  parameters: boolean;
}

/** pgAudit markers in place of a statement or the parameters: nothing there to redact. */
const MARKERS: ReadonlySet<string> = new Set(["<not logged>", "<previously logged>", "<none>"]);

/**
 * A copy of the record with the requested redactions applied; the input is not modified.
 * `redacted` lists each field the redaction went through (even when it found no constant to
 * replace, so a reader knows the text is not raw), and is absent when none was. Metering reads
 * the source records, so it still counts the original bytes.
 */
export function redactRecord(record: ShippedRecord, mode: RedactionMode): ShippedRecord {
  const redacted: ("statement" | "parameter")[] = [];
  let { statement, parameter } = record;
  if (mode.literals && !MARKERS.has(statement)) {
    statement = redactStatement(statement).text;
    redacted.push("statement");
  }
  if (mode.parameters && typeof parameter !== "string") {
    parameter = redactParameter(parameter);
    redacted.push("parameter");
  }
  if (redacted.length === 0) return { ...record };
  return { ...record, statement, parameter, redacted };
}
