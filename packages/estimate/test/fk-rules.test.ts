/**
 * The foreign-key rules the model applies when nested statements are not counted (PostgreSQL's
 * ri_triggers.c), and that it applies none of them when they are counted.
 */
import {
  DEFAULT_LOG_CONTEXT,
  estimate,
  type ForeignKey,
  type StatementLoad,
  type Workload,
} from "@auditpipe/estimate";
import { describe, expect, it } from "vitest";
import { fkChecksOf, fkContext } from "../src/_fk-rules.ts";

const fks: ForeignKey[] = [
  {
    child: "public.items",
    parent: "public.orders",
    columns: ["order_id"],
    parentColumns: ["id"],
    onDelete: "cascade",
  },
  {
    child: "public.notes",
    parent: "public.orders",
    columns: ["order_id"],
    parentColumns: ["id"],
    onDelete: "set null",
  },
  { child: "public.orders", parent: "public.customers", columns: ["customer_id"], parentColumns: ["id"] },
];
const load = (s: Partial<StatementLoad>): StatementLoad => ({
  text: "x",
  callsPerSec: 1,
  kind: "UPDATE",
  relations: [],
  rowsPerCall: 1,
  ...s,
});
const kinds = (s: StatementLoad): string[] =>
  fkChecksOf(s, fks).map((a) => `${a.kind} ${a.table} x${a.perCall}`);

describe("fkChecksOf (modelled)", () => {
  it("a multi-row INSERT checks every row's parent", () => {
    const s = load({
      kind: "INSERT",
      rowsPerCall: 3,
      relations: [{ relation: "public.orders", write: "INSERT" }],
    });
    expect(kinds(s)).toEqual(["check public.customers x3"]);
  });

  it("an UPDATE re-checks only when it sets the key columns", () => {
    const keyed = load({
      relations: [{ relation: "public.orders", write: "UPDATE", writtenColumns: ["customer_id"] }],
    });
    const other = load({
      relations: [{ relation: "public.orders", write: "UPDATE", writtenColumns: ["status"] }],
    });
    expect(kinds(keyed)).toEqual(["check public.customers x1"]);
    expect(kinds(other)).toEqual([]);
  });

  it("deleting a parent runs each child's action: CASCADE deletes, SET NULL updates, SET DEFAULT updates then acts as NO ACTION, NO ACTION looks the parent up again and checks the child, RESTRICT only checks", () => {
    const withDefault: ForeignKey[] = [{ ...fks[1]!, onDelete: "set default" }];
    const gone = load({ kind: "DELETE", relations: [{ relation: "public.orders", write: "DELETE" }] });
    expect(fkChecksOf(gone, withDefault).map((a) => `${a.kind} ${a.table}`)).toEqual([
      "UPDATE public.notes",
      "check public.orders",
      "check public.notes",
    ]);
    const del = load({
      kind: "DELETE",
      rowsPerCall: 2,
      relations: [{ relation: "public.orders", write: "DELETE" }],
    });
    expect(kinds(del)).toEqual(["DELETE public.items x2", "UPDATE public.notes x2"]);
    const cust = load({ kind: "DELETE", relations: [{ relation: "public.customers", write: "DELETE" }] });
    expect(kinds(cust)).toEqual(["check public.customers x1", "check public.orders x1"]);
    const restrict: ForeignKey[] = [{ ...fks[2]!, onDelete: "restrict" }];
    expect(fkChecksOf(cust, restrict).map((a) => `${a.kind} ${a.table}`)).toEqual(["check public.orders"]);
  });

  it("an INSERT that leaves every key column out (no default) sets the key NULL: no check", () => {
    const omitted = load({
      kind: "INSERT",
      relations: [{ relation: "public.orders", write: "INSERT", writtenColumns: ["status"] }],
    });
    expect(kinds(omitted)).toEqual([]);
    const defaulted: ForeignKey[] = [{ ...fks[2]!, columnsHaveDefault: true }];
    expect(fkChecksOf(omitted, defaulted).map((a) => a.table)).toEqual(["public.customers"]);
  });
});

