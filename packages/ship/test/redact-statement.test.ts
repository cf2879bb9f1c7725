import { lexSql } from "@auditpipe/parse";
import { redactStatement } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";

const text = (sql: string): string => redactStatement(sql).text;
const significantCount = (sql: string): number =>
  lexSql(sql).filter((t) => t.kind !== "whitespace" && t.kind !== "comment").length;
/** Significant tokens as `kind:text`, every constant (and placeholder) as `constant`. */
const shape = (sql: string): string[] =>
  lexSql(sql)
    .filter((t) => t.kind !== "whitespace" && t.kind !== "comment")
    .map((t) =>
      t.kind === "string" || t.kind === "number" || t.kind === "parameter"
        ? "constant"
        : `${t.kind}:${sql.slice(t.start, t.end)}`,
    );

describe("redactStatement: plannable statements get pg_stat_statements' $n", () => {
  it("replaces each string and number, keeps the rest byte for byte", () => {
    expect(
      redactStatement(
        "SELECT name, email FROM account WHERE name LIKE '%,%' OR name = 'Grüße, 世界 ✓' AND balance > 10.50;",
      ),
    ).toEqual({
      text: "SELECT name, email FROM account WHERE name LIKE $1 OR name = $2 AND balance > $3;",
      literals: 3,
    });
  });

  it("numbers after the highest $n already there, so prepared parameters keep theirs", () => {
    expect(text("PREPARE q(int, text) AS SELECT * FROM t WHERE a = $2 AND b = 'x' AND c = $1 LIMIT 5")).toBe(
      "PREPARE q(int, text) AS SELECT * FROM t WHERE a = $2 AND b = $3 AND c = $1 LIMIT $4",
    );
  });

  it("every quoting form is one constant", () => {
    expect(
      text(
        "SELECT 'a''b', E'\\'', B'101', X'1F', N'n', U&'d!0061t' UESCAPE '!', $$x$$, $t$ 'y' $t$, 'c'\n'd', 0x1F, 1_000, .5, 1e10",
      ),
    ).toBe("SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13");
  });

  it("keeps identifiers that contain digits or look like prefixes", () => {
    expect(text('SELECT t1.col, a1, e, "x""1" FROM t1 WHERE e.b = 2')).toBe(
      'SELECT t1.col, a1, e, "x""1" FROM t1 WHERE e.b = $1',
    );
  });

  it("keeps comments in place, quotes inside them included", () => {
    expect(text("SELECT /* it's 42 */ 1 -- 'not a string' 7\n, 2")).toBe(
      "SELECT /* it's 42 */ $1 -- 'not a string' 7\n, $2",
    );
  });

  it("keeps the minus sign as an operator", () => {
    expect(text("UPDATE a SET b = b + -3816 WHERE id = -1 AND c = d -1")).toBe(
      "UPDATE a SET b = b + -$1 WHERE id = -$2 AND c = d -$3",
    );
  });

  it("typed literals keep the type and get a quoted placeholder (`interval $1` would not parse)", () => {
    expect(
      text(
        "SELECT interval '1 day', date '2024-01-01', 'x'::text, CAST('y' AS varchar(10)), timestamp(3) with time zone '2024-01-01 00:00', now() AT TIME ZONE 'UTC', EXTRACT('year' FROM d), \"MyType\" 'z'",
      ),
    ).toBe(
      "SELECT interval '$1', date '$2', $3::text, CAST($4 AS varchar(10)), timestamp(3) with time zone '$5', now() AT TIME ZONE $6, EXTRACT('$7' FROM d), \"MyType\" '$8'",
    );
  });

  it("keeps type modifiers, which are part of the type (pg_stat_statements keeps them too)", () => {
    expect(text("SELECT 1.5::numeric(12,2), 'a'::char(3), x::mytype(4), CAST(y AS vector(3)), f(5)")).toBe(
      "SELECT $1::numeric(12,2), $2::char(3), x::mytype(4), CAST(y AS vector(3)), f($3)",
    );
  });

  it("keeps type modifiers only where the grammar has a type name", () => {
    expect(
      text(
        "SELECT CAST(x AS numeric(10,2)), x::varchar(20), timestamp(3) 'a', interval(2) 'b', TREAT(y AS mytype(4)), z::pg_catalog.numeric(10,2), CAST(w AS public.vector(3))",
      ),
    ).toBe(
      "SELECT CAST(x AS numeric(10,2)), x::varchar(20), timestamp(3) '$1', interval(2) '$2', TREAT(y AS mytype(4)), z::pg_catalog.numeric(10,2), CAST(w AS public.vector(3))",
    );
    expect(
      text(
        "SELECT interval '1' second(3), interval minute to second(2), 'x'::character varying(10), 'y'::bit varying(5)",
      ),
    ).toBe(
      "SELECT interval '$1' second(3), interval minute to second(2), $2::character varying(10), $3::bit varying(5)",
    );
    expect(text("CREATE DOMAIN d AS vector(3) DEFAULT 5")).toBe("CREATE DOMAIN d AS vector(3) DEFAULT 0");
  });

  it("a parenthesis after AS outside a cast, or after a function named like a type word, holds data", () => {
    // Found by fuzzing: `AS _ (` was taken for the start of a type with modifiers.
    expect(text("SELECT AS _ (0.0")).toBe("SELECT AS _ ($1");
    expect(text("WITH c AS MATERIALIZED (SELECT 42) SELECT 1")).toBe(
      "WITH c AS MATERIALIZED (SELECT $1) SELECT $2",
    );
    expect(text("SELECT * FROM f(1) AS t (a) WHERE a = 2")).toBe("SELECT * FROM f($1) AS t (a) WHERE a = $2");
    expect(text("CREATE TABLE t AS VALUES (1, 2)")).toBe("CREATE TABLE t AS VALUES (0, 0)");
    expect(text("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START WITH 5))")).toBe(
      "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START WITH 0))",
    );
    // SECOND and VARYING are unreserved: functions may have those names; and a qualified
    // name is a function outside a type position.
    expect(text("SELECT second(5), varying(6), public.numeric(7), x SIMILAR TO second(8)")).toBe(
      "SELECT second($1), varying($2), public.numeric($3), x SIMILAR TO second($4)",
    );
  });

  it("CALL, EXECUTE, EXPLAIN, WITH, VALUES, parenthesised SELECT", () => {
    expect(text("CALL p(5, 'x')")).toBe("CALL p($1, $2)");
    expect(text("EXECUTE q(2)")).toBe("EXECUTE q($1)");
    expect(text("EXPLAIN SELECT 1")).toBe("EXPLAIN SELECT $1");
    expect(text("WITH c AS (SELECT 1) SELECT 'a'")).toBe("WITH c AS (SELECT $1) SELECT $2");
    expect(text("VALUES (1, 'a')")).toBe("VALUES ($1, $2)");
    expect(text("(SELECT 1) UNION (SELECT 2)")).toBe("(SELECT $1) UNION (SELECT $2)");
  });

  it("several statements in one string are redacted each by its own kind", () => {
    expect(text("SELECT 'compound one' AS a; SET x = 'y'; SELECT 2")).toBe(
      "SELECT $1 AS a; SET x = '$2'; SELECT $3",
    );
  });
});

