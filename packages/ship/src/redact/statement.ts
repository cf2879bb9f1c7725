import {
  EXPRESSION_KEYWORDS,
  isSqlIdentCont,
  isSqlIdentStart,
  lexSql,
  type SqlToken,
} from "@auditpipe/parse";
import { CAST_CALLS, PLANNABLE_STATEMENTS, TYPMOD_KEYWORDS, VARYING_TYPES } from "./_keywords.ts";

/** What redactStatement returns. */
export interface RedactedStatement {
  /** The statement with every string and numeric constant replaced by a placeholder. */
  text: string;
  /** How many constants were replaced. */
  literals: number;
}

/** pgAudit prints these instead of a statement; they carry no constant and pass unchanged. */
const STATEMENT_MARKERS: ReadonlySet<string> = new Set(["<not logged>", "<previously logged>", "<none>"]);

/**
 * A string constant that is one of our own placeholders (`'$3'`, possibly with a prefix the
 * neighbouring text lent it): left alone and never counted, so redacting twice changes nothing.
 */
const PLACEHOLDER_STRING = /^(?:[eEbBxXnN]|[uU]&)?'\$(\d+)'$/;

/** Beyond this an identifier cannot be a keyword we look for: skip upper-casing it. */
const LONGEST_KEYWORD = 12;

/**
 * Replaces string and numeric constants with placeholders, the way pg_stat_statements
 * normalises a query, and leaves everything else (identifiers, keywords, operators, comments,
 * whitespace) byte for byte where it was.
 *
 * - In statements pg_stat_statements normalises (SELECT, INSERT, UPDATE, DELETE, MERGE, VALUES,
 *   WITH, EXPLAIN, PREPARE, EXECUTE, CALL, DECLARE) a constant becomes `$n`, numbered after the
 *   highest `$n` already present, so a prepared statement's own parameters keep their numbers.
 * - Where PostgreSQL's grammar accepts only a constant, `$n` would not parse: a typed literal
 *   (`interval '1 day'`) and every string in a utility statement (`SET x = '8MB'`, `DO $$...$$`,
 *   a function body) become the string `'$n'`; a number in a utility statement becomes `0`.
 * - Type modifiers (`varchar(10)`, `numeric(12,2)`) are part of the type and stay, but only where
 *   the grammar has a type name (see holdsTypmod).
 * - A minus sign stays outside the placeholder: the lexer cannot tell unary from binary minus,
 *   and `-$1` parses wherever `-1` did.
 *
 * Never throws: an unterminated quote (a statement cut by a length limit) is redacted to the end.
 */
export function redactStatement(sql: string): RedactedStatement {
  if (STATEMENT_MARKERS.has(sql)) return { text: sql, literals: 0 };
  const tokens = lexSql(sql);
  let next = highestParameter(sql, tokens) + 1;
  let literals = 0;
  let out = "";
  let copied = 0;

  // Per statement (a logged string may hold several, separated by `;`).
  let kind: "unknown" | "plannable" | "utility" = "unknown";
  let prepare = false;
  // The last four significant tokens; their words are only computed when a decision needs them.
  let p1: SqlToken | undefined;
  let p2: SqlToken | undefined;
  let p3: SqlToken | undefined;
  let p4: SqlToken | undefined;
  const word = (token: SqlToken | undefined): string => wordOf(sql, token);
  // One entry per open parenthesis: what it holds.
  const parens: Paren[] = [];
  let closedTypmod = false;

  // Whether the previous significant token, as written out, ends in a closing quote; and where it is.
  let p1Quoted = false;
  let p1Index = -1;

  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t]!;
    const tk = token.kind;
    if (tk === "whitespace" || tk === "comment") continue;
    // A string written here would continue the one before it (`'a'<newline>'b'` is one constant).
    const continuing = p1Quoted && joinsStrings(sql, tokens, p1Index + 1, t);
    let quoted = false;

    if (tk === "string" || tk === "number") {
      const inTypmod = tk === "number" && parens[parens.length - 1] === "typmod";
      if (!inTypmod && !(tk === "string" && isPlaceholderString(sql, token))) {
        let form: "param" | "string" | "zero";
        if (kind === "utility") form = tk === "string" ? "string" : "zero";
        else if (tk === "number") form = "param";
        else
          form = stringTakesParam(word(p1), word(p2), word(p3), p1?.kind, closedTypmod) ? "param" : "string";
        out += sql.slice(copied, token.start);
        const text = placeholder(form, next++, out, sql, token.end, continuing, afterPrefix(sql, tokens, t));
        out += text;
        quoted = text.charCodeAt(text.length - 1) === 39; /* ' */
        copied = token.end;
        literals++;
      } else if (tk === "string") {
        // Kept as it was (one of our placeholders): it too must not continue the string before it,
        // nor double the quote of a string placeholder written right before it (`a.5'$7'`).
        const adjoining = p1Quoted && copied === token.start;
        if ((continuing || adjoining) && sql.charCodeAt(token.start) === 39 /* ' */) {
          out += `${sql.slice(copied, token.start)}E`;
          copied = token.start;
        }
        quoted = !token.unterminated && sql.charCodeAt(token.end - 1) === 39; /* ' */
      }
      if (kind === "unknown") kind = "utility";
    } else if (tk === "identifier") {
      if (kind === "unknown") {
        const w = word(token);
        if (prepare) kind = w === "TRANSACTION" ? "utility" : "plannable";
        else if (w === "PREPARE") prepare = true;
        else kind = PLANNABLE_STATEMENTS.has(w) ? "plannable" : "utility";
      }
    } else if (tk === "punctuation") {
      const c = sql.charCodeAt(token.start);
      if (c === 40 /* ( */) {
        const inCast = parens[parens.length - 1] === "cast";
        parens.push(
          holdsTypmod(p1, p2, p3, p4, word, inCast)
            ? "typmod"
            : p1?.kind === "identifier" && CAST_CALLS.has(word(p1))
              ? "cast"
              : "other",
        );
      } else if (c === 41 /* ) */) closedTypmod = parens.pop() === "typmod";
      else if (c === 59 /* ; */ && token.end - token.start === 1) {
        kind = "unknown";
        prepare = false;
        parens.length = 0;
      }
      if (kind === "unknown" && c !== 40 && c !== 59) kind = "utility";
    } else if (kind === "unknown") kind = "utility";

    p4 = p3;
    p3 = p2;
    p2 = p1;
    p1 = token;
    p1Quoted = quoted;
    p1Index = t;
  }
  return { text: copied === 0 ? sql : out + sql.slice(copied), literals };
}