describe("fkContext: what the statements say together", () => {
  const insert = load({
    kind: "INSERT",
    relations: [{ relation: "public.orders", write: "INSERT", writtenColumns: ["customer_id"] }],
  });
  const update = load({
    kind: "UPDATE",
    callsPerSec: 2,
    relations: [{ relation: "public.orders", write: "UPDATE", writtenColumns: ["status"] }],
  });
  const begin = load({ kind: "UTILITY", command: "BEGIN", text: "BEGIN", relations: [], rowsPerCall: 0 });
  const workload = (statements: StatementLoad[]): Workload => ({
    transactionsPerSec: 1,
    statements,
    foreignKeys: fks,
    log: DEFAULT_LOG_CONTEXT,
    notes: [],
  });

  it("in transaction blocks, an UPDATE of a table the workload inserts into re-checks, up to the rows inserted", () => {
    const context = fkContext(workload([begin, insert, update]));
    expect(context.sameTransaction.get("public.orders")).toBe(0.5);
    expect(fkChecksOf(update, fks, context).map((a) => `${a.kind} ${a.table} x${a.perCall}`)).toEqual([
      "check public.customers x0.5",
    ]);
    expect(context.notes.join(" ")).toMatch(/assumed: 50 % of the rows updated in public.orders/);
  });

  it("autocommitted statements never share a transaction; nor does a key every INSERT leaves NULL re-check", () => {
    expect(fkContext(workload([insert, update])).sameTransaction.size).toBe(0);
    const nullKey = load({
      kind: "INSERT",
      relations: [{ relation: "public.orders", write: "INSERT", writtenColumns: ["status"] }],
    });
    const context = fkContext(workload([begin, nullKey, update]));
    expect(context.nullKeys.has(fks[2]!)).toBe(true);
    expect(fkChecksOf(update, fks, context)).toEqual([]);
  });
});

describe("upserts, rows updated twice, deferred keys (the stock workload's shapes)", () => {
  const begin = load({ kind: "UTILITY", command: "BEGIN", text: "BEGIN", relations: [], rowsPerCall: 0 });
  const upsert = load({
    kind: "INSERT",
    relations: [
      {
        relation: "public.orders",
        write: "INSERT",
        writtenColumns: ["customer_id", "status"],
        upsert: { updatedColumns: ["status"] },
      },
    ],
  });
  const update = load({
    relations: [{ relation: "public.orders", write: "UPDATE", writtenColumns: ["status"] }],
  });
  const workload = (statements: StatementLoad[], inserted?: number): Workload => ({
    transactionsPerSec: 1,
    statements,
    foreignKeys: fks,
    log: DEFAULT_LOG_CONTEXT,
    notes: [],
    ...(inserted === undefined ? {} : { tableInsertsPerSec: { "public.orders": inserted } }),
  });

  it("an upsert's rows are inserted as far as pg_stat_user_tables counts inserts; the rest are updates", () => {
    const context = fkContext(workload([upsert], 0.25));
    expect(context.upsertInserted?.get("public.orders")).toBe(0.25);
    expect(fkChecksOf(upsert, fks, context).map((a) => `${a.kind} ${a.table} x${a.perCall}`)).toEqual([
      "check public.customers x0.25",
    ]);
    // Unmeasured: every row inserted, as a plain INSERT's.
    expect(kinds(upsert)).toEqual(["check public.customers x1"]);
  });

  it("in transaction blocks, a table updated by more statements than one: all but the most one updates re-check", () => {
    const context = fkContext(workload([begin, upsert, update], 0));
    // 2 rows updated a second (the upsert's update and the UPDATE), 1 of them written before.
    expect(context.sameTransaction.get("public.orders")).toBe(0.5);
    expect(fkChecksOf(update, fks, context).map((a) => `${a.kind} ${a.table} x${a.perCall}`)).toEqual([
      "check public.customers x0.5",
    ]);
  });

  it("an UPDATE whose rows a search of its own table picks (a worker taking the next job) updates existing rows", () => {
    const insert = load({
      kind: "INSERT",
      relations: [{ relation: "public.orders", write: "INSERT", writtenColumns: ["customer_id"] }],
    });
    const takeNext = load({
      relations: [
        { relation: "public.orders", locked: true, writtenColumns: [] },
        { relation: "public.orders", write: "UPDATE", writtenColumns: ["status"] },
      ],
    });
    const context = fkContext(workload([begin, insert, takeNext]));
    expect(context.sameTransaction.has("public.orders")).toBe(false);
    expect(fkChecksOf(takeNext, fks, context)).toEqual([]);
  });

  it("a DEFERRABLE INITIALLY DEFERRED key is checked at COMMIT, which pgaudit does not log", () => {
    const deferred: ForeignKey[] = fks.map((f) => ({ ...f, deferred: true }));
    const insert = load({ kind: "INSERT", relations: [{ relation: "public.orders", write: "INSERT" }] });
    expect(fkChecksOf(insert, deferred)).toEqual([]);
    const cust = load({ kind: "DELETE", relations: [{ relation: "public.customers", write: "DELETE" }] });
    expect(fkChecksOf(cust, deferred)).toEqual([]);
    // A cascade is an action, not a check: never deferred.
    const del = load({ kind: "DELETE", relations: [{ relation: "public.orders", write: "DELETE" }] });
    expect(fkChecksOf(del, deferred).map((a) => `${a.kind} ${a.table}`)).toEqual([
      "DELETE public.items",
      "UPDATE public.notes",
    ]);
  });
});

