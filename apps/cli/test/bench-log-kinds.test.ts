/**
 * bench counts a run's pgAudit entries by kind — MISC, nested (a substatement), the statements' —
 * because a line's cost to the backends differs by kind (docs/estimator.md, "Overhead proof").
 * Checked on logs written by PostgreSQL + pgaudit (`pgaudit.log = 'all'`, functions and foreign
 * keys; `read, write` with log_statement_once), against csv-parse and the payload's own CSV fields.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { countLogRange } from "../src/bench/log-range.ts";

/** What the fixture holds, by the payload's fields: nested (a substatement, or a foreign-key check's query), then MISC. */
function kindsOf(log: Buffer): { entries: number; misc: number; nested: number; checksAsFirst: number } {
  const expected = { entries: 0, misc: 0, nested: 0, checksAsFirst: 0 };
  for (const row of parse(log, { relax_column_count: true }) as string[][]) {
    const message = row[13] ?? "";
    if (!message.startsWith("AUDIT: ")) continue;
    expected.entries++;
    const [, , substatement, klass, , , , statement] = parse(message.slice("AUDIT: ".length), {
      relax_column_count: true,
    })[0] as string[];
    const check = /^SELECT 1 FROM (ONLY )?\S+ x WHERE .* OPERATOR\(pg_catalog\.=\) \$1/.test(statement ?? "");
    if (check && Number(substatement) === 1) expected.checksAsFirst++;
    if (Number(substatement) > 1 || check) expected.nested++;
    else if (klass === "MISC") expected.misc++;
  }
  return expected;
}

describe("bench's log range by kind of entry", () => {
  it.each([
    ["session-all", "a substatement id above 1"],
    ["read-write-once", "a foreign-key check's query at substatement 1 (its INSERT not logged)"],
  ])("counts MISC and nested entries in %s (nested: %s)", async (fixture) => {
    const log = gunzipSync(readFileSync(join(repoRoot(), `fixtures/cases/${fixture}/postgresql.csv.gz`)));
    const { checksAsFirst, ...expected } = kindsOf(log);
    expect(expected.nested).toBeGreaterThan(0);
    // pgaudit numbers substatements as it logs them: where the statement that fired the checks
    // was not logged, the first check is substatement 1, and only its text says it is nested.
    if (fixture === "read-write-once") expect(checksAsFirst).toBeGreaterThan(0);
    else expect(expected.misc).toBeGreaterThan(0);
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
