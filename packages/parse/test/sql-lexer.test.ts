import { lexSql } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

/** Significant tokens as `kind:text`. */
function lex(sql: string): string[] {
  return lexSql(sql)
    .filter((t) => t.kind !== "whitespace")
    .map((t) => `${t.kind}:${sql.slice(t.start, t.end)}${t.unterminated ? " (unterminated)" : ""}`);
}

describe("lexSql", () => {
  it("covers the input exactly", () => {
    const sql = "SELECT 'a''b', E'\\'', $$x$$ -- c\n/* d */ FROM t";
    const tokens = lexSql(sql);
    expect(tokens.map((t) => sql.slice(t.start, t.end)).join("")).toBe(sql);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!.start).toBe(tokens[i - 1]!.end);
  });

  it("standard strings: doubled quotes inside, backslash literal (standard_conforming_strings on)", () => {
    expect(lex("'it''s' 'a\\' x")).toEqual(["string:'it''s'", "string:'a\\'", "identifier:x"]);
  });

  it("escape strings: backslash escapes, including \\'", () => {
    expect(lex("E'it\\'s' e'\\\\' x")).toEqual(["string:E'it\\'s'", "string:e'\\\\'", "identifier:x"]);
    expect(lexSql("E'a'")[0]!.form).toBe("escape");
  });

  it("bit and hex strings end at the first quote", () => {
    expect(lex("B'1010' x'1F' b")).toEqual(["string:B'1010'", "string:x'1F'", "identifier:b"]);
    expect(lexSql("X'1F'")[0]!.form).toBe("hex");
  });

  it("national and U& strings, with UESCAPE folded into the constant", () => {
    expect(lex("N'abc' U&'d\\0061t' U&'d!0061t' UESCAPE '!' x")).toEqual([
      "string:N'abc'",
      "string:U&'d\\0061t'",
      "string:U&'d!0061t' UESCAPE '!'",
      "identifier:x",
    ]);
    expect(lex("U&\"d!0061\" uescape '!'")).toEqual(["quoted-identifier:U&\"d!0061\" uescape '!'"]);
    expect(lex("U&'x' uescaped")).toEqual(["string:U&'x'", "identifier:uescaped"]);
  });

  it("a prefix letter inside an identifier is not a string prefix", () => {
    expect(lex("ae'x'")).toEqual(["identifier:ae", "string:'x'"]);
  });

  it("continuation: strings separated by whitespace with a newline are one constant", () => {
    expect(lex("'a'\n  'b' 'c'")).toEqual(["string:'a'\n  'b'", "string:'c'"]);
    expect(lex("'a' -- note\n'b'")).toEqual(["string:'a' -- note\n'b'"]);
    expect(lex("E'a'\n'\\''")).toEqual(["string:E'a'\n'\\''"]);
    // A block comment breaks the continuation (scan.l allows only line comments there).
    expect(lex("'a' /* c */\n'b'")).toEqual(["string:'a'", "comment:/* c */", "string:'b'"]);
  });

  it("dollar quoting: tags, nesting of other tags, $1 is a parameter", () => {
    expect(lex("$$a 'b' $x$ c$$ $fn$ $$ inside $fn$ $1 $12")).toEqual([
      "string:$$a 'b' $x$ c$$",
      "string:$fn$ $$ inside $fn$",
      "parameter:$1",
      "parameter:$12",
    ]);
    expect(lexSql("$_t9$x$_t9$")[0]!.form).toBe("dollar");
    // `$` belongs to identifiers: no dollar quote starts inside one.
    expect(lex("a$$b$$")).toEqual(["identifier:a$$b$$"]);
    // A tag cannot start with a digit, and `$x` without a closing `$` is a lone `$`.
    expect(lex("$x + 1")).toEqual(["punctuation:$", "identifier:x", "operator:+", "number:1"]);
  });

  it("quoted identifiers with doubled quotes", () => {
    expect(lex('"Tab""le"."Col, One"')).toEqual([
      'quoted-identifier:"Tab""le"',
      "punctuation:.",
      'quoted-identifier:"Col, One"',
    ]);
  });

  it("comments: line, nested block, quotes inside are not strings", () => {
    expect(lex("a -- it's\n/* /* it's */ \"x */ b")).toEqual([
      "identifier:a",
      "comment:-- it's",
      "comment:/* /* it's */ \"x */",
      "identifier:b",
    ]);
  });

  it("numbers: integers, decimals, reals, .5, 0x/0o/0b, underscores", () => {
    expect(lex("1 10.50 1e10 1.5E-3 .5 5. 0x1F 0o17 0b101 1_000 0x_FF")).toEqual([
      "number:1",
      "number:10.50",
      "number:1e10",
      "number:1.5E-3",
      "number:.5",
      "number:5.",
      "number:0x1F",
      "number:0o17",
      "number:0b101",
      "number:1_000",
      "number:0x_FF",
    ]);
    // realfail and numericfail: the number stops where the grammar stops.
    expect(lex("1e 1..2")).toEqual(["number:1", "identifier:e", "number:1", "punctuation:..", "number:2"]);
  });

  it("numbers vs identifiers: a1 and t1.col are identifiers", () => {
    expect(lex("a1 t1.col x.5")).toEqual([
      "identifier:a1",
      "identifier:t1",
      "punctuation:.",
      "identifier:col",
      "identifier:x",
      "number:.5",
    ]);
  });

  it("the sign of a number is an operator", () => {
    expect(lex("a = -1")).toEqual(["identifier:a", "operator:=", "operator:-", "number:1"]);
    // scan.l splits a trailing +/- off a math operator: `=-1` is `=`, `-`, `1`...
    expect(lex("a=-1")).toEqual(["identifier:a", "operator:=", "operator:-", "number:1"]);
    // ...but not off one holding a non-math character.
    expect(lex("a @- 1")).toEqual(["identifier:a", "operator:@-", "number:1"]);
  });

  it("operators stop before an embedded comment", () => {
    expect(lex("a <--c\n b")).toEqual(["identifier:a", "operator:<", "comment:--c", "identifier:b"]);
  });

  it("casts and other punctuation", () => {
    expect(lex("'x'::text[]")).toEqual([
      "string:'x'",
      "punctuation:::",
      "identifier:text",
      "punctuation:[",
      "punctuation:]",
    ]);
  });

  it("unterminated quotes, dollar quotes, identifiers and comments run to the end", () => {
    expect(lex("SELECT 'abc")).toEqual(["identifier:SELECT", "string:'abc (unterminated)"]);
    expect(lex("SELECT E'ab\\")).toEqual(["identifier:SELECT", "string:E'ab\\ (unterminated)"]);
    expect(lex("DO $x$ abc")).toEqual(["identifier:DO", "string:$x$ abc (unterminated)"]);
    expect(lex('SELECT "ab')).toEqual(["identifier:SELECT", 'quoted-identifier:"ab (unterminated)']);
    expect(lex("a /* /* */ b")).toEqual(["identifier:a", "comment:/* /* */ b (unterminated)"]);
  });

  it("non-ASCII letters are identifier characters", () => {
    expect(lex("SELECT grüße, 世界")).toEqual([
      "identifier:SELECT",
      "identifier:grüße",
      "punctuation:,",
      "identifier:世界",
    ]);
  });
});
