/**
 * The user's path through the CLI: a sidecar (`auditpipe run`) ships a real log into a local
 * archive; `auditpipe compact` turns its hour into Parquet; `auditpipe query` answers SQL, the named
 * reports and OCSF over it, in text, JSON and CSV; usage errors name the flag.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot, shippedLines, shippedRecords, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { walkedCommands } from "./_doc-blocks.ts";
import { installedBin, Shell } from "./_doc-walk.ts";
import { spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const expected = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8")).formats["postgresql.csv.gz"];
const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-cli-"));
const sink = join(work, "archive");

beforeAll(async () => {
  const logDir = join(work, "log");
  mkdirSync(logDir);
  writeFileSync(join(logDir, "postgresql.csv"), gunzipSync(readFileSync(join(CASE, "postgresql.csv.gz"))));
  const sidecar = spawnSidecar([
    ...["--log-dir", logDir, "--format", "csvlog", "--sink", sink, "--state", join(work, "state")],
    ...["--listen", "127.0.0.1:0", "--batch-max-entries", "200"],
    ...["--batch-max-age-ms", "100"], // the last batch not held a second
  ]);
  await sidecar.url();
  await waitUntil(
    () => shippedRecords(sink).length >= expected.entries,
    60_000,
    () => `the sidecar shipped ${shippedRecords(sink).length} of ${expected.entries} entries`,
  );
  sidecar.child.kill("SIGTERM");
  expect((await sidecar.exited).code).toBe(0);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Statements refused before pgAudit logged them: rows of their own (`record = 'attempt'`) beside the entries. */
const attempts = (): number =>
  shippedLines<{ record?: string }>(sink).filter((r) => r.record === "attempt").length;

