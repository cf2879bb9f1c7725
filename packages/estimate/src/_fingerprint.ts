/**
 * A statement's fingerprint: its text with every constant replaced by `?`, comments dropped,
 * whitespace collapsed, keywords and unquoted names lower-cased, and value lists folded, read
 * through the workspace's SQL lexer. Statements that differ only in their values share one; the
 * fingerprint carries no value, so it can be shown where the statement (personal data) cannot.
 */
import { lexSql } from "@auditpipe/parse";

/** Fingerprints longer than this are cut (with `…`): enough to tell statements apart in a report. */
export const MAX_FINGERPRINT_CHARS = 160;

export function fingerprint(sql: string): string {
  const parts: string[] = [];
  for (const token of lexSql(sql)) {
    const text = sql.slice(token.start, token.end);
    switch (token.kind) {
      case "whitespace":
      case "comment":
        break;
      case "string":
      case "number":
      case "parameter":
        parts.push("?");
        break;
      case "identifier":
        parts.push(text.toLowerCase());
        break;
      default:
        parts.push(text);
    }
  }
  let out = "";
  for (const [i, part] of parts.entries()) {
    const prev = parts[i - 1];
    const glue =
      i === 0 || part === "," || part === ")" || part === "." || prev === "(" || prev === "." ? "" : " ";
    out += glue + part;
  }
  // `IN (?, ?, ?)` and `VALUES (?, ?), (?, ?)` fold to one shape whatever the count.
  out = out.replace(/\(\?(?:, \?)+\)/g, "(?, …)").replace(/(\(\?, …\))(?:, \(\?, …\))+/g, "$1");
  return out.length > MAX_FINGERPRINT_CHARS ? `${out.slice(0, MAX_FINGERPRINT_CHARS - 1)}…` : out;
}
