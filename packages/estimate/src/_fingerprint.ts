/**
 * A statement's fingerprint: its text with every constant replaced by `?`, comments dropped,
 * whitespace collapsed, keywords and unquoted names lower-cased, and value lists folded, read
 * through the workspace's SQL lexer. Statements that differ only in their values share one; the
 * fingerprint carries no value, so it can be shown where the statement (personal data) cannot.
 */
import { EXPRESSION_KEYWORDS, lexSql, type SqlToken } from "@auditpipe/parse";

/** Fingerprints longer than this are cut (with `…`): enough to tell statements apart in a report. */
export const MAX_FINGERPRINT_CHARS = 160;

/**
 * Whether a `-` after `previous` (the last significant token, absent at the start) is unary:
 * nothing before it ends an operand. A unary minus before a constant is part of the constant
 * (`abalance + -5` and `abalance + 5` are one statement, as pg_stat_statements has them).
 */
function unaryAfter(sql: string, previous: SqlToken | undefined): boolean {
  if (previous === undefined) return true;
  const text = sql.slice(previous.start, previous.end);
  switch (previous.kind) {
    case "operator":
      return true;
    case "punctuation":
      return text !== ")" && text !== "]";
    case "identifier":
      return EXPRESSION_KEYWORDS.has(text.toUpperCase());
    default:
      return false;
  }
}

const isConstant = (token: SqlToken | undefined): boolean =>
  token !== undefined && (token.kind === "number" || token.kind === "parameter");

export function fingerprint(sql: string): string {
  const parts: string[] = [];
  const tokens = lexSql(sql).filter((t) => t.kind !== "whitespace" && t.kind !== "comment");
  for (const [i, token] of tokens.entries()) {
    const text = sql.slice(token.start, token.end);
    if (
      token.kind === "operator" &&
      text === "-" &&
      isConstant(tokens[i + 1]) &&
      unaryAfter(sql, tokens[i - 1])
    )
      continue;
    switch (token.kind) {
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
  // `IN (?, ?, ?)` and `VALUES (?, ?), (?, ?)` fold to one shape whatever the count. Both patterns
  // hold `(?, `: a text without it (most statements) skips the two regular expressions.
  if (out.includes("(?, "))
    out = out.replace(/\(\?(?:, \?)+\)/g, "(?, …)").replace(/(\(\?, …\))(?:, \(\?, …\))+/g, "$1");
  return out.length > MAX_FINGERPRINT_CHARS ? `${out.slice(0, MAX_FINGERPRINT_CHARS - 1)}…` : out;
}
