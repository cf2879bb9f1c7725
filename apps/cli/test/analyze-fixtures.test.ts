import { join } from "node:path";
import { listCases, readExpected } from "@auditpipe/fixtures";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const CASES_DIR = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");
const rows = listCases(CASES_DIR).flatMap((name) => {
  const expected = readExpected(join(CASES_DIR, name));
  return Object.keys(expected.formats).map((file) => ({ name, file, expected }));
});

describe("analyze --json on the real fixtures", () => {
  it("has every case and format to check", () => {
    expect(rows.length).toBe(5 * 6);
  });

  it.each(rows)("$name/$file equals expected.json", async ({ name, file, expected }) => {
    const want = expected.formats[file]!;
    const { code, stdout, stderr } = await runCli([
      "analyze",
      "--json",
      "--prefix",
      expected.settings.log_line_prefix,
      join(CASES_DIR, name, file),
    ]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const got = JSON.parse(stdout);
    expect({
      records: got.records,
      entries: got.entries,
      bytes: got.bytes,
      malformed: got.malformed,
    }).toEqual({
      records: want.records,
      entries: want.entries,
      bytes: want.bytes,
      malformed: want.malformed,
    });
    // The oracle gives user, database and object breakdowns for csvlog and jsonlog only. Every
    // format holds the same messages of the same window, and the stderr/syslog prefix carries %u
    // and %d, so the other formats must count the csvlog's entries under the same keys (their
    // bytes differ: each format writes a record at its own length).
    const csv = expected.formats["postgresql.csv.gz"]!;
    const entriesOf = (b: Record<string, { entries: number }>) =>
      Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v.entries]));
    for (const key of ["byClass", "byAuditType", "byCommand", "byUser", "byDatabase", "byObject"] as const) {
      const own = want[key];
      if (own) expect(got[key], key).toEqual(own);
      else {
        expect(csv[key], `${key}: neither ${file} nor the csvlog has it in expected.json`).toBeDefined();
        expect(entriesOf(got[key]), key).toEqual(entriesOf(csv[key]!));
      }
    }
    expect(got.span.seconds).toBeGreaterThan(0);
    // Every fixture is a scripted session of seconds: too short to project (the JSON says why).
    expect(got.span.seconds).toBeLessThan(60);
    expect(got.rate).toMatchObject({ mbPerHour: null, gbPerDay: null });
    expect(got.rate.reason).toMatch(/a projection needs at least 60 s/);
  });

  it.each(rows.filter((r) => !r.file.startsWith("postgresql.csv") && !r.file.startsWith("postgresql.json")))(
    "$name/$file without --prefix: the prefix is guessed from the first lines and the counts still match",
    async ({ name, file, expected }) => {
      const want = expected.formats[file]!;
      const { code, stdout, stderr } = await runCli(["analyze", "--json", join(CASES_DIR, name, file)]);
      expect(code).toBe(0);
      expect(stderr).toContain(`log_line_prefix '${expected.settings.log_line_prefix}'`);
      const got = JSON.parse(stdout);
      expect({ entries: got.entries, bytes: got.bytes, malformed: got.malformed }).toEqual({
        entries: want.entries,
        bytes: want.bytes,
        malformed: 0,
      });
    },
  );

  it("auto-detects every format (no --format given above) and reads several files of one stream", async () => {
    const dir = join(CASES_DIR, "object-only");
    const { stdout } = await runCli([
      "analyze",
      "--json",
      join(dir, "postgresql.csv.gz"),
      join(dir, "postgresql.csv.gz"),
    ]);
    const got = JSON.parse(stdout);
    const want = readExpected(dir).formats["postgresql.csv.gz"]!;
    expect(got.entries).toBe(2 * want.entries);
    expect(got.bytes).toBe(2 * want.bytes);
  });
});
