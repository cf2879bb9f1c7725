/**
 * The estimator reads pg_stat_statements' text through the workspace's SQL lexer: the constructs
 * its old regex tokenizer misread (E'…\'…' strings, nested block comments, dollar-quote tags
 * with digits) no longer hide or invent relations, placeholders or keywords.
 */
import { describe, expect, it } from "vitest";
import {
  analyzeStatement,
  type CatalogRelation,
  type RelationLookup,
  readsOnlyCatalog,
  withConstants,
} from "../src/_sql.ts";

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

describe("the privileges a statement needs on each relation (what pgaudit matches grants against)", () => {
  const use = (sql: string) =>
    analyzeStatement(sql, lookup).relations.map((r) => ({
      relation: r.relation,
      privileges: r.privileges,
      columns: r.columns,
      locked: r.locked ?? false,
    }));

  it("an INSERT needs SELECT only when it returns columns", () => {
    expect(use("INSERT INTO accounts (id, balance) VALUES ($1, $2)")).toEqual([
      { relation: "public.accounts", privileges: ["INSERT"], columns: [], locked: false },
    ]);
    expect(use("INSERT INTO accounts (balance) VALUES ($1) RETURNING id")).toEqual([
      { relation: "public.accounts", privileges: ["INSERT", "SELECT"], columns: ["id"], locked: false },
    ]);
    expect(use("INSERT INTO accounts (balance) VALUES ($1) RETURNING *")[0]!.columns).toBeUndefined();
  });

  it("an UPDATE or DELETE needs SELECT when it reads a column of its target, and the columns it sets are not read", () => {
    expect(use("UPDATE accounts SET note = $1, balance = balance + $2 WHERE id = $3")[0]).toEqual({
      relation: "public.accounts",
      privileges: ["UPDATE", "SELECT"],
      columns: ["id", "balance"],
      locked: false,
    });
    expect(use("UPDATE accounts SET note = $1")[0]!.privileges).toEqual(["UPDATE"]);
    expect(use("DELETE FROM accounts")[0]!.privileges).toEqual(["DELETE"]);
    expect(use("DELETE FROM accounts WHERE id = $1")[0]!.privileges).toEqual(["DELETE", "SELECT"]);
  });

  it("FOR UPDATE / FOR KEY SHARE locks every relation, or those its OF names (by name or alias)", () => {
    expect(use("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE")[0]!.locked).toBe(true);
    expect(
      use("SELECT a.balance FROM accounts a JOIN audit_log l ON l.id = a.id FOR NO KEY UPDATE OF a").map(
        (r) => r.locked,
      ),
    ).toEqual([true, false]);
    expect(use("SELECT balance FROM accounts FOR KEY SHARE OF audit_log")[0]!.locked).toBe(false);
    expect(use("SELECT substring(note for 2) FROM accounts")[0]!.locked).toBe(false);
  });
});

describe("readsOnlyCatalog (what pgaudit.log_catalog = off stops, without log_relation to name the relations)", () => {
  it("a statement naming only pg_catalog relations, qualified or as pg_*", () => {
    expect(readsOnlyCatalog("SELECT count(*) FROM pg_catalog.pg_class WHERE relname = $1")).toBe(true);
    expect(
      readsOnlyCatalog("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"),
    ).toBe(true);
  });

  it("not a read of information_schema: its views are not in pg_catalog, so pgaudit logs them (log-classes.test.ts)", () => {
    expect(readsOnlyCatalog("SELECT table_name FROM information_schema.tables")).toBe(false);
  });

  it("not one that also reads a user table, nor one that reads no relation", () => {
    expect(readsOnlyCatalog("SELECT a.id FROM accounts a JOIN pg_class c ON c.relname = a.note")).toBe(false);
    expect(readsOnlyCatalog("SELECT pg_is_in_recovery()")).toBe(false);
    expect(readsOnlyCatalog("SELECT balance FROM accounts")).toBe(false);
  });
});

describe("withConstants", () => {
  it("replaces placeholders, not $n inside strings or comments", () => {
    expect(withConstants("SELECT '$1' /* $2 */, $3 FROM t WHERE a = $10", 2)).toBe(
      "SELECT '$1' /* $2 */, 99 FROM t WHERE a = 99",
    );
  });
});
