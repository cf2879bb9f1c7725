/**
 * What pgaudit walks is PostgreSQL 15's final range table, not the statement's FROM list: a table
 * named twice is two entries, a view brings a second (privilege-less) entry and its base tables,
 * a scanned partitioned table its partitions, and min()/max() of an indexed column a planner copy.
 * pg_stat_statements' normalized RI queries are turned back into what pgaudit logs.
 * (The shapes were read off real pgaudit 1.7 logs; see docs/estimator.md "Entries".)
 */
import { describe, expect, it } from "vitest";
import { riStatement } from "../src/_ri.ts";
import {
  analyzeStatement,
  type CatalogRelation,
  type RelationLookup,
  withConstantBytes,
} from "../src/_sql.ts";

const tables: CatalogRelation[] = [
  {
    schema: "public",
    name: "orders",
    columns: ["id", "customer_id", "status"],
    indexLeads: ["id", "customer_id"],
  },
  { schema: "public", name: "customers", columns: ["id", "email"] },
  { schema: "public", name: "active_customers", columns: ["id", "email"], viewOf: ["public.customers"] },
  { schema: "public", name: "stock", columns: ["warehouse", "product_id", "qty"] },
  { schema: "public", name: "stock_moves", columns: ["id", "warehouse", "product_id", "delta"] },
  { schema: "public", name: "stock_archive", columns: ["id", "warehouse", "product_id", "delta"] },
  {
    schema: "public",
    name: "customer_orders",
    columns: ["email", "order_id"],
    viewOf: ["public.customers", "public.orders"],
  },
  {
    schema: "public",
    name: "events",
    columns: ["at", "kind"],
    partitions: ["public.events_q1", "public.events_q2"],
  },
];
const lookup: RelationLookup = {
  find: (schema, name) => tables.find((t) => t.name === name && (schema === null || t.schema === schema)),
  findFunction: (_schema, name) =>
    ["place_order", "orders_of", "plus_one", "orders_volatile"].includes(name) ? `public.${name}` : undefined,
  sqlFunction: (qualified) =>
    ({
      "public.orders_of": {
        body: "SELECT * FROM orders WHERE customer_id = $1",
        returnsSet: true,
        strict: false,
        volatile: false,
      },
      "public.orders_volatile": {
        body: "SELECT * FROM orders",
        returnsSet: true,
        strict: false,
        volatile: true,
      },
      "public.plus_one": { body: "SELECT $1 + 1", returnsSet: false, strict: false, volatile: false },
    })[qualified],
};
const names = (sql: string): string[] =>
  analyzeStatement(sql, lookup).relations.map(
    (r) => `${r.relation}${r.write ? `:${r.write}` : ""}${r.plannerAdded ? "+" : ""}`,
  );

