/**
 * User functions a write calls without naming them, on a real PostgreSQL 15 + pgaudit 1.7: a
 * CHECK constraint's, a column default's, a generated column's, an index expression's and a
 * domain CHECK's, one table each, and an extension's (uuid-ossp's uuid_generate_v4, a C function
 * in public) as a default. For each INSERT, UPDATE, DELETE and SELECT shape — rows written or
 * none — the FUNCTION entries pgaudit writes are the ones the catalog and `implicitFunctions`
 * predict, and the catalog calls the PL/pgSQL bodies of simple expressions statement-free.
 */
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Catalog, catalogLookup, readCatalog } from "../src/_catalog.ts";
import { analyzeStatement } from "../src/_sql.ts";

let pg: PostgresCluster;
let catalog: Catalog;

const SCHEMA = `CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE FUNCTION fchk(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN $1 > 0; END';
CREATE FUNCTION fdom(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN $1 > 0; END';
CREATE FUNCTION fdef() RETURNS int LANGUAGE plpgsql AS 'BEGIN RETURN 7; END';
CREATE FUNCTION fgen(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN $1 * 2; END';
CREATE FUNCTION fidx(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN $1 * 3; END';
CREATE FUNCTION counts() RETURNS bigint LANGUAGE plpgsql AS 'BEGIN RETURN (SELECT count(*) FROM c1); END';
CREATE DOMAIN posint AS int CHECK (fdom(VALUE));
CREATE TABLE c1 (id int PRIMARY KEY, v int CHECK (fchk(v)), w int);
CREATE TABLE c2 (id int PRIMARY KEY, v int, d int DEFAULT fdef());
CREATE TABLE c3 (id int PRIMARY KEY, v int, w int, g int GENERATED ALWAYS AS (fgen(v)) STORED);
CREATE TABLE c4 (id int PRIMARY KEY, v int, w int); CREATE INDEX ON c4 (fidx(v));
CREATE TABLE c5 (id int PRIMARY KEY, v posint, w int);
CREATE TABLE c6 (id int PRIMARY KEY, v int, u uuid DEFAULT uuid_generate_v4());
INSERT INTO c1 SELECT g, g, g FROM generate_series(1, 10) g;
INSERT INTO c2 (id, v) SELECT g, g FROM generate_series(1, 10) g;
INSERT INTO c3 (id, v, w) SELECT g, g, g FROM generate_series(1, 10) g;
INSERT INTO c4 SELECT g, g, g FROM generate_series(1, 10) g;
INSERT INTO c5 SELECT g, g, g FROM generate_series(1, 10) g;
INSERT INTO c6 (id, v) SELECT g, g FROM generate_series(1, 10) g;`;

beforeAll(async () => {
  pg = await startPostgres({ pgaudit: { log: "function", log_client: true, log_level: "notice" } });
  await pg.query(SCHEMA);
  const c = await pg.connect();
  try {
    catalog = await readCatalog(c);
  } finally {
    await c.end();
  }
});

afterAll(async () => {
  await pg?.stop();
});

/** Each statement shape over every table, and the rows it writes (the tables hold ids 1-10). */
const SHAPES: [string, number][] = [
  ["INSERT INTO {T} (id, v) VALUES (100, 1)", 1],
  ["INSERT INTO {T} (id, v) VALUES (100, 1), (101, 2)", 2],
  ["INSERT INTO {T} (id, v) SELECT 100, 1 WHERE false", 0],
  ["INSERT INTO {T} VALUES (100, 1)", 1],
  ["INSERT INTO {T} (id, v) VALUES (100, 1) ON CONFLICT (id) DO UPDATE SET v = 2", 1],
  ["UPDATE {T} SET v = 5 WHERE id = 1", 1],
  ["UPDATE {T} SET v = 5 WHERE id IN (1, 2)", 2],
  ["UPDATE {T} SET v = 5 WHERE id = -1", 0],
  ["UPDATE {T} SET id = id WHERE id = 1", 1],
  ["DELETE FROM {T} WHERE id = 1", 1],
  ["SELECT * FROM {T} WHERE id = 1", 0],
];

describe("functions a write calls without naming them", () => {
  it("reads where each table calls which function", () => {
    const calls = Object.fromEntries(catalog.tables.map((t) => [t.name, t.implicitCalls ?? []]));
    expect(calls.c1).toEqual([{ function: "public.fchk", on: "check", columns: [] }]);
    expect(calls.c2).toEqual([{ function: "public.fdef", on: "default", columns: ["d"] }]);
    expect(calls.c3).toEqual([{ function: "public.fgen", on: "generated", columns: ["v"] }]);
    expect(calls.c4).toEqual([{ function: "public.fidx", on: "index", columns: ["v"] }]);
    expect(calls.c5).toEqual([{ function: "public.fdom", on: "domain", columns: ["v"] }]);
    expect(calls.c6).toEqual([{ function: "public.uuid_generate_v4", on: "default", columns: ["u"] }]);
    // Simple expressions and C run no statement; a body with a query does.
    expect(catalog.statementFree).toEqual(
      expect.arrayContaining(["public.fchk", "public.fdef", "public.uuid_generate_v4"]),
    );
    expect(catalog.statementFree).not.toContain("public.counts");
  });

  for (const table of ["c1", "c2", "c3", "c4", "c5", "c6"])
    it(`${table}: the FUNCTION entries of each statement are the predicted ones`, async () => {
      const lookup = catalogLookup(catalog);
      const c = await pg.connect();
      const logged: string[] = [];
      c.on("notice", (n) => {
        if (n.message?.startsWith("AUDIT: SESSION,")) logged.push(n.message.split(",")[6]!);
      });
      try {
        const seen: string[] = [];
        const predicted: string[] = [];
        for (const [shape, rows] of SHAPES) {
          const sql = shape.replace("{T}", table);
          logged.length = 0;
          await c.query("BEGIN");
          await c.query(sql);
          await c.query("ROLLBACK"); // a round trip: the statement's notices are in
          seen.push(`${sql}: ${logged.join(" ")}`);
          const s = analyzeStatement(sql, lookup);
          const implicit = (s.implicitFunctions ?? []).filter((f) => !f.needsRows || rows > 0);
          predicted.push(`${sql}: ${[...s.functions, ...implicit.map((f) => f.name)].join(" ")}`);
        }
        expect(seen).toEqual(predicted);
      } finally {
        await c.end();
      }
    });
});
