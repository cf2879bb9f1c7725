/** docs/archive.md's column table is PARQUET_COLUMNS: names, types and notes, in order. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PARQUET_COLUMNS } from "@auditpipe/compact";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

describe("docs/archive.md", () => {
  it("lists every Parquet column with its type and note, in the file's order", () => {
    const text = readFileSync(join(repoRoot(), "docs", "archive.md"), "utf8");
    const start = text.indexOf("<!-- columns:");
    expect(start).toBeGreaterThan(0);
    const rows = text
      .slice(start)
      .split("\n")
      .filter((l) => l.startsWith("| `"))
      .map((l) => l.split(/(?<!\\)\|/).map((c) => c.trim()))
      .map(([, name, type, doc]) => ({
        name: name!.replaceAll("`", ""),
        type: type!.replaceAll("`", ""),
        doc: doc ?? "",
      }));
    const table = rows.slice(0, PARQUET_COLUMNS.length);
    expect(table).toEqual(PARQUET_COLUMNS.map((c) => ({ name: c.name, type: c.type, doc: c.doc })));
  });
});