describe("range table", () => {
  it("an UPDATE's target read again in a subquery is two entries, plus min/max's index copy", () => {
    expect(
      names("UPDATE orders SET status = $1 WHERE id = (SELECT max(id) FROM orders WHERE customer_id = $2)"),
    ).toEqual(["public.orders:UPDATE", "public.orders", "public.orders"]);
    // count() is not answered from an index: no copy.
    expect(names("SELECT count(id) FROM orders WHERE customer_id = $1")).toEqual(["public.orders"]);
  });

  it("a view is logged as the view, a privilege-less second entry and its base tables", () => {
    expect(names("SELECT email FROM customer_orders WHERE order_id = $1")).toEqual([
      "public.customer_orders",
      "public.customer_orders+",
      "public.customers",
      "public.orders",
    ]);
    expect(analyzeStatement("SELECT email FROM customer_orders", lookup).relations[0]!.objectType).toBe(
      "VIEW",
    );
  });

  it("written through an auto-updatable view: the view and its base table, both written, no placeholder", () => {
    const update = analyzeStatement("UPDATE active_customers SET email = $1 WHERE id = $2", lookup);
    expect(update.relations.map((r) => `${r.relation}:${r.write}:${r.objectType ?? "TABLE"}`)).toEqual([
      "public.active_customers:UPDATE:VIEW",
      "public.customers:UPDATE:TABLE",
    ]);
    expect(names("INSERT INTO active_customers (id, email) VALUES ($1, $2)")).toEqual([
      "public.active_customers:INSERT",
      "public.customers:INSERT",
    ]);
  });

  it("a scan of a partitioned table lists its partitions; an INSERT routes without listing them", () => {
    expect(names("SELECT kind FROM events")).toEqual([
      "public.events",
      "public.events_q1+",
      "public.events_q2+",
    ]);
    expect(names("INSERT INTO events (at, kind) VALUES ($1, $2)")).toEqual(["public.events:INSERT"]);
  });

  it("a data-modifying CTE: the statement is its top-level DML, and every CTE's target is an entry", () => {
    const sql =
      "WITH moved AS (DELETE FROM stock_moves WHERE id IN (SELECT id FROM stock_moves WHERE warehouse = $1 LIMIT 1) RETURNING *) INSERT INTO stock_archive SELECT * FROM moved";
    expect(analyzeStatement(sql, lookup).kind).toBe("INSERT");
    expect(names(sql)).toEqual([
      "public.stock_moves:DELETE",
      "public.stock_moves",
      "public.stock_archive:INSERT",
    ]);
    expect(
      names(
        "WITH next AS (SELECT warehouse FROM stock WHERE qty > 0 LIMIT 1 FOR UPDATE SKIP LOCKED) UPDATE stock s SET qty = 0 FROM next WHERE s.warehouse = next.warehouse",
      ),
    ).toEqual(["public.stock", "public.stock:UPDATE"]);
    const select = analyzeStatement(
      "WITH u AS (UPDATE stock SET qty = 0 RETURNING *) SELECT * FROM u",
      lookup,
    );
    expect([select.kind, select.relations.map((r) => r.write)]).toEqual(["SELECT", ["UPDATE"]]);
  });

  it("MERGE: MISC `???` as a statement, its target named by the privileges checked", () => {
    const both = analyzeStatement(
      "MERGE INTO stock s USING (SELECT $1 AS warehouse, $2 AS product_id) m ON s.warehouse = m.warehouse AND s.product_id = m.product_id WHEN MATCHED THEN UPDATE SET qty = s.qty + 1 WHEN NOT MATCHED THEN INSERT (warehouse, product_id, qty) VALUES (m.warehouse, m.product_id, 1)",
      lookup,
    );
    expect([both.command, both.kind]).toEqual(["MERGE", "INSERT"]);
    expect(both.relations[0]).toMatchObject({
      relation: "public.stock",
      write: "INSERT",
      privileges: ["SELECT", "UPDATE", "INSERT"],
      upsert: { updatedColumns: ["qty"] },
    });
    const del = analyzeStatement(
      "MERGE INTO stock s USING stock_moves m ON s.warehouse = m.warehouse WHEN MATCHED THEN DELETE",
      lookup,
    );
    expect(del.relations.map((r) => `${r.relation}:${r.write ?? "read"}`)).toEqual([
      "public.stock:DELETE",
      "public.stock_moves:read",
    ]);
  });

  it("INSERT … ON CONFLICT DO UPDATE: UPDATE on the target, and EXCLUDED as a composite type", () => {
    const upsert = analyzeStatement(
      "INSERT INTO stock (warehouse, product_id, qty) VALUES ($1, $2, $3) ON CONFLICT (warehouse, product_id) DO UPDATE SET qty = stock.qty + EXCLUDED.qty",
      lookup,
    );
    expect(upsert.relations).toMatchObject([
      {
        relation: "public.stock",
        write: "INSERT",
        privileges: ["INSERT", "UPDATE", "SELECT"],
        upsert: { updatedColumns: ["qty"] },
      },
      { relation: "public.stock", objectType: "COMPOSITE TYPE", columns: ["qty"], privileges: ["SELECT"] },
    ]);
    // EXCLUDED read nowhere: no privileges to check (MISC `???` with log_relation).
    const blind = analyzeStatement(
      "INSERT INTO stock (warehouse, product_id, qty) VALUES ($1, $2, $3) ON CONFLICT (warehouse, product_id) DO UPDATE SET qty = 0",
      lookup,
    );
    expect(blind.relations[1]).toMatchObject({ objectType: "COMPOSITE TYPE", plannerAdded: true });
    expect(blind.relations[0]!.privileges).toEqual(["INSERT", "UPDATE"]);
    // DO NOTHING adds no entry.
    expect(names("INSERT INTO stock VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")).toEqual([
      "public.stock:INSERT",
    ]);
  });

  it("an SQL function the planner inlines: no FUNCTION entry, its body's tables in the range table", () => {
    const inlined = analyzeStatement("SELECT * FROM orders_of($1)", lookup);
    expect([inlined.functions, names("SELECT * FROM orders_of($1)")]).toEqual([[], ["public.orders"]]);
    expect(analyzeStatement("SELECT plus_one($1)", lookup).functions).toEqual([]);
    // VOLATILE (or STRICT, or not in FROM) is executed: a FUNCTION entry, its statements nested.
    expect(analyzeStatement("SELECT * FROM orders_volatile()", lookup).functions).toEqual([
      "public.orders_volatile",
    ]);
    expect(analyzeStatement("SELECT orders_of($1)", lookup).functions).toEqual(["public.orders_of"]);
  });

  it("user functions called, and CALL's own class", () => {
    expect(analyzeStatement("SELECT place_order($1, $2)", lookup).functions).toEqual(["public.place_order"]);
    const call = analyzeStatement("CALL place_order(1)", lookup);
    expect([call.kind, call.command, call.utilityClass, call.functions]).toEqual([
      "UTILITY",
      "CALL",
      "MISC",
      ["public.place_order"],
    ]);
  });
});

