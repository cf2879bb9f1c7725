/**
 * The Athena and Trino DDL docs/archive.md ships parse in their dialects (sqlglot, from PyPI; no
 * Athena or Trino here) and declare every Parquet column, named as the file names it, with the
 * partition keys the layout uses.
 */
import { PARQUET_COLUMNS } from "@auditpipe/compact";
import { runPython } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { docsSql } from "./_docs-sql.ts";

const PARSER = new URL("./_ddl_parse.py", import.meta.url).pathname;

async function parse(dialect: string, sql: string) {
  return JSON.parse(await runPython(PARSER, [dialect], { input: sql })) as {
    table: string;
    columns: Record<string, string>;
    partitioned: string[];
  };
}

describe("the DDL we ship for other engines", () => {
  for (const [dialect, name] of [
    ["athena", "athena"],
    ["trino", "trino"],
    ["spark", "spark"],
  ] as const) {
    it(`${name}: parses, declares every Parquet column and partitions by dt, hour, host`, async () => {
      const ddl = await parse(dialect, docsSql(name));
      const columns = Object.keys(ddl.columns).map((c) => c.toLowerCase());
      for (const c of PARQUET_COLUMNS) expect(columns, `${name} lacks ${c.name}`).toContain(c.name);
      expect(ddl.partitioned.map((p) => p.toLowerCase())).toEqual(["dt", "hour", "host"]);
      expect(ddl.columns.ts?.toLowerCase()).toMatch(/^timestamp/);
      expect(ddl.columns.parameter?.toLowerCase()).toMatch(/^array/);
    });
  }

  it("a typo in the DDL fails to parse (the parser is not lenient)", async () => {
    await expect(
      parse("trino", docsSql("trino").replace("WITH (\n  format", "WITH (\n  format =")),
    ).rejects.toThrow();
  });
});
