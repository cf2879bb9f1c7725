/**
 * bench counts a run's pgAudit entries by kind — MISC, nested (a substatement), the statements' —
 * because a line's cost to the backends differs by kind (docs/estimator.md, "Overhead proof").
 * Checked on a log written by PostgreSQL + pgaudit (`pgaudit.log = 'all'`, functions and foreign
 * keys), against csv-parse and the payload's own CSV fields.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { countLogRange } from "../src/bench/log-range.ts";

describe("bench's log range by kind of entry", () => {
  it("counts MISC and nested entries as the payload's class and substatement id say", async () => {
    const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures/cases/session-all/postgresql.csv.gz")));
    const expected = { entries: 0, misc: 0, nested: 0 };
    for (const row of parse(log, { relax_column_count: true }) as string[][]) {
      const message = row[13] ?? "";
      if (!message.startsWith("AUDIT: ")) continue;
      expected.entries++;
      const [, , substatement, klass] = parse(message.slice("AUDIT: ".length), {
        relax_column_count: true,
      })[0] as string[];
      if (Number(substatement) > 1) expected.nested++;
      else if (klass === "MISC") expected.misc++;
    }
    expect(expected.nested).toBeGreaterThan(0);
    expect(expected.misc).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-bench-kinds-"));
    try {
      const path = join(dir, "postgresql.csv");
      writeFileSync(path, log);
      const counted = await countLogRange(
        { path, offset: 0 },
        { path, offset: statSync(path).size },
        "csvlog",
        undefined,
      );
      expect(counted.malformed).toBe(0);
      expect({ entries: counted.auditEntries, ...counted.auditKinds }).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
