import type { ShippedAttempt, ShippedRecord } from "../types.ts";
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

/**
 * An attempt with its statement's constants replaced (as redactRecord does) and every double-
 * quoted value in its message too: PostgreSQL quotes the values it names there (`invalid input
 * syntax for type integer: "42abc"`), along with the names of relations and constraints, which
 * the statement still shows. `redacted` lists both.
 */
export function redactAttempt(attempt: ShippedAttempt): ShippedAttempt {
  const statement =
    attempt.statement === null || MARKERS.has(attempt.statement)
      ? attempt.statement
      : redactStatement(attempt.statement).text;
  return {
    ...attempt,
    statement,
    message: redactMessage(attempt.message),
    redacted: ["statement", "message"],
  };
}

/** The value PostgreSQL quoted in a message, redacted. */
export const REDACTED_QUOTED = '"<redacted>"';

/** A server message with every `"…"` (doubled quotes inside are part of it) replaced. */
export function redactMessage(message: string): string {
  return message.replace(/"(?:[^"]|"")*"/g, REDACTED_QUOTED);
}
