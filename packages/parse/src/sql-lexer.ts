/**
 * A lexer for PostgreSQL's SQL, following src/backend/parser/scan.l (PostgreSQL 16, which
 * accepts everything 15 does) with `standard_conforming_strings` on. It only splits: it never
 * decodes escapes and never throws. An unterminated quote, dollar quote or comment (a statement
 * cut by a length limit) runs to the end of the input and is flagged `unterminated`.
 * Tokens cover the input exactly: concatenating their texts gives the input back.
 * The one SQL lexer of the workspace: redaction (@auditpipe/ship) and the estimator's statement
 * reading (@auditpipe/estimate) both read SQL through it.
 */

export type SqlTokenKind =
  | "whitespace"
  | "comment"
  /** Unquoted identifier or keyword (the lexer does not tell them apart). */
  | "identifier"
  /** `"a""b"` or `U&"..."` (with its UESCAPE clause, if any). */
  | "quoted-identifier"
  /** Any string constant: `'...'`, `E'...'`, `B'...'`, `X'...'`, `N'...'`, `U&'...'`, `$tag$...$tag$`. */
  | "string"
  /** Integer, decimal, real, `0x`/`0o`/`0b`; never signed (the sign is an operator token). */
  | "number"
  /** `$1`: a parameter of a prepared statement. */
  | "parameter"
  | "operator"
  /** `, ( ) [ ] ; : :: := . ..` and a lone `$` (scan.l's `self` and friends). */
  | "punctuation";

/** How a string constant is quoted; it decides which escapes the lexer honours. */
export type SqlStringForm = "standard" | "escape" | "bit" | "hex" | "national" | "unicode" | "dollar";

export interface SqlToken {
  kind: SqlTokenKind;
  /** Offset of the first UTF-16 code unit. */
  start: number;
  /** Offset just past the last one. */
  end: number;
  /** Strings only. */
  form?: SqlStringForm;
  /** A quote, dollar quote, quoted identifier or block comment that the input ended inside. */
  unterminated?: boolean;
}

const QUOTE = 39; // '
const DQUOTE = 34; // "
const DOLLAR = 36; // $
const BACKSLASH = 92;
const DOT = 46;
const MINUS = 45;
const SLASH = 47;
const STAR = 42;
const AMP = 38;
const NL = 10;
const CR = 13;

/** scan.l `space`: PostgreSQL 16 added \v; earlier versions reject it anyway, so accepting it is harmless. */
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === NL || c === CR || c === 12 || c === 11;
}

/** scan.l `ident_start`: every non-ASCII code unit counts, as every high byte does there. */
export function isSqlIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c >= 128;
}

/** scan.l `ident_cont`: `$` belongs to identifiers, so `a$$b` is one identifier, not a dollar quote. */
export function isSqlIdentCont(c: number): boolean {
  return isSqlIdentStart(c) || (c >= 48 && c <= 57) || c === DOLLAR;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
}

/** scan.l `op_chars`. */
function isOpChar(c: number): boolean {
  switch (c) {
    case 126: // ~
    case 33: // !
    case 64: // @
    case 35: // #
    case 94: // ^
    case AMP:
    case 124: // |
    case 96: // `
    case 63: // ?
    case 43: // +
    case MINUS:
    case STAR:
    case SLASH:
    case 37: // %
    case 60: // <
    case 62: // >
    case 61: // =
      return true;
    default:
      return false;
  }
}

/** Operator characters that keep a trailing `+`/`-` in the operator (scan.l's "non-math" chars). */
function isNonMathOpChar(c: number): boolean {
  return (
    c === 126 ||
    c === 33 ||
    c === 64 ||
    c === 35 ||
    c === 94 ||
    c === AMP ||
    c === 124 ||
    c === 96 ||
    c === 63 ||
    c === 37
  );
}

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

