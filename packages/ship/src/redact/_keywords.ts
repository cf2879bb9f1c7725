/**
 * The few keyword sets the redactor needs to pick a placeholder PostgreSQL's grammar accepts.
 * Words are upper case; the lexer does not know keywords, the redactor compares upper-cased
 * identifiers against these. The keywords after which an expression starts are the lexer's
 * (`EXPRESSION_KEYWORDS` in @auditpipe/parse), shared with the estimator's fingerprints.
 */

/**
 * Statements pg_stat_statements normalises (the optimisable ones, plus the wrappers that hold
 * one): in them a constant is an expression, and `$n` parses wherever the constant did.
 * Every other statement is a utility statement, whose grammar mostly takes constants only.
 */
export const PLANNABLE_STATEMENTS: ReadonlySet<string> = new Set([
  "SELECT",
  "INSERT",
  "UPDATE",
  "DELETE",
  "MERGE",
  "VALUES",
  "TABLE",
  "WITH",
  "EXPLAIN",
  "PREPARE", // but PREPARE TRANSACTION 'gid' is utility: see statement.ts
  "EXECUTE",
  "CALL",
  "DECLARE",
]);

/**
 * Type names whose parenthesised modifiers gram.y takes as integer constants only
 * (`varchar(10)`, `timestamp(3)`, `interval second(3)`, `numeric(12,2)`): type modifiers are
 * part of the type, not data, and pg_stat_statements keeps them too. All but VARYING and SECOND
 * are column-name keywords, which cannot name a function; those two count only after the words
 * that make them part of a type (statement.ts).
 */
export const TYPMOD_KEYWORDS: ReadonlySet<string> = new Set([
  "CHAR",
  "CHARACTER",
  "VARCHAR",
  "NCHAR",
  "VARYING",
  "NUMERIC",
  "DECIMAL",
  "DEC",
  "FLOAT",
  "BIT",
  "TIME",
  "TIMESTAMP",
  "INTERVAL",
  "SECOND",
]);

/** The types VARYING follows (`character varying(10)`, `bit varying(5)`). */
export const VARYING_TYPES: ReadonlySet<string> = new Set(["CHAR", "CHARACTER", "NCHAR", "BIT"]);

/**
 * Calls whose parentheses hold `expression AS type` (gram.y's CAST, TREAT, XMLSERIALIZE; and
 * CREATE CAST (source AS target)): a name after that AS is a type, with modifiers.
 */
export const CAST_CALLS: ReadonlySet<string> = new Set(["CAST", "TREAT", "XMLSERIALIZE"]);