describe("estimate with nested statements counted", () => {
  const insert = load({
    text: "INSERT INTO orders (customer_id) VALUES ($1)",
    kind: "INSERT",
    relations: [{ relation: "public.orders", write: "INSERT" }],
  });
  const check = load({
    text: 'SELECT 1 FROM ONLY "public"."customers" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x',
    kind: "SELECT",
    params: 1,
    nested: true,
    relations: [{ relation: "public.customers", columns: ["id"], writtenColumns: [], locked: true }],
  });
  const base: Workload = {
    transactionsPerSec: 1,
    statements: [insert],
    foreignKeys: fks,
    log: DEFAULT_LOG_CONTEXT,
    notes: [],
  };

  it("modelled: the check comes from the foreign key", () => {
    expect(estimate(base, { name: "read", log: ["read"] }).entriesPerSec).toBe(1);
  });

  it("counted: the check comes from its count alone, never twice", () => {
    const counted: Workload = {
      ...base,
      statements: [insert, { ...check, callsPerSec: 2 }],
      nestedStatements: "counted",
    };
    expect(estimate(counted, { name: "read", log: ["read"] }).entriesPerSec).toBe(2);
  });
});

describe("a counted workload through the workload schema (GET /v1/workload, POST /v1/estimates)", () => {
  it("keeps what makes it counted, so its checks are not modelled on top", async () => {
    const { parseWorkload } = await import("@auditpipe/estimate");
    const counted: Workload = {
      transactionsPerSec: 1,
      statements: [
        load({ kind: "INSERT", relations: [{ relation: "public.orders", write: "INSERT" }] }),
        load({
          kind: "SELECT",
          nested: true,
          params: 1,
          relations: [{ relation: "public.customers", locked: true }],
        }),
      ],
      foreignKeys: fks,
      log: DEFAULT_LOG_CONTEXT,
      nestedStatements: "counted",
      notes: [],
    };
    const again = parseWorkload(JSON.parse(JSON.stringify(counted)));
    expect(again.nestedStatements).toBe("counted");
    expect(again.statements[1]!.nested).toBe(true);
    expect(again.foreignKeys[0]!.onDelete).toBe("cascade");
    const read = { name: "read", log: ["read"] };
    expect(estimate(again, read).entriesPerSec).toBe(estimate(counted, read).entriesPerSec);
  });
});