// Kept whole (~120 lines): one pass over the characters whose branches share `i`; split, each token would cost a call and a returned position.
/** Splits `sql` into tokens. Never throws. */
export function lexSql(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  const n = sql.length;
  let i = 0;
  while (i < n) {
    const c = sql.charCodeAt(i);
    const next = i + 1 < n ? sql.charCodeAt(i + 1) : -1;
    const start = i;

    if (isSpace(c)) {
      i++;
      while (i < n && isSpace(sql.charCodeAt(i))) i++;
      tokens.push({ kind: "whitespace", start, end: i });
      continue;
    }
    if (c === MINUS && next === MINUS) {
      i = lineCommentEnd(sql, i);
      tokens.push({ kind: "comment", start, end: i });
      continue;
    }
    if (c === SLASH && next === STAR) {
      const end = blockCommentEnd(sql, i);
      tokens.push(
        end < 0 ? { kind: "comment", start, end: n, unterminated: true } : { kind: "comment", start, end },
      );
      i = end < 0 ? n : end;
      continue;
    }
    if (c === QUOTE) {
      i = pushString(tokens, sql, start, i + 1, "standard");
      continue;
    }
    if (next === QUOTE) {
      const l = lower(c);
      // A prefix letter only counts at a token start, which is where we are: `an'x'` was taken
      // by the identifier branch below before reaching here.
      const form: SqlStringForm | undefined =
        l === 101 ? "escape" : l === 98 ? "bit" : l === 120 ? "hex" : l === 110 ? "national" : undefined;
      if (form) {
        i = pushString(tokens, sql, start, i + 2, form);
        continue;
      }
    }
    if (lower(c) === 117 && next === AMP && i + 2 < n) {
      const q = sql.charCodeAt(i + 2);
      if (q === QUOTE) {
        i = pushString(tokens, sql, start, i + 3, "unicode");
        continue;
      }
      if (q === DQUOTE) {
        const end = quotedIdentEnd(sql, i + 3);
        const closed = end >= 0;
        const stop = closed ? withUescape(sql, end) : n;
        tokens.push(
          closed
            ? { kind: "quoted-identifier", start, end: stop }
            : unterminated("quoted-identifier", start, n),
        );
        i = stop;
        continue;
      }
    }
    if (c === DQUOTE) {
      const end = quotedIdentEnd(sql, i + 1);
      tokens.push(
        end >= 0 ? { kind: "quoted-identifier", start, end } : unterminated("quoted-identifier", start, n),
      );
      i = end >= 0 ? end : n;
      continue;
    }
    if (c === DOLLAR) {
      if (isDigit(next)) {
        i += 2;
        while (i < n && isDigit(sql.charCodeAt(i))) i++;
        tokens.push({ kind: "parameter", start, end: i });
        continue;
      }
      const tagEnd = dollarTagEnd(sql, i);
      if (tagEnd > 0) {
        const tag = sql.slice(i, tagEnd);
        const close = sql.indexOf(tag, tagEnd);
        if (close < 0) tokens.push({ kind: "string", form: "dollar", start, end: n, unterminated: true });
        else tokens.push({ kind: "string", form: "dollar", start, end: close + tag.length });
        i = close < 0 ? n : close + tag.length;
        continue;
      }
      // scan.l's dolqfailed: a lone `$` is a token of its own.
      i++;
      tokens.push({ kind: "punctuation", start, end: i });
      continue;
    }
    if (isDigit(c) || (c === DOT && isDigit(next))) {
      i = numberEnd(sql, i);
      tokens.push({ kind: "number", start, end: i });
      continue;
    }
    if (isSqlIdentStart(c)) {
      i++;
      while (i < n && isSqlIdentCont(sql.charCodeAt(i))) i++;
      tokens.push({ kind: "identifier", start, end: i });
      continue;
    }
    if (c === 58 /* : */) {
      i += next === 58 || next === 61 ? 2 : 1;
      tokens.push({ kind: "punctuation", start, end: i });
      continue;
    }
    if (c === DOT) {
      i += next === DOT ? 2 : 1;
      tokens.push({ kind: "punctuation", start, end: i });
      continue;
    }
    if (isOpChar(c)) {
      i = operatorEnd(sql, i);
      tokens.push({ kind: "operator", start, end: i });
      continue;
    }
    // `, ( ) [ ] ;` and anything scan.l would reject (a backslash, a control character): one each.
    i++;
    tokens.push({ kind: "punctuation", start, end: i });
  }
  return tokens;
}

