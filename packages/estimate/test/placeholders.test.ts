import { describe, expect, it } from "vitest";
import { placeholderColumns } from "../src/_placeholders.ts";
import type { RelationLookup } from "../src/_sql.ts";

const TABLES: Record<string, string[]> = {
  docs: ["id", "owner", "body", "note"],
  owners: ["id", "name"],
};
const lookup: RelationLookup = {
  find: (schema, name) =>
    (schema === null || schema === "public") && TABLES[name]
      ? { schema: "public", name, columns: TABLES[name] }
      : undefined,
};
const columns = (sql: string): Record<string, string> =>
  Object.fromEntries([...placeholderColumns(sql, lookup)].map(([p, c]) => [p, `${c.relation}.${c.column}`]));

describe("placeholderColumns", () => {
  it("maps an INSERT's VALUES items to its column list, row after row, casts and all", () => {
    expect(columns("INSERT INTO docs (owner, body) VALUES ($1, $2::jsonb), ($3, $4) RETURNING id")).toEqual({
      $1: "public.docs.owner",
      $2: "public.docs.body",
      $3: "public.docs.owner",
      $4: "public.docs.body",
    });
  });

  it("takes the table's columns in order without a list, and leaves an expression's $n alone", () => {
    expect(columns("INSERT INTO docs VALUES ($1, $2, upper($3), $4)")).toEqual({
      $1: "public.docs.id",
      $2: "public.docs.owner",
      $4: "public.docs.note",
    });
  });

  it("maps SET and comparisons, qualified through aliases, either side of =", () => {
    expect(
      columns(
        "UPDATE docs d SET body = $1, note = $2 FROM owners o WHERE o.id = d.owner AND o.name != $3 AND $4 = d.id LIMIT $5",
      ),
    ).toEqual({
      $1: "public.docs.body",
      $2: "public.docs.note",
      $3: "public.owners.name",
      $4: "public.docs.id",
    });
  });

  it("maps each $n of an IN list to its column, but not an expression in one", () => {
    expect(
      columns("SELECT body FROM docs d WHERE d.id IN ($1, $2::bigint, $3 + $4) AND owner IN ($5)"),
    ).toEqual({
      $1: "public.docs.id",
      $2: "public.docs.id",
      $5: "public.docs.owner",
    });
  });

  it("maps nothing it cannot tell: an unknown column, a LIMIT, a function's argument", () => {
    expect(columns("SELECT id FROM docs WHERE nope = $1 AND body @> $2 ORDER BY id LIMIT $3")).toEqual({});
  });
});
