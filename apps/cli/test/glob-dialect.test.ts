/**
 * `analyze FILE...` and `run --pattern` read the same glob dialect (picomatch's, through
 * @auditpipe/tail's glob.ts): one pattern with a negated class and braces picks the same files in
 * both. Before, run had a hand-written glob of its own whose `*` took dotfiles (and which knew no
 * `**`, `{1..3}`, `[[:digit:]]` or extglobs) while analyze had tinyglobby's. The files hold real
 * csvlog captures from fixtures/; the dialect itself is pinned, pattern by pattern, in
 * packages/tail/test/glob.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { listCases, readExpected, readFixture } from "@auditpipe/fixtures";
import { repoRoot, shippedRecords, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnSidecar } from "./_sidecar.ts";

/** Names in the log directory; a `.log` name holding csvlog is still read as csvlog. */
const NAMES = [
  "postgresql-1.csv",
  "postgresql-2.log",
  "postgresql-x.csv",
  "audit-3.csv",
  ".postgresql-4.csv",
];
const PATTERN = "*-[!a-z].{csv,log}";
const SELECTED = ["audit-3.csv", "postgresql-1.csv", "postgresql-2.log"];

let work: string;
let logs: string;
const entriesIn = new Map<string, number>();
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "auditpipe-glob-dialect-"));
  logs = join(work, "logs");
  mkdirSync(logs);
  const casesDir = join(repoRoot(), "fixtures", "cases");
  const cases = listCases(casesDir);
  expect(cases.length).toBeGreaterThanOrEqual(NAMES.length);
  const past = Date.now() / 1000 - 3600;
  NAMES.forEach((name, i) => {
    const caseDir = join(casesDir, cases[i]!);
    writeFileSync(join(logs, name), readFixture(caseDir, "postgresql.csv.gz"));
    entriesIn.set(name, readExpected(caseDir).formats["postgresql.csv.gz"]!.entries);
    // The files not selected are older: run reads in mtime order, so it would have shipped one it
    // wrongly took before it had shipped all the selected ones.
    if (!SELECTED.includes(name)) utimesSync(join(logs, name), past, past);
  });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const selectedEntries = (): number => SELECTED.reduce((sum, n) => sum + entriesIn.get(n)!, 0);

describe(`the glob ${PATTERN}`, () => {
  it("analyze reads exactly the selected files", async () => {
    const { code, stdout, stderr } = await runCli(["analyze", "--json", join(logs, PATTERN)]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(JSON.parse(stdout).entries).toBe(selectedEntries());
    // ... and no other choice of files adds up to that many entries.
    const sums = Array.from({ length: 1 << NAMES.length }, (_, mask) =>
      NAMES.reduce((sum, n, i) => sum + (mask & (1 << i) ? entriesIn.get(n)! : 0), 0),
    );
    expect(sums.filter((s) => s === selectedEntries())).toHaveLength(1);
  });

  it("run --pattern follows exactly the selected files", async () => {
    const sink = join(work, "sink");
    const sidecar = spawnSidecar([
      "--log-dir",
      logs,
      "--format",
      "csvlog",
      "--pattern",
      PATTERN,
      "--sink",
      sink,
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--batch-max-age-ms",
      "100",
    ]);
    try {
      await waitUntil(
        () => shippedRecords(sink).length >= selectedEntries() || sidecar.child.exitCode !== null,
        60_000,
        () => `run did not ship the selected files:\n${sidecar.stderr().slice(-2000)}`,
        100,
      );
    } finally {
      sidecar.child.kill("SIGTERM");
    }
    expect(await sidecar.exited).toEqual({ code: 0, signal: null });
    const files = new Set(
      shippedRecords<{ source: { file: string } }>(sink).map((r) => basename(r.source.file)),
    );
    expect([...files].sort()).toEqual(SELECTED);
    expect(shippedRecords(sink)).toHaveLength(selectedEntries());
  });
});
