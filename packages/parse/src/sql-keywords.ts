/**
 * Keywords after which an expression starts (`WHERE a LIKE 'x'`, `SELECT -1`), upper case (the
 * lexer does not tell keywords from names: compare upper-cased identifiers). Redaction: after
 * any other word a string is a typed literal (`interval '1 day'`, `date '2024-01-01'`: gram.y's
 * `func_name Sconst` / `ConstTypename Sconst`), where only a string constant parses; missing a
 * word here costs fidelity only, as the fallback placeholder `'$n'` parses everywhere.
 * Fingerprints: a minus sign after one of these (or an operator, `(`, `,`) is unary, part of
 * the constant it precedes.
 */
export const EXPRESSION_KEYWORDS: ReadonlySet<string> = new Set([
  "SELECT",
  "WHERE",
  "AND",
  "OR",
  "NOT",
  "LIKE",
  "ILIKE",
  "SIMILAR",
  "TO",
  "ESCAPE",
  "CASE",
  "WHEN",
  "THEN",
  "ELSE",
  "FROM",
  "DISTINCT",
  "ALL",
  "ANY",
  "SOME",
  "BETWEEN",
  "SYMMETRIC",
  "ASYMMETRIC",
  "RETURNING",
  "BY",
  "LIMIT",
  "OFFSET",
  "FIRST",
  "NEXT",
  "HAVING",
  "ON",
  "USING",
  "DEFAULT",
  "FOR",
  "PLACING",
  "LEADING",
  "TRAILING",
  "BOTH",
  "OVERLAPS",
  "IN",
  "IS",
  "UNION",
  "INTERSECT",
  "EXCEPT",
  "VALUE",
  "KEY",
  "RETURN",
]);
