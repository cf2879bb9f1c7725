/**
 * One glob dialect (picomatch's) for `run --pattern` and `analyze FILE...`: the same table of
 * patterns goes through globMatcher (names), expandGlob (what analyze reads) and FileSource's
 * discovery (what run follows), over files holding real csvlog captures from fixtures/.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { listCases, readExpected, readFixture } from "@auditpipe/fixtures";
import type { Batch, Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { expandGlob, globMatcher, isGlob } from "@auditpipe/tail/glob";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The log directory's files; each holds a different capture (distinct first lines, so distinct files to FileSource). */
const NAMES = ["audit.csv", "postgresql-1.csv", "postgresql-2.csv", "postgresql-x.csv", ".postgresql-3.csv"];

/** Pattern → the names it selects among NAMES (sorted). Dotfiles only where the pattern spells the dot. */
const DIALECT: [string, string[]][] = [
  ["*.csv", ["audit.csv", "postgresql-1.csv", "postgresql-2.csv", "postgresql-x.csv"]],
  ["**", ["audit.csv", "postgresql-1.csv", "postgresql-2.csv", "postgresql-x.csv"]],
  ["postgresql-[0-9].csv", ["postgresql-1.csv", "postgresql-2.csv"]],
  ["postgresql-[[:digit:]].csv", ["postgresql-1.csv", "postgresql-2.csv"]],
  ["postgresql-?.csv", ["postgresql-1.csv", "postgresql-2.csv", "postgresql-x.csv"]],
  ["{audit,postgresql-x}.csv", ["audit.csv", "postgresql-x.csv"]],
  ["postgresql-{1..2}.csv", ["postgresql-1.csv", "postgresql-2.csv"]],
  // picomatch's exception to the dot rule: a leading negated extglob matches dotfiles too.
  ["!(audit).csv", [".postgresql-3.csv", "postgresql-1.csv", "postgresql-2.csv", "postgresql-x.csv"]],
  [".postgresql-*.csv", [".postgresql-3.csv"]],
  ["postgresql-[!0-9].csv", ["postgresql-x.csv"]],
];

let dir: string;
const entriesIn = new Map<string, number>(); // name → audit entries, from fixtures' expected counts
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "auditpipe-glob-"));
  mkdirSync(join(dir, "logs"));
  const casesDir = join(repoRoot(), "fixtures", "cases");
  const cases = listCases(casesDir);
  expect(cases.length).toBeGreaterThanOrEqual(NAMES.length);
  NAMES.forEach((name, i) => {
    const caseDir = join(casesDir, cases[i]!);
    writeFileSync(join(dir, "logs", name), readFixture(caseDir, "postgresql.csv.gz"));
    entriesIn.set(name, readExpected(caseDir).formats["postgresql.csv.gz"]!.entries);
  });
  writeFileSync(join(dir, "logs", "postgresql-1.csv.gz"), "a rotated, compressed file");
  mkdirSync(join(dir, "logs", "sub"));
  writeFileSync(join(dir, "logs", "sub", "postgresql-4.csv"), "a file one directory down");
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("globMatcher", () => {
  it.each(DIALECT)("%s selects %j", (pattern, expected) => {
    const matches = globMatcher(pattern);
    expect(NAMES.filter((n) => matches(n)).sort()).toEqual(expected);
  });

  it("tells a glob from a plain name; `\\` escapes", () => {
    expect(["a.csv", "a*.csv", "a[0-9]", "{a,b}", "**", "a\\*b"].map(isGlob)).toEqual([
      false,
      true,
      true,
      true,
      true,
      false,
    ]);
    expect(globMatcher("a\\*b")("a*b")).toBe(true);
    expect(globMatcher("a\\*b")("axb")).toBe(false);
  });
});

describe("expandGlob (analyze's FILE...)", () => {
  it.each(DIALECT)("%s, under the log directory, expands to %j", async (pattern, expected) => {
    const files = await expandGlob(join(dir, "logs", pattern));
    // `**` also goes down into sub/; the other patterns stay in the directory.
    const extra =
      pattern === "**"
        ? [join(dir, "logs", "postgresql-1.csv.gz"), join(dir, "logs", "sub", "postgresql-4.csv")]
        : [];
    expect(files).toEqual([...expected.map((n) => join(dir, "logs", n)), ...extra].sort());
  });

  it("walks subdirectories for `**/` and returns paths as the pattern spelled them (relative stays relative)", async () => {
    const rel = relative(process.cwd(), join(dir, "logs"));
    expect(await expandGlob(`${rel}/**/postgresql-[0-9].csv`)).toEqual([
      `${rel}/postgresql-1.csv`,
      `${rel}/postgresql-2.csv`,
      `${rel}/sub/postgresql-4.csv`,
    ]);
    expect(await expandGlob(`${rel}/*/postgresql-[0-9].csv`)).toEqual([`${rel}/sub/postgresql-4.csv`]);
    expect(await expandGlob(join(dir, "no-such-dir", "*.csv"))).toEqual([]);
  });
});

describe("FileSource pattern (run --pattern)", () => {
  it.each(DIALECT)("%s follows %j", async (pattern, expected) => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-glob-run-"));
    try {
      // Files the pattern should not select are older: FileSource reads in mtime order, so had it
      // taken one, it would have read and shipped it before the expected files were all acknowledged.
      const now = Date.now() / 1000;
      for (const name of NAMES) {
        const t = expected.includes(name) ? now : now - 3600;
        utimesSync(join(dir, "logs", name), t, t);
      }
      const shipped = new Map<string, number>(); // file name → entries acknowledged
      const sink: Sink = {
        name: "recording",
        async write(batch: Batch) {
          const name = basename(batch.range.sourceName);
          shipped.set(name, (shipped.get(name) ?? 0) + batch.entries);
        },
        async close() {},
      };
      const source = new FileSource({
        logDir: join(dir, "logs"),
        format: "csvlog",
        pattern,
        stateDir: join(work, "state"),
        sink,
        batch: { maxAgeMs: 20 },
      });
      await source.start();
      try {
        await waitUntil(
          () => expected.every((n) => shipped.get(n) === entriesIn.get(n)),
          30_000,
          () => `not every expected file was shipped: ${JSON.stringify([...shipped])}`,
          20,
        );
      } finally {
        await source.stop();
      }
      expect([...shipped.keys()].filter((n) => (shipped.get(n) ?? 0) > 0).sort()).toEqual(expected);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