describe("redactStatement: utility statements get constants the grammar accepts", () => {
  it("strings become '$n', numbers 0", () => {
    expect(text("SET work_mem = '8MB';")).toBe("SET work_mem = '$1';");
    expect(text("SET statement_timeout TO 5000")).toBe("SET statement_timeout TO 0");
    expect(text("ALTER SYSTEM SET x = 'y'")).toBe("ALTER SYSTEM SET x = '$1'");
    expect(text("COMMENT ON TABLE t IS 'Bob''s table'")).toBe("COMMENT ON TABLE t IS '$1'");
    expect(text("COPY t FROM '/tmp/x.csv' WITH (DELIMITER ',')")).toBe(
      "COPY t FROM '$1' WITH (DELIMITER '$2')",
    );
    expect(text("PREPARE TRANSACTION 'gid'")).toBe("PREPARE TRANSACTION '$1'");
  });

  it("never writes a string placeholder that a newline would join to the string before it", () => {
    // PostgreSQL reads 'a'<newline>'b' as one constant. Found by the idempotence property
    // (hand-made inputs: a number glued to a word, next to strings across a newline).
    expect(text("!''\n5e")).toBe("!'$1'\nE'$2'e");
    expect(text("!''\n5e\n-- c\n''")).toBe("!'$1'\nE'$2'e\n-- c\n'$3'");
    expect(text("!'a' /* c */\n5e")).toBe("!'$1' /* c */\n'$2'e"); // a block comment breaks the join
    // A quote in a line comment between them does not hide the string before.
    expect(text("SET a = 'x' -- don't\nE'y'")).toBe("SET a = '$1' -- don't\nE'$2'");
    // Our own placeholders, kept, take the E form too.
    expect(text("SET a = c.5\n'$7'")).toBe("SET a = c'$8'\nE'$7'");
    // Nor may a quote right after a string placeholder double it.
    expect(text("$$x$$'$7'")).toBe("$8'$7'");
    for (const sql of [
      "!''\n5e",
      "!''\n5e\n-- c\n''",
      "!'a' /* c */\n5e",
      "SET a = 'x' -- don't\nE'y'",
      "SET a = $$x$$ -- it's\n$$y$$",
      "SET a = c.5 -- don't\n'c'",
      "SET a = c.5\n'$7'",
      "SELECT y.5\n'$7'",
      "$$x$$'$7'",
    ]) {
      const once = text(sql);
      expect(text(once), sql).toBe(once);
      expect(significantCount(once), sql).toBe(significantCount(sql));
    }
  });

  it("DO blocks and function bodies are constants too", () => {
    expect(text("DO $$\nBEGIN\n  INSERT INTO o VALUES (4, 'from DO');\nEND\n$$;")).toBe("DO '$1';");
    expect(text("CREATE FUNCTION f(i int) RETURNS int LANGUAGE sql AS $fn$ SELECT i + 1 $fn$;")).toBe(
      "CREATE FUNCTION f(i int) RETURNS int LANGUAGE sql AS '$1';",
    );
  });

  it("keeps type modifiers in DDL, replaces defaults and options", () => {
    expect(
      text(
        "create table h(tid int, b numeric(12,2) DEFAULT 0, filler char(22), c varchar (8)) with (fillfactor=100)",
      ),
    ).toBe(
      "create table h(tid int, b numeric(12,2) DEFAULT 0, filler char(22), c varchar (8)) with (fillfactor=0)",
    );
    expect(text("ALTER TABLE o ADD CONSTRAINT c CHECK (item <> '' AND n > 5)")).toBe(
      "ALTER TABLE o ADD CONSTRAINT c CHECK (item <> '$1' AND n > 0)",
    );
  });
});