describe("the rows an action reaches fire their own (the tree workload's shapes)", () => {
  // A self-referencing category tree ON DELETE CASCADE, items ON DELETE SET NULL with a second key.
  const tree: ForeignKey[] = [
    {
      child: "public.cat",
      parent: "public.cat",
      columns: ["parent_id"],
      parentColumns: ["id"],
      onDelete: "cascade",
    },
    {
      child: "public.item",
      parent: "public.cat",
      columns: ["cat_id"],
      parentColumns: ["id"],
      onDelete: "set null",
    },
    { child: "public.item", parent: "public.listing", columns: ["sku"], parentColumns: ["sku"] },
  ];
  const begin = load({ kind: "UTILITY", command: "BEGIN", text: "BEGIN", relations: [], rowsPerCall: 0 });
  const insertItems = load({
    kind: "INSERT",
    rowsPerCall: 2,
    relations: [{ relation: "public.item", write: "INSERT", writtenColumns: ["cat_id", "sku"] }],
  });
  const rename = load({
    rowsPerCall: 2,
    relations: [{ relation: "public.item", write: "UPDATE", writtenColumns: ["name"] }],
  });
  const deleteRoot = load({ kind: "DELETE", relations: [{ relation: "public.cat", write: "DELETE" }] });
  // Per transaction: the root and its leaf deleted, both items set NULL by the leaf's action.
  const workload = (deletes: number, updates: number): Workload => ({
    transactionsPerSec: 1,
    statements: [begin, insertItems, rename, deleteRoot],
    foreignKeys: tree,
    log: DEFAULT_LOG_CONTEXT,
    notes: [],
    tableDeletesPerSec: { "public.cat": deletes },
    tableUpdatesPerSec: { "public.item": updates },
  });
  const total = (actions: ReturnType<typeof fkChecksOf>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const a of actions) out[`${a.kind} ${a.table}`] = (out[`${a.kind} ${a.table}`] ?? 0) + a.perCall;
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Number(v.toFixed(3))]));
  };

  it("a cascade's rows run their children's actions, level by level, as often as the statistics say", () => {
    const context = fkContext(workload(2, 4));
    // Two DELETE runs on cat (the root's, the leaf's) reaching one row; two SET NULL runs reaching both items.
    expect(context.actionRows?.DELETE.get("public.cat")).toBe(0.5);
    expect(context.actionRows?.UPDATE.get("public.item")).toBe(1);
    expect(total(fkChecksOf(deleteRoot, tree, context))).toEqual({
      "DELETE public.cat": 2,
      "UPDATE public.item": 2,
      // Rows set NULL that the transaction inserted re-check their other key.
      "check public.listing": 2,
    });
  });

  it("without table statistics, or with no row reached, only the first level", () => {
    const none = fkContext({ ...workload(1, 2), tableDeletesPerSec: undefined });
    expect(none.actionRows).toBeUndefined();
    expect(total(fkChecksOf(deleteRoot, tree, none))).toEqual({
      "DELETE public.cat": 1,
      "UPDATE public.item": 1,
    });
    // The root alone deleted (no leaf), the rename's rows alone updated: the actions reached nothing.
    expect(total(fkChecksOf(deleteRoot, tree, fkContext(workload(1, 2))))).toEqual({
      "DELETE public.cat": 1,
      "UPDATE public.item": 1,
    });
  });
});

describe("a key given by ON UPDATE CASCADE is checked; one set NULL is not (the stores workload's shapes)", () => {
  const keys: ForeignKey[] = [
    {
      child: "public.store",
      parent: "public.region",
      columns: ["code"],
      parentColumns: ["code"],
      onUpdate: "cascade",
    },
  ];
  const rekey = load({
    relations: [{ relation: "public.region", write: "UPDATE", writtenColumns: ["code"] }],
  });
  it("each store row the cascade reached checks its new region", () => {
    const context = fkContext({
      transactionsPerSec: 1,
      statements: [rekey],
      foreignKeys: keys,
      log: DEFAULT_LOG_CONTEXT,
      notes: [],
      tableDeletesPerSec: {},
      tableUpdatesPerSec: { "public.region": 1, "public.store": 3 },
    });
    expect(fkChecksOf(rekey, keys, context).map((a) => `${a.kind} ${a.table} x${a.perCall}`)).toEqual([
      "UPDATE public.store x1",
      "check public.region x3",
    ]);
  });
});