function unterminated(kind: SqlTokenKind, start: number, end: number): SqlToken {
  return { kind, start, end, unterminated: true };
}

function lineCommentEnd(sql: string, i: number): number {
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === NL || c === CR) break;
    i++;
  }
  return i;
}

/** Block comments nest in PostgreSQL (unlike the SQL standard's C-style ones). -1: unterminated. */
function blockCommentEnd(sql: string, i: number): number {
  const n = sql.length;
  let depth = 0;
  while (i < n) {
    const c = sql.charCodeAt(i);
    const next = i + 1 < n ? sql.charCodeAt(i + 1) : -1;
    if (c === SLASH && next === STAR) {
      depth++;
      i += 2;
    } else if (c === STAR && next === SLASH) {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else i++;
  }
  return -1;
}

/** Offset past the closing `"`, `""` being a quote inside; -1 when the input ends first. */
function quotedIdentEnd(sql: string, i: number): number {
  const n = sql.length;
  while (i < n) {
    if (sql.charCodeAt(i) === DQUOTE) {
      if (sql.charCodeAt(i + 1) === DQUOTE) i += 2;
      else return i + 1;
    } else i++;
  }
  return -1;
}

/**
 * Scans a quoted string whose body starts at `i`, then any continuation (`'a'\n'b'` is one
 * constant: scan.l's quotecontinue), and pushes one token. Returns the offset after it.
 */
function pushString(tokens: SqlToken[], sql: string, start: number, i: number, form: SqlStringForm): number {
  const n = sql.length;
  for (;;) {
    const close = stringBodyEnd(sql, i, form);
    if (close < 0) {
      tokens.push({ kind: "string", form, start, end: n, unterminated: true });
      return n;
    }
    const resume = continuation(sql, close);
    if (resume < 0) {
      const end = form === "unicode" ? withUescape(sql, close) : close;
      tokens.push({ kind: "string", form, start, end });
      return end;
    }
    i = resume;
  }
}

/** Offset past the closing quote of a string body starting at `i`; -1 when unterminated. */
function stringBodyEnd(sql: string, i: number, form: SqlStringForm): number {
  const n = sql.length;
  // Doubled quotes are a quote in standard, escape, national and U& strings (xqdouble), but
  // end a bit or hex string (scan.l has no xqdouble rule for <xb> and <xh>).
  const doubling = form !== "bit" && form !== "hex";
  const backslash = form === "escape";
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === QUOTE) {
      if (doubling && i + 1 < n && sql.charCodeAt(i + 1) === QUOTE) i += 2;
      else return i + 1;
    } else if (backslash && c === BACKSLASH) i += 2;
    else i++;
  }
  return -1;
}

/**
 * scan.l's quotecontinue: whitespace holding at least one newline (line comments allowed,
 * block comments not), then a quote. Returns the offset after that quote, or -1.
 */
function continuation(sql: string, i: number): number {
  const n = sql.length;
  let newline = false;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      if (c === NL || c === CR) newline = true;
      i++;
    } else if (c === MINUS && sql.charCodeAt(i + 1) === MINUS) i = lineCommentEnd(sql, i);
    else break;
  }
  return newline && i < n && sql.charCodeAt(i) === QUOTE ? i + 1 : -1;
}

/**
 * PostgreSQL reads `U&'...' UESCAPE '!'` (and `U&"..." UESCAPE '!'`) as one constant or
 * identifier (parser.c's base_yylex lookahead). Returns the offset past the clause, or `end`.
 */
function withUescape(sql: string, end: number): number {
  let i = skipSpaceAndComments(sql, end);
  if (sql.slice(i, i + 7).toLowerCase() !== "uescape") return end;
  if (i + 7 < sql.length && isSqlIdentCont(sql.charCodeAt(i + 7))) return end;
  i = skipSpaceAndComments(sql, i + 7);
  if (sql.charCodeAt(i) !== QUOTE) return end;
  const close = stringBodyEnd(sql, i + 1, "standard");
  return close < 0 ? sql.length : close;
}

