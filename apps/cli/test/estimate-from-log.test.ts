/**
 * `estimate --log` on the committed fixtures (real pgaudit logs): globs resolve as for analyze,
 * and `--audit` answers what each configuration would have written of the observed entries,
 * checked against expected.json (the fixtures' independent oracle); what the log cannot answer
 * is said, not filled in.
 */
import { join } from "node:path";
import { readExpected } from "@auditpipe/fixtures";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const cases = join(repoRoot(), "fixtures", "cases");

async function fromLog(caseName: string, pattern: string, configs: string[]) {
  const out = await runCli([
    "estimate",
    "--log",
    join(cases, caseName, pattern),
    ...configs.flatMap((c) => ["--audit", c]),
    "--json",
  ]);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

describe("estimate --log FILE... --audit NAME...", () => {
  it("accepts a glob and answers what `write` would have written of an `all` log, entry for entry", async () => {
    const expected = readExpected(join(cases, "session-all")).formats["postgresql.csv.gz"]!;
    const body = await fromLog("session-all", "postgresql.csv*", ["write", "read"]);
    expect(body.observed.entries).toBe(expected.entries);
    const [write, read] = body.fromLog;
    expect(write).toMatchObject({
      config: "write",
      derivable: true,
      lowerBound: false,
      entries: expected.byClass.WRITE!.entries,
      bytes: expected.byClass.WRITE!.bytes,
    });
    expect(read.entries).toBe(expected.byClass.READ!.entries);
    expect(read.bytes).toBe(expected.byClass.READ!.bytes);
  });

  it("keeps SET/RESET (MISC_SET, printed as MISC) under `misc`, which includes misc_set, and leaves them out under `misc, -misc_set`", async () => {
    // pgaudit 1.7's check_pgaudit_log: misc is LOG_MISC | LOG_MISC_SET (log-classes.test.ts checks it on a real server).
    const expected = readExpected(join(cases, "session-all")).formats["postgresql.json.gz"]!;
    const body = await fromLog("session-all", "*.json.gz", ["misc", "misc_set", "misc,-misc_set"]);
    const [misc, miscSet, miscOnly] = body.fromLog;
    const sets = ["SET", "RESET"].map((c) => expected.byCommand[c] ?? { entries: 0, bytes: 0 });
    const setEntries = sets.reduce((n, s) => n + s.entries, 0);
    expect(setEntries).toBeGreaterThan(0);
    expect(misc.entries).toBe(expected.byClass.MISC!.entries);
    expect(miscSet.entries).toBe(setEntries);
    expect(miscOnly.entries).toBe(expected.byClass.MISC!.entries - setEntries);
  });

  it("says which configurations the log cannot answer for, and which answers are lower bounds", async () => {
    // session-all was written with log_statement_once off; ddl,role turns it on.
    const all = await fromLog("session-all", "postgresql.csv.gz", ["ddl,role"]);
    expect(all.fromLog[0]).toMatchObject({ config: "ddl,role", derivable: false });
    expect(all.fromLog[0].reasons.join(" ")).toMatch(/pgaudit\.log_statement_once off; ddl,role sets it on/);

    // read-write-once logged READ and WRITE only: `all` can only be a lower bound.
    const rw = await fromLog("read-write-once", "postgresql.csv.gz", ["all"]);
    expect(rw.fromLog[0]).toMatchObject({ derivable: true, lowerBound: true, entries: rw.observed.entries });
    expect(rw.fromLog[0].reasons.join(" ")).toMatch(
      /class FUNCTION, ROLE, DDL, MISC, MISC_SET does not appear/,
    );

    // object-only holds OBJECT entries only: a session configuration keeps none of them.
    const obj = await fromLog("object-only", "postgresql.csv.gz", ["read"]);
    expect(obj.fromLog[0].entries).toBe(0);
    expect(obj.fromLog[0].reasons.join(" ")).toMatch(/510 OBJECT entries \(pgaudit\.role\) are not counted/);
  });

  it("prints a table, says why 0.7 s of log projects no GB/day, and names --log on a bad pattern", async () => {
    const out = await runCli([
      "estimate",
      "--log",
      join(cases, "session-all", "postgresql.csv*"),
      "--audit",
      "write",
      "--audit",
      "ddl,role",
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^write\s+511\s+167,772\s/m);
    expect(out.stdout).toMatch(/^ddl,role\s+cannot be derived from this log/m);
    expect(out.stdout).toMatch(
      /No GB\/day or \$\/month: the entries span 0\.\d+ s of log time; a projection needs at least 60 s/,
    );
    const bad = await runCli(["estimate", "--log", join(cases, "nope-*.csv")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/estimate --log: no file matches .*nope-\*\.csv/);
  });
});