describe("redactStatement: what passes through", () => {
  it("pgAudit markers and <REDACTED>", () => {
    for (const marker of ["<not logged>", "<previously logged>", "<none>"])
      expect(redactStatement(marker)).toEqual({ text: marker, literals: 0 });
    expect(redactStatement("ALTER ROLE app_user PASSWORD <REDACTED>")).toEqual({
      text: "ALTER ROLE app_user PASSWORD <REDACTED>",
      literals: 0,
    });
  });

  it("statements without constants, and our own placeholders", () => {
    expect(redactStatement("SELECT count(*) FROM account")).toEqual({
      text: "SELECT count(*) FROM account",
      literals: 0,
    });
    expect(redactStatement("SET x = '$1'; SELECT $2")).toEqual({
      text: "SET x = '$1'; SELECT $2",
      literals: 0,
    });
  });
});

describe("redactStatement: cut statements never throw", () => {
  it.each([
    ["SELECT 'abc", "SELECT $1"],
    ["SELECT E'ab\\'", "SELECT $1"],
    ["DO $x$ BEGIN", "DO '$1'"],
    ['SELECT "ab', 'SELECT "ab'],
    ["SELECT 1 /* open", "SELECT $1 /* open"],
    ["SELECT U&'x' UESCAPE '", "SELECT $1"],
  ])("%j", (sql, expected) => {
    expect(text(sql)).toBe(expected);
  });
});

describe("redactStatement: placeholders never fuse with their neighbours", () => {
  it.each([
    // Invalid SQL, but redacting it again must not change it (a fused `a$1` would be an identifier).
    ["SELECT a.5", "SELECT a'$1'"],
    ["SELECT a1.5", "SELECT a1'$1'"],
    ["SELECT $'x'", "SELECT $'$1'"],
    ["SET x = 1.5.5", "SET x = '$1'0"],
  ])("%j", (sql, expected) => {
    expect(text(sql)).toBe(expected);
    expect(text(expected)).toBe(expected);
  });

  // Found by fuzzing: `b.5` is the word b and the number .5, but `b'$1'` is a bit string.
  it.each([
    ["SELECT b.5", "SELECT b '$1'"],
    ["SELECT B.5", "SELECT B '$1'"],
    ["SELECT x.5", "SELECT x '$1'"],
    ["SELECT X.5", "SELECT X '$1'"],
    ["SELECT e.5", "SELECT e '$1'"],
    ["SELECT E.5", "SELECT E '$1'"],
    ["SELECT n.5", "SELECT n '$1'"],
    ["SELECT N.5", "SELECT N '$1'"],
    ["SELECT 5b.5", "SELECT '$1'b '$2'"],
    ["SET a = b.5e", "SET a = b '$1'e"],
    // `u&'$1'` would be a U& string, which also takes a following UESCAPE clause.
    ["SET a = u&5e UESCAPE", "SET a = u& '$1'e UESCAPE"],
    ["SET a = U&E'x'", "SET a = U& '$1'"],
    ["SET a = u&$$x$$", "SET a = u& '$1'"],
    // Longer words and longer operators are no prefix.
    ["SELECT ab.5", "SELECT ab'$1'"],
    ["SET a = u&&5e", "SET a = u&&'$1'e"],
  ])("after a one-letter word that is a string prefix: %j", (sql, expected) => {
    expect(text(sql)).toBe(expected);
    expect(text(expected)).toBe(expected);
    expect(shape(expected)).toEqual(shape(sql));
  });

  it.each([
    // `$1AS` and `$1OR` are syntax errors since PostgreSQL 15 (trailing junk after a parameter).
    ["SELECT 'x'AS y", "SELECT '$1'AS y"],
    ["SELECT 1 FROM t WHERE a='x'OR b=1", "SELECT $1 FROM t WHERE a='$2'OR b=$3"],
    ["SELECT $$x$$_a", "SELECT '$1'_a"],
    // Our own placeholder right after a string placeholder: `'$8''$7'` would be one string.
    ["SELECT a.5'$7'", "SELECT a'$8'E'$7'"],
    // A string placeholder needed on both sides (a word after it, a quote before it).
    ["SELECT a.5'x'b", "SELECT a'$1'E'$2'b"],
  ])("before a word, or between quotes: %j", (sql, expected) => {
    expect(text(sql)).toBe(expected);
    expect(text(expected)).toBe(expected);
    expect(shape(expected)).toEqual(shape(sql));
  });
});