describe("auditpipe compact and query", () => {
  it("compact writes the hour's Parquet file; a second run has nothing to do", async () => {
    const first = await runCli(["compact", sink, "--json"]);
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report).toMatchObject({ compacted: 1, failed: 0 });
    expect(report.partitions[0]).toMatchObject({
      dt: "2026-11-23",
      hour: "07",
      host: "local",
      state: "compacted-now",
      record: {
        rows: expected.entries + attempts(),
        key: "parquet/dt=2026-11-23/hour=07/host=local/part-0.parquet",
      },
    });
    const again = await runCli(["compact", sink]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `2026-11-23T07  local  already compacted (${(expected.entries + attempts()).toLocaleString("en-US")} rows)`,
    );
  });

  it("query answers SQL as a text table, JSON and CSV, and says what it read", async () => {
    const sql =
      "SELECT class, count(*) AS entries FROM audit WHERE record = 'entry' GROUP BY class ORDER BY class";
    const text = await runCli(["query", sink, sql]);
    expect(text.code).toBe(0);
    const byClass = expected.byClass as Record<string, { entries: number }>;
    for (const [klass, v] of Object.entries(byClass))
      expect(text.stdout).toMatch(new RegExp(`^${klass}\\s+${v.entries}$`, "m"));
    expect(text.stderr).toMatch(
      /^read 1 file \(1 Parquet, 0 NDJSON\), [\d.]+ kB of [\d.]+ kB in the archive$/m,
    );
    const json = JSON.parse((await runCli(["query", sink, "--json", sql])).stdout);
    expect(
      Object.fromEntries(json.map((r: { class: string; entries: string }) => [r.class, Number(r.entries)])),
    ).toEqual(Object.fromEntries(Object.entries(byClass).map(([k, v]) => [k, v.entries])));
    const csv = (await runCli(["query", sink, "--csv", sql])).stdout.split("\r\n");
    expect(csv[0]).toBe("class,entries");
    expect(csv.length).toBe(Object.keys(byClass).length + 2);
  });

  it("docs/archive.md's query, pasted in the archive's parent directory, prints the page's table", async () => {
    const steps = walkedCommands("docs/archive.md", "### Asking: `auditpipe query`");
    expect(steps.length).toBeGreaterThan(0);
    const bin = installedBin(join(work, "bin"));
    const shell = new Shell(work, { ...process.env, PATH: `${bin}:${process.env.PATH}` });
    try {
      for (const step of steps) {
        const { code, output } = await shell.run(step.text);
        expect(code, `${step.text}\n${output}`).toBe(0);
        // The table is the page's, line for line; the last line's sizes depend on batch boundaries.
        const table = step.output.filter((l) => l !== "" && !l.startsWith("read "));
        expect(output.split("\n").filter((l) => table.includes(l))).toEqual(table);
        expect(output).toMatch(
          /^read 1 file \(1 Parquet, 0 NDJSON\), [\d.]+ kB of [\d.]+ kB in the archive$/m,
        );
      }
    } finally {
      await shell.close();
    }
  });

  it("the reports run, and OCSF gives one event per entry and attempt", async () => {
    const who = await runCli(["query", sink, "who-touched", "public.account"]);
    expect(who.code).toBe(0);
    expect(who.stdout).toMatch(
      /^ts\s+user\s+database\s+class\s+command\s+object_name\s+outcome\s+matched_by\s+statement$/m,
    );
    const byUser = JSON.parse((await runCli(["query", sink, "by-user", "--json"])).stdout);
    expect(byUser.reduce((n: number, r: { entries: string }) => n + Number(r.entries), 0)).toBe(
      expected.entries,
    );
    for (const report of [["failed"], ["grants"], ["failed", "--user", "app_user"]])
      expect((await runCli(["query", sink, ...report])).code).toBe(0);
    const ocsf = (await runCli(["query", sink, "--ocsf"])).stdout.trim().split("\n");
    expect(ocsf.length).toBe(expected.entries + attempts());
    expect(JSON.parse(ocsf[0]!)).toMatchObject({
      class_uid: 6005,
      category_uid: 6,
      metadata: { version: "1.5.0" },
    });
  });

  it("refuses what is not one SELECT, and bad arguments with the flag named", async () => {
    const copy = await runCli(["query", sink, `COPY (SELECT 1) TO '${join(sink, "x.csv")}'`]);
    expect(copy.code).toBe(1);
    expect(copy.stderr).toMatch(/only a SELECT may run on the archive \(this statement is COPY\)/);
    const cases: [string[], RegExp][] = [
      [["query"], /query: the archive is missing/],
      [["query", sink], /query: give SQL/],
      [["query", sink, "--json", "--csv", "SELECT 1"], /give one of --json, --csv, --ocsf/],
      [["query", sink, "who-touched"], /who-touched needs one table/],
      [["query", sink, "--from", "yesterday", "SELECT 1"], /--from must be a date/],
      [["query", sink, "--user", "x", "SELECT 1"], /--user applies to the reports/],
      [
        ["query", sink, "--security-lake", join(work, "lake"), "SELECT 1"],
        /--security-lake writes OCSF events: give --ocsf too/,
      ],
      [
        ["query", sink, "--ocsf", "--security-lake", join(work, "lake"), "--region", "moon"],
        /--region, an AWS region/,
      ],
      [
        ["query", sink, "--ocsf", "--region", "eu-west-1"],
        /--region and --account-id go with --security-lake/,
      ],
      [["compact"], /compact: the archive is missing/],
      [["compact", sink, "--grace-minutes", "soon"], /--grace-minutes must be a whole number/],
      [["compact", sink, "--memory-limit", "lots"], /--memory-limit must be a size/],
      [["compact", sink, "--host", "a/b"], /--host must be a host name/],
    ];
    for (const [argv, message] of cases) {
      const r = await runCli(argv);
      expect([r.code, r.stderr], argv.join(" ")).toEqual([2, expect.stringMatching(message)]);
    }
    const missing = await runCli(["compact", join(work, "nowhere")]);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      expect.stringMatching(/the archive .*nowhere does not exist/),
    ]);
  });
});
