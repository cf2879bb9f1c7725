/**
 * The estimator reads pg_stat_statements' text through the workspace's SQL lexer: the constructs
 * its old regex tokenizer misread (E'…\'…' strings, nested block comments, dollar-quote tags
 * with digits) no longer hide or invent relations, placeholders or keywords.
 */
import { describe, expect, it } from "vitest";
import { analyzeStatement, type CatalogRelation, type RelationLookup, withConstants } from "../src/_sql.ts";

const tables: CatalogRelation[] = [
  { schema: "public", name: "accounts", columns: ["id", "balance", "note"] },
  { schema: "public", name: "audit_log", columns: ["id", "body"] },
];
const lookup: RelationLookup = {
  find: (schema, name) => tables.find((t) => t.name === name && (schema === null || t.schema === schema)),
};

describe("analyzeStatement", () => {
  it("an escaped quote inside E'…' does not end the string", () => {
    // The old tokenizer ended the string at \' and read "from audit_log" as SQL.
    const shape = analyzeStatement(
      "UPDATE accounts SET note = E'it\\'s from audit_log' WHERE id = $1",
      lookup,
    );
    expect(shape.kind).toBe("UPDATE");
    expect(shape.relations.map((r) => r.relation)).toEqual(["public.accounts"]);
    expect(shape.placeholders).toBe(1);
  });

  it("a nested block comment is one comment", () => {
    const shape = analyzeStatement(
      "/* outer /* inner */ still comment: DELETE FROM audit_log */ SELECT balance FROM accounts WHERE id = $1",
      lookup,
    );
    expect(shape.kind).toBe("SELECT");
    expect(shape.relations.map((r) => r.relation)).toEqual(["public.accounts"]);
  });

  it("a dollar quote whose tag has digits ($a1$) is one string", () => {
    const shape = analyzeStatement(
      "INSERT INTO audit_log (body) VALUES ($a1$ $2 FROM accounts $a1$)",
      lookup,
    );
    expect(shape.kind).toBe("INSERT");
    expect(shape.relations.map((r) => r.relation)).toEqual(["public.audit_log"]);
    expect(shape.placeholders).toBe(0);
  });
});

describe("withConstants", () => {
  it("replaces placeholders, not $n inside strings or comments", () => {
    expect(withConstants("SELECT '$1' /* $2 */, $3 FROM t WHERE a = $10", 2)).toBe(
      "SELECT '$1' /* $2 */, 99 FROM t WHERE a = 99",
    );
  });
});
