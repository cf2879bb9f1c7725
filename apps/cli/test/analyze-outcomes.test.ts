/**
 * `analyze` reports what became of every entry on the real outcome fixtures (fixtures/outcomes/:
 * a real PostgreSQL 15 + pgaudit 1.7 running a workload whose truth is written beside each
 * statement), in every format: the counts equal the truth's (expected.json, computed by the
 * fixtures' oracle with csv-parse, not by the join), and so do the attempts.
 */
import { join } from "node:path";
import { listCases, readExpected } from "@auditpipe/fixtures";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const DIR = join(import.meta.dirname, "..", "..", "..", "fixtures", "outcomes");
const rows = listCases(DIR).flatMap((name) => {
  const expected = readExpected(join(DIR, name));
  return Object.keys(expected.formats).map((file) => ({ name, file, expected }));
});

describe("analyze: outcomes and attempts on real logs", () => {
  it("has every outcome case and format to check", () => {
    expect(rows.length).toBe(3 * 6);
  });

  it.each(rows)("$name/$file: outcomes and attempts equal the truth", async ({ name, file, expected }) => {
    const want = expected.formats[file]!;
    const { code, stdout, stderr } = await runCli([
      "analyze",
      "--json",
      "--prefix",
      expected.settings.log_line_prefix,
      "--pgaudit-log",
      String(expected.settings["pgaudit.log"]),
      join(DIR, name, file),
    ]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const got = JSON.parse(stdout);
    expect(got.outcomes).toEqual(want.outcomes);
    expect(got.attempts.count).toBe(want.attempts);
    const outcomes = got.outcomes as Record<string, number>;
    expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(got.entries);
  });

  it("prints outcomes, attempts and failures by SQLSTATE, and says which setting would tell more", async () => {
    const dir = join(DIR, "outcomes-no-misc");
    const { code, stdout } = await runCli([
      "analyze",
      "--prefix",
      readExpected(dir).settings.log_line_prefix,
      join(dir, "postgresql.log.gz"),
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^outcomes {9}0 succeeded, \d+ failed, 0 rolled back, \d+ unknown$/m);
    expect(stdout).toMatch(/^ {2}unknown {8}boundaries-not-logged ×\d+/m);
    expect(stdout).toMatch(/^attempts {9}\d+ refused statements and failed logins: 42501 ×2/m);
    expect(stdout).toMatch(/^failed: SQLSTATE +entries/m);
    expect(stdout).toContain("pgaudit.log with misc:");
  });

  it("says what the prefix lacks for stderr without %v, %e and %c", async () => {
    const dir = join(DIR, "outcomes-rows-plain-prefix");
    const { stdout } = await runCli([
      "analyze",
      "--json",
      "--prefix",
      readExpected(dir).settings.log_line_prefix,
      "--pgaudit-log",
      "all",
      join(dir, "postgresql.log.gz"),
    ]);
    const hints = (JSON.parse(stdout).outcomeHints as { setting: string }[]).map((h) => h.setting);
    expect(hints).toEqual([
      "%v in log_line_prefix",
      "%e in log_line_prefix",
      "%c in log_line_prefix",
      "pgaudit.log_rows = off",
    ]);
  });

  it("rejects a --pgaudit-log that is not one, naming the flag", async () => {
    const { code, stderr } = await runCli([
      "analyze",
      "--pgaudit-log",
      "write,nonsense",
      join(DIR, "outcomes", "postgresql.csv.gz"),
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain("analyze: --pgaudit-log: pgaudit.log: unknown class");
  });
});
