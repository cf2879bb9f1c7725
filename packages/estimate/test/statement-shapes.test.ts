import { describe, expect, it } from "vitest";
import { plannedWorkers } from "../src/_snapshot-rates.ts";
import { analyzeStatement, type RelationLookup, utilityQuery } from "../src/_sql.ts";

const TABLES: Record<string, string[]> = { docs: ["id", "owner", "body", "note"] };
const lookup: RelationLookup = {
  find: (schema, name) =>
    (schema === null || schema === "public") && TABLES[name]
      ? { schema: "public", name, columns: TABLES[name] }
      : undefined,
};

describe("statement shapes a probe of an ETL workload found (PostgreSQL 15 + pgaudit 1.7, the proof's etl)", () => {
  it("finds the query a utility runs through the executor, and none where there is none", () => {
    expect(
      utilityQuery(
        "CREATE TEMP TABLE p ON COMMIT DROP AS SELECT owner, count(*) AS n FROM b GROUP BY owner",
        "CREATE TABLE AS",
      ),
    ).toBe("SELECT owner, count(*) AS n FROM b GROUP BY owner");
    expect(
      utilityQuery(
        "CREATE MATERIALIZED VIEW m AS SELECT * FROM docs WITH NO DATA",
        "CREATE MATERIALIZED VIEW",
      ),
    ).toBe("SELECT * FROM docs");
    expect(utilityQuery("DECLARE c CURSOR WITH HOLD FOR SELECT id FROM docs", "DECLARE CURSOR")).toBe(
      "SELECT id FROM docs",
    );
    expect(utilityQuery("COPY (SELECT id FROM docs WHERE owner = $1) TO STDOUT", "COPY")).toBe(
      "SELECT id FROM docs WHERE owner = $1",
    );
    expect(utilityQuery("COPY docs TO STDOUT", "COPY")).toBeUndefined();
    expect(utilityQuery("CREATE TABLE t (id int)", "CREATE TABLE")).toBeUndefined();
  });

  it("gives CREATE TABLE AS its query's relations, a temporary one too (logged as a READ)", () => {
    const shape = analyzeStatement(
      "CREATE TABLE t AS SELECT id FROM docs JOIN batch b ON b.owner = docs.owner",
      lookup,
    );
    expect(shape.queryRelations?.map((r) => r.relation)).toEqual(["public.docs", "pg_temp_9.batch"]);
  });

  it("takes a query in parentheses for a SELECT (an ORM's set operation), leading comments too", () => {
    const union = analyzeStatement(
      "((SELECT id FROM docs WHERE owner = $1) UNION (SELECT id FROM docs)) LIMIT $2",
      lookup,
    );
    expect([union.kind, union.command]).toEqual(["SELECT", "SELECT"]);
    expect(union.relations.map((r) => r.relation)).toEqual(["public.docs", "public.docs"]);
    const joined = analyzeStatement(
      "SELECT d.id FROM (docs d JOIN docs e ON e.owner = d.id) JOIN docs f ON f.id = e.id",
      lookup,
    );
    expect(joined.relations.map((r) => r.relation)).toEqual(["public.docs", "public.docs", "public.docs"]);
    const [multi] = analyzeStatement(
      "UPDATE docs SET (note, body) = ($1, $2) WHERE id = $3",
      lookup,
    ).relations;
    expect([multi?.columns, multi?.writtenColumns]).toEqual([["id"], ["note", "body"]]);
    const commented = analyzeStatement(
      "/* controller='docs',traceparent='00-4bf9' */ UPDATE docs SET note = $1",
      lookup,
    );
    expect(commented.kind).toBe("UPDATE");
  });

  it("takes a FROM name the catalog lacks for a temporary table, but not a WITH query or a function", () => {
    const shape = analyzeStatement(
      "WITH w AS (SELECT 1 AS owner) SELECT * FROM docs, picked p, w, generate_series(1, 3) g WHERE p.owner = w.owner",
      lookup,
    );
    expect(shape.relations.map((r) => r.relation)).toEqual(["public.docs", "pg_temp_9.picked"]);
  });

  it("reads a subquery's table for the columns the subquery names, not the whole statement's", () => {
    const shape = analyzeStatement(
      "UPDATE docs SET note = $1 WHERE docs.id IN (SELECT id FROM docs WHERE owner = $2 LIMIT $3)",
      lookup,
    );
    expect(shape.relations[1]).toMatchObject({ relation: "public.docs", columns: ["id", "owner"] });
  });
});

describe("parallel workers a plan launches (EXPLAIN (FORMAT JSON) of a generic plan)", () => {
  it("adds every Gather's and Gather Merge's planned workers, nested ones too", () => {
    const plan = [
      {
        Plan: {
          "Node Type": "Aggregate",
          Plans: [
            { "Node Type": "Gather", "Workers Planned": 2, Plans: [{ "Node Type": "Seq Scan" }] },
            { "Node Type": "Gather Merge", "Workers Planned": 1, Plans: [] },
          ],
        },
      },
    ];
    expect(plannedWorkers(plan)).toBe(3);
    expect(plannedWorkers([{ Plan: { "Node Type": "Index Scan" } }])).toBe(0);
  });
});