/** The highest `$n` (parameter or placeholder string) already in the statement; 0 if none. */
function highestParameter(sql: string, tokens: SqlToken[]): number {
  let highest = 0;
  for (const token of tokens) {
    let n = 0;
    if (token.kind === "parameter") n = Number(sql.slice(token.start + 1, token.end));
    else if (token.kind === "string" && isPlaceholderString(sql, token)) {
      n = Number(PLACEHOLDER_STRING.exec(sql.slice(token.start, token.end))![1]);
    } else continue;
    if (n > highest && Number.isSafeInteger(n)) highest = n;
  }
  return highest;
}

/**
 * What an open parenthesis holds: a type's modifiers, the operands of CAST (whose `AS` is
 * followed by a type name), or anything else.
 */
type Paren = "typmod" | "cast" | "other";

/**
 * Does a parenthesis opened after these tokens hold type modifiers? Only where gram.y has a type
 * name: a type keyword (`varchar(20)`, `timestamp(3)`), or any name, possibly schema-qualified,
 * right after `::`, after the AS of CAST/TREAT/XMLSERIALIZE, or in `CREATE DOMAIN d AS`. After
 * any other AS a name and a parenthesis are data: `WITH c AS MATERIALIZED (SELECT 1)`,
 * `AS VALUES (1)`, `AS IDENTITY (START 5)`, a table alias's columns.
 */
function holdsTypmod(
  p1: SqlToken | undefined,
  p2: SqlToken | undefined,
  p3: SqlToken | undefined,
  p4: SqlToken | undefined,
  word: (token: SqlToken | undefined) => string,
  inCast: boolean,
): boolean {
  if (!isName(p1)) return false;
  const w2 = word(p2);
  if (w2 === ".") {
    // `pg_catalog.numeric(10,2)` is a type only where a type name goes; `public.numeric(5)` is a call.
    if (!isName(p3)) return false;
    const w4 = word(p4);
    return w4 === "::" || (w4 === "AS" && inCast);
  }
  if (p1.kind === "identifier") {
    const w1 = word(p1);
    // Unreserved, so functions may have these names: `second(5)` is a call.
    if (w1 === "VARYING") return VARYING_TYPES.has(w2);
    if (w1 === "SECOND") {
      // `interval second(3)`, `interval '1' second(3)`, `hour to second(3)`.
      if (w2 === "TO") return INTERVAL_FIELDS.has(word(p3));
      return w2 === "INTERVAL" || p2?.kind === "string";
    }
    // Column-name keywords cannot name a function: these are always the type.
    if (TYPMOD_KEYWORDS.has(w1)) return true;
  }
  return w2 === "::" || (w2 === "AS" && (inCast || word(p4) === "DOMAIN"));
}

/** The fields before `TO SECOND` in an interval type (`DAY TO SECOND(3)`). */
const INTERVAL_FIELDS: ReadonlySet<string> = new Set(["DAY", "HOUR", "MINUTE"]);

function isName(token: SqlToken | undefined): token is SqlToken {
  return token !== undefined && (token.kind === "identifier" || token.kind === "quoted-identifier");
}

/**
 * Is the token before `tokens[t]` a word that a quote right after it would turn into a string
 * prefix (`b'`, `x'`, `e'`, `n'`, `u&'`)? The lexer gave it a token of its own, so it is one
 * letter long (it starts a token in the output too: placeholders end in a digit or a quote).
 */