function skipSpaceAndComments(sql: string, i: number): number {
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) i++;
    else if (c === MINUS && sql.charCodeAt(i + 1) === MINUS) i = lineCommentEnd(sql, i);
    else if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      const end = blockCommentEnd(sql, i);
      if (end < 0) return n;
      i = end;
    } else break;
  }
  return i;
}

/**
 * scan.l's dolqdelim: `$` + optional tag + `$`, the tag an identifier without `$` and not
 * starting with a digit (`$1` is a parameter). Returns the offset past the delimiter, or -1.
 */
function dollarTagEnd(sql: string, i: number): number {
  const n = sql.length;
  let j = i + 1;
  if (j < n && isSqlIdentStart(sql.charCodeAt(j))) {
    j++;
    while (j < n) {
      const c = sql.charCodeAt(j);
      if (!isSqlIdentStart(c) && !isDigit(c)) break;
      j++;
    }
  }
  return j < n && sql.charCodeAt(j) === DOLLAR ? j + 1 : -1;
}

/** Digits of one base with single `_` separators between them (PostgreSQL 16's numeric literals). */
function digitsEnd(sql: string, i: number, isBaseDigit: (c: number) => boolean): number {
  const n = sql.length;
  if (i >= n || !isBaseDigit(sql.charCodeAt(i))) return i;
  i++;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isBaseDigit(c)) i++;
    else if (c === 95 && i + 1 < n && isBaseDigit(sql.charCodeAt(i + 1))) i += 2;
    else break;
  }
  return i;
}

/**
 * scan.l's decinteger/hexinteger/octinteger/bininteger/numeric/real. `1..5` is `1` then `..`
 * (numericfail); `1e` is `1` then an identifier (realfail). Anything after is another token
 * (PostgreSQL 15+ rejects `123abc` as trailing junk; older ones read `123 abc`).
 */
function numberEnd(sql: string, i: number): number {
  const n = sql.length;
  const c = sql.charCodeAt(i);
  if (c === 48 /* 0 */ && i + 2 < n) {
    const base = lower(sql.charCodeAt(i + 1));
    const isBaseDigit =
      base === 120
        ? isHexDigit
        : base === 111
          ? (d: number) => d >= 48 && d <= 55
          : base === 98
            ? (d: number) => d === 48 || d === 49
            : undefined;
    if (isBaseDigit) {
      // `0x_1F` is allowed: an underscore may follow the prefix.
      let j = i + 2;
      if (sql.charCodeAt(j) === 95) j++;
      const end = digitsEnd(sql, j, isBaseDigit);
      if (end > j) return end;
    }
  }
  let j = c === DOT ? i : digitsEnd(sql, i, isDigit);
  if (sql.charCodeAt(j) === DOT && sql.charCodeAt(j + 1) !== DOT) j = digitsEnd(sql, j + 1, isDigit);
  const e = sql.charCodeAt(j);
  if (e === 101 || e === 69) {
    let k = j + 1;
    const sign = sql.charCodeAt(k);
    if (sign === 43 || sign === MINUS) k++;
    const end = digitsEnd(sql, k, isDigit);
    if (end > k) j = end;
  }
  return j;
}

/**
 * scan.l's operator rule: the longest run of operator characters, cut before an embedded `--`
 * or `/*`; a trailing `+` or `-` is split off unless the operator holds a non-math character,
 * so `=-1` is `=`, `-`, `1`.
 */
function operatorEnd(sql: string, i: number): number {
  const n = sql.length;
  const start = i;
  let nonMath = false;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (!isOpChar(c)) break;
    const next = i + 1 < n ? sql.charCodeAt(i + 1) : -1;
    if (i > start && ((c === MINUS && next === MINUS) || (c === SLASH && next === STAR))) break;
    if (isNonMathOpChar(c)) nonMath = true;
    i++;
  }
  if (!nonMath) {
    while (i - start > 1) {
      const last = sql.charCodeAt(i - 1);
      if (last !== 43 && last !== MINUS) break;
      i--;
    }
  }
  return i;
}
