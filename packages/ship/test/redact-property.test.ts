import { lexSql } from "@auditpipe/parse";
import { redactStatement } from "@auditpipe/ship";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

/** Characters that make SQL lexing interesting, so random strings hit every branch. */
const SQL_CHARS = [
  ..."'\"$-/*\\\n\t ;:.,()[]=<>+~@!eEbBxXnNuU&0123456789_aé世;",
  "--",
  "/*",
  "*/",
  "$$",
  "''",
];
const sqlish = fc.string({ unit: fc.constantFrom(...SQL_CHARS), maxLength: 80 });
const anything = fc.string({ unit: "binary", maxLength: 80 });

interface Piece {
  text: string;
  literal: boolean;
}

const lit = (text: string): Piece => ({ text, literal: true });
const other = (text: string): Piece => ({ text, literal: false });
const body = fc.string({ unit: fc.constantFrom(..."ab 'x\"\\\n-*/é世✓%,;0"), maxLength: 12 });

/** Every way PostgreSQL writes a constant, with arbitrary content. */
const literalPiece: fc.Arbitrary<Piece> = fc.oneof(
  body.map((s) => lit(`'${s.replaceAll("'", "''")}'`)),
  body.map((s) => lit(`E'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`)),
  body.map((s) => lit(`N'${s.replaceAll("'", "''")}'`)),
  body.map((s) => lit(`U&'${s.replaceAll("'", "''")}'`)),
  fc.string({ unit: fc.constantFrom("0", "1"), maxLength: 8 }).map((s) => lit(`B'${s}'`)),
  fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF"), maxLength: 8 }).map((s) => lit(`X'${s}'`)),
  fc
    .tuple(fc.string({ unit: fc.constantFrom(..."abc_"), maxLength: 3 }), body)
    .map(([tag, s]) => lit(`$${tag}$${s.replaceAll("$", "")}$${tag}$`)),
  fc.nat().map((n) => lit(String(n))),
  fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => lit(`${a}.${b}`)),
  fc.nat().map((n) => lit(`.${n}`)),
  fc.tuple(fc.nat(), fc.integer({ min: -30, max: 30 })).map(([a, e]) => lit(`${a}e${e}`)),
  fc.nat().map((n) => lit(`0x${n.toString(16)}`)),
  fc.integer({ min: 1, max: 999 }).map((n) => lit(`1_${String(n).padStart(3, "0")}`)),
);

/** Everything else: none of it may change. Line comments are left out (a newline before a string continues the previous string). */
const otherPiece: fc.Arbitrary<Piece> = fc.oneof(
  fc
    .stringMatching(/^[a-z_][a-z0-9_$]{0,6}$/)
    .filter((s) => s !== "uescape")
    .map(other),
  fc
    .constantFrom("FROM", "WHERE", "AND", "OR", "LIKE", "IN", "AS", "ON", "t1", "a1", "e", "x", "u")
    .map(other),
  body.map((s) => other(`"${s.replaceAll('"', '""')}"`)),
  fc.constantFrom("=", "<>", "+", "-", "*", "||", "@>", ",", "(", ")", ";", "[", "]").map(other),
  fc.integer({ min: 1, max: 20 }).map((n) => other(`$${n}`)),
  body.map((s) => other(`/* ${s.replace(/[*/]/g, "")} */`)),
);

const statement = fc
  .tuple(
    fc.constantFrom("SELECT", "UPDATE", "SET", "DO", "CREATE"),
    fc.array(fc.oneof(literalPiece, otherPiece), { maxLength: 25 }),
  )
  .map(([first, pieces]) => [other(first), ...pieces]);

const significant = (sql: string): string[] =>
  lexSql(sql)
    .filter((t) => t.kind !== "whitespace")
    .map((t) => sql.slice(t.start, t.end));

/** Significant tokens as `kind:text`, every constant (placeholders and `$n` too) as `constant`. */
const shape = (sql: string): string[] =>
  lexSql(sql)
    .filter((t) => t.kind !== "whitespace")
    .map((t) =>
      t.kind === "string" || t.kind === "number" || t.kind === "parameter"
        ? "constant"
        : `${t.kind}:${sql.slice(t.start, t.end)}`,
    );

describe("redactStatement properties", () => {
  it("the lexer covers any input exactly, and redaction never throws", () => {
    fc.assert(
      fc.property(fc.oneof(sqlish, anything), (sql) => {
        expect(
          lexSql(sql)
            .map((t) => sql.slice(t.start, t.end))
            .join(""),
        ).toBe(sql);
        redactStatement(sql);
      }),
      { numRuns: 2000 },
    );
  });

  it("is idempotent on its own output", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          sqlish,
          anything,
          statement.map((p) => p.map((x) => x.text).join(" ")),
        ),
        (sql) => {
          const once = redactStatement(sql).text;
          expect(redactStatement(once).text).toBe(once);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("keeps the token structure of any input, constants glued to their neighbours included", () => {
    fc.assert(
      fc.property(fc.oneof(sqlish, anything), (sql) => {
        expect(shape(redactStatement(sql).text)).toEqual(shape(sql));
      }),
      { numRuns: 3000 },
    );
  });

  it("swaps exactly the constants: same tokens otherwise, and no constant text survives", () => {
    fc.assert(
      fc.property(statement, fc.constantFrom(" ", "\t", "  "), (pieces, sep) => {
        const sql = pieces.map((p) => p.text).join(sep);
        const { text, literals } = redactStatement(sql);
        const before = significant(sql);
        const after = significant(text);
        expect(before).toEqual(pieces.map((p) => p.text));
        expect(after).toHaveLength(before.length);
        const highest = Math.max(
          0,
          ...before.filter((t) => /^\$\d+$/.test(t)).map((t) => Number(t.slice(1))),
        );
        let n = highest;
        pieces.forEach((piece, i) => {
          if (!piece.literal) expect(after[i]).toBe(before[i]);
          else {
            // Numbers in utility statements become 0, but still take their number.
            n++;
            expect([`$${n}`, `'$${n}'`, "0"]).toContain(after[i]);
          }
        });
        expect(literals).toBe(pieces.filter((p) => p.literal).length);
      }),
      { numRuns: 3000 },
    );
  });
});
