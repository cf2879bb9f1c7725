import { describe, expect, it } from "vitest";
import type { Catalog } from "../src/_catalog.ts";
import { catalogLookup } from "../src/_catalog.ts";
import { bindParameterCount, type UnsizedValues } from "../src/_snapshot-rates.ts";
import { applyValueSizes, columnKey, columnsToSize } from "../src/_value-sizes.ts";
import type { StatementLoad } from "../src/types.ts";

const catalog: Catalog = {
  tables: [
    {
      schema: "public",
      name: "docs",
      qualified: "public.docs",
      kind: "r",
      owner: "postgres",
      comment: null,
      partitionOf: null,
      rowEstimate: 1000,
      columns: [
        { name: "id", type: "bigint", comment: null },
        { name: "owner", type: "integer", comment: null },
        { name: "body", type: "jsonb", comment: null },
      ],
    },
  ],
  foreignKeys: [],
};
const lookup = catalogLookup(catalog);
const load = (text: string, params?: number): StatementLoad => ({
  text,
  callsPerSec: 1,
  kind: "INSERT",
  relations: [],
  rowsPerCall: 1,
  ...(params ? { params } : {}),
});
const body = { bytes: 1300, quotes: 8, singleQuotes: 1, quoted: 1 };
const owner = { bytes: 3, quotes: 0, singleQuotes: 0, quoted: 0 };
const sizes = new Map([
  [columnKey("public.docs", "body"), body],
  [columnKey("public.docs", "owner"), owner],
]);

describe("values pg_stat_activity cannot show, sized from their columns", () => {
  it("lists each column once, for every statement that needs it", () => {
    const unsized: UnsizedValues[] = [
      { load: load("INSERT INTO docs (owner, body) VALUES ($1, $2)"), values: "literals" },
      { load: load("UPDATE docs SET body = $1 WHERE id = $2", 2), values: "parameters" },
    ];
    expect(
      columnsToSize(unsized, lookup)
        .map((c) => c.column)
        .sort(),
    ).toEqual(["body", "id", "owner"]);
  });

  it("sizes a cut text's constants: quoted where the type is not a number, single quotes doubled", () => {
    const s = load("INSERT INTO docs (owner, body) VALUES ($1, $2) RETURNING id");
    const { unsized } = applyValueSizes([{ load: s, values: "literals" }], sizes, catalog, lookup, 4);
    expect(unsized).toBe(0);
    const text = Buffer.byteLength("INSERT INTO docs (owner, body) VALUES (, ) RETURNING id");
    expect(s.observed).toEqual({ bytes: text + 3 + (1300 + 2 + 1), quotes: 8 });
  });

  it("sizes bind parameters $1…$k in order, leaving the constants pg_stat_statements numbered after them", () => {
    // $1, $2 are bound; $3 is a constant pg_stat_statements replaced (the running text has it).
    const s = load("UPDATE docs SET body = $2, note = $3 WHERE id = $1 AND owner = $2", 2);
    applyValueSizes([{ load: s, values: "parameters" }], sizes, catalog, lookup, 4);
    expect(s.paramValues).toEqual([
      { bytes: 4, quotes: 0, quoted: 0 }, // id: no size measured, the constant length
      { bytes: 1300, quotes: 8, quoted: 1 },
    ]);
  });

  it("sizes the constants after the bind parameters as the text has them written", () => {
    // An ORM's multi-row INSERT: owner bound, the constant body written in the text ($2 to pg_stat_statements).
    const s = load("INSERT INTO docs (owner, body) VALUES ($1, $2)", 1);
    applyValueSizes([{ load: s, values: "parameters" }], sizes, catalog, lookup, 4);
    expect(s.paramValues).toEqual([{ bytes: 3, quotes: 0, quoted: 0 }]);
    const text = Buffer.byteLength("INSERT INTO docs (owner, body) VALUES ($1, )");
    expect(s.observed).toEqual({ bytes: text + 1300 + 2 + 1, quotes: 8 });
  });

  it("pg_stat_statements' bind parameters are $1…$k in the text's order, its constants k + 1 on", () => {
    expect(bindParameterCount("INSERT INTO h (tid, bid, aid) VALUES ($1, $151, $2), ($3, $152, $4)")).toBe(
      150,
    );
    expect(bindParameterCount("SELECT $1, $2, $1 FROM t WHERE a = $3")).toBe(3);
    expect(bindParameterCount("SELECT $2 FROM t WHERE a = $1")).toBe(1);
    expect(bindParameterCount("SELECT 1")).toBe(0);
  });

  it("counts a statement none of whose values it could size", () => {
    const s = load("SELECT * FROM docs WHERE body @> $1", 1);
    expect(applyValueSizes([{ load: s, values: "parameters" }], sizes, catalog, lookup, 4).unsized).toBe(1);
    expect(s.paramValues).toEqual([{ bytes: 4, quotes: 0, quoted: 0 }]);
  });
});