function afterPrefix(sql: string, tokens: SqlToken[], t: number): boolean {
  const before = tokens[t - 1];
  if (before === undefined || before.end - before.start !== 1) return false;
  const c = sql[before.start]!;
  if (before.kind === "identifier") return STRING_PREFIXES.includes(c);
  if (before.kind !== "operator" || c !== "&") return false;
  const u = tokens[t - 2];
  return u?.kind === "identifier" && u.end - u.start === 1 && (sql[u.start] === "u" || sql[u.start] === "U");
}

/** scan.l's one-letter string prefixes: xb, xh, xe, xn. */
const STRING_PREFIXES = "bBxXeEnN";

/** Placeholders are short: the length test spares the regex on real constants, however long. */
function isPlaceholderString(sql: string, token: SqlToken): boolean {
  return token.end - token.start <= 16 && PLACEHOLDER_STRING.test(sql.slice(token.start, token.end));
}

/**
 * A token as the placeholder rules compare it: identifiers upper-cased (keywords), constants
 * by their kind (their text is never needed and may be long), anything else as written.
 */
function wordOf(sql: string, token: SqlToken | undefined): string {
  if (token === undefined) return "";
  switch (token.kind) {
    case "identifier":
      return token.end - token.start <= LONGEST_KEYWORD
        ? sql.slice(token.start, token.end).toUpperCase()
        : "~";
    case "string":
      return "'";
    case "number":
      return "0";
    default:
      return sql.slice(token.start, token.end);
  }
}

/**
 * In a plannable statement, may a string constant after these tokens become `$n`? Not when it
 * is the string of a typed literal: after a type name (any word that does not introduce an
 * expression, a quoted identifier, or a type's closing parenthesis), or `EXTRACT('field' ...`.
 */
function stringTakesParam(
  p1: string,
  p2: string,
  p3: string,
  p1Kind: SqlToken["kind"] | undefined,
  closedTypmod: boolean,
): boolean {
  if (p1Kind === "identifier") {
    if (p1 === "ZONE") return p2 === "TIME" && p3 === "AT"; // AT TIME ZONE 'UTC' vs WITH TIME ZONE '...'
    return EXPRESSION_KEYWORDS.has(p1);
  }
  if (p1Kind === "quoted-identifier") return false;
  if (p1 === ")") return !closedTypmod;
  if (p1 === "(") return p2 !== "EXTRACT";
  return true;
}

/**
 * The placeholder text, adjusted so it cannot fuse with its neighbours when the input had
 * none between them (`a.5` must not become the identifier `a$1`, nor `$'x'` a dollar quote,
 * nor `'x'AS` the `$1AS` PostgreSQL 15+ rejects as trailing junk after a parameter): then the
 * string form, which no identifier or number absorbs.
 */
function placeholder(
  form: "param" | "string" | "zero",
  n: number,
  out: string,
  sql: string,
  end: number,
  continuing: boolean,
  prefixed: boolean,
): string {
  const before = out.length > 0 ? out.charCodeAt(out.length - 1) : -1;
  const after = end < sql.length ? sql.charCodeAt(end) : -1;
  const glued = (c: number): boolean => c !== -1 && (isSqlIdentCont(c) || c === 46) /* . */;
  const wordAfter = after !== -1 && isSqlIdentStart(after);
  if (form === "param" && (glued(before) || wordAfter)) form = "string";
  if (form === "zero" && (glued(before) || glued(after))) form = "string";
  // `'$1''$2'` would read back as one string with a doubled quote, whichever side the quote is on.
  if (form === "string" && (before === 39 || after === 39) /* ' */ && !glued(before)) {
    // A word after it as well: the E form, which starts a new token after a quote.
    if (!wordAfter) form = "param";
    else return `E'$${n}'`;
  }
  // After a string across a newline, the E form, which does not continue it. (When a string
  // placeholder is itself followed by a newline and a string, that next one takes the E form.)
  if (form === "string" && continuing) return `E'$${n}'`;
  // `b'$1'` would be a bit string (`x`: hex, `e`: escape, `n`: national, `u&`: Unicode); a space
  // keeps the word a word.
  if (form === "string") return prefixed ? ` '$${n}'` : `'$${n}'`;
  return form === "param" ? `$${n}` : "0";
}

/**
 * scan.l's quotecontinue between tokens `from` and `to` (exclusive): only whitespace and line
 * comments, with a newline among them.
 */
function joinsStrings(sql: string, tokens: SqlToken[], from: number, to: number): boolean {
  let newline = false;
  for (let i = from; i < to; i++) {
    const t = tokens[i]!;
    if (t.kind === "comment") {
      if (sql.charCodeAt(t.start) !== 45 /* - */) return false; // a block comment breaks it
    } else if (t.kind === "whitespace") {
      if (!newline) {
        const text = sql.slice(t.start, t.end);
        newline = text.includes("\n") || text.includes("\r");
      }
    } else return false;
  }
  return newline;
}