describe("riStatement", () => {
  it("a key check: SELECT 1 back, the key values are real parameters", () => {
    const ri = riStatement(
      'SELECT $2 FROM ONLY "public"."customers" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x',
    );
    expect(ri).toEqual({
      text: 'SELECT 1 FROM ONLY "public"."customers" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x',
      params: 1,
      kind: "SELECT",
      relation: { relation: "public.customers", columns: ["id"], writtenColumns: [], locked: true },
    });
  });

  it("a cascade's DELETE and a SET NULL's UPDATE", () => {
    expect(
      riStatement('DELETE FROM ONLY "public"."order_items" WHERE $1 OPERATOR(pg_catalog.=) "order_id"'),
    ).toMatchObject({
      kind: "DELETE",
      params: 1,
      relation: { relation: "public.order_items", write: "DELETE" },
    });
    expect(
      riStatement(
        'UPDATE ONLY "public"."carts" SET "customer_id" = $2 WHERE $1 OPERATOR(pg_catalog.=) "customer_id"',
      )?.text,
    ).toBe(
      'UPDATE ONLY "public"."carts" SET "customer_id" = NULL WHERE $1 OPERATOR(pg_catalog.=) "customer_id"',
    );
  });

  it("an application's statement is not one", () => {
    expect(riStatement("SELECT $1 FROM orders WHERE id = $2")).toBeNull();
  });
});

describe("withConstantBytes", () => {
  it("sizes the constants so the text is as long as it ran, with its double quotes", () => {
    const out = withConstantBytes("INSERT INTO t VALUES ($1, $2)", 40, 4);
    expect(Buffer.byteLength(out)).toBe(40);
    expect(out.split('"').length - 1).toBe(4);
    expect(out.startsWith("INSERT INTO t VALUES (")).toBe(true);
  });
});
