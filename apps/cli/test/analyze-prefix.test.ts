import { readFileSync } from "node:fs";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

/** user, database and application: a common prefix that no entry of COMMON_PREFIXES is. */
const PREFIX = "%m [%p] %u@%d/%a ";

/**
 * A guessed log_line_prefix is used only when it is the one reading of the lines; a file nothing
 * could be read from fails the command, naming the file and what to try (real PostgreSQL logs).
 */
describe("auditpipe analyze on a log whose prefix the lines do not tell", () => {
  let pg: PostgresCluster;
  let stderrLog: string;
  let csvLog: string;
  beforeAll(async () => {
    pg = await startPostgres({
      logDestination: ["stderr", "csvlog"],
      logLinePrefix: PREFIX,
      pgaudit: { log: "all" },
    });
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", "2", "-t", "20"]);
    await pg.query("SELECT 'end of the test load' AS marker");
    ({ stderr: stderrLog, csvlog: csvLog } = pg.currentLogfiles() as { stderr: string; csvlog: string });
    await waitUntil(
      () =>
        readFileSync(stderrLog, "utf8").includes("end of the test load") &&
        readFileSync(csvLog, "utf8").includes("end of the test load"),
      10_000,
      () => "the logging collector did not write the marker",
      50,
    );
  });
  afterAll(() => pg?.stop());

  it("refuses to guess between two readings, shows both and asks for SHOW log_line_prefix and --prefix", async () => {
    const { code, stdout, stderr } = await runCli(["analyze", "--json", stderrLog]);
    expect(stdout).toBe("");
    expect(code).toBe(2);
    expect(stderr).toContain(`cannot tell which log_line_prefix wrote ${stderrLog}`);
    expect(stderr).toContain(`'%m [%p] %q%u@%d '`);
    expect(stderr).toContain(`'%m [%p] %q%u@%d/%a '`);
    // The first line they disagree on: the test's own session, whose application is [unknown].
    expect(stderr).toMatch(/'%m \[%p\] %q%u@%d ' +\(at byte \d+: database "postgres\/\[unknown\]"\)/);
    expect(stderr).toMatch(/'%m \[%p\] %q%u@%d\/%a ' +\(at byte \d+: database "postgres"\)/);
    expect(stderr).toMatch(/SHOW log_line_prefix.*--prefix/);
  });

  it("reads the right users and databases with the server's own --prefix", async () => {
    const given = await runCli(["analyze", "--json", "--prefix", PREFIX, stderrLog]);
    const csv = await runCli(["analyze", "--json", csvLog]);
    expect([given.code, csv.code]).toEqual([0, 0]);
    const fromStderr = JSON.parse(given.stdout);
    const fromCsv = JSON.parse(csv.stdout);
    expect(Object.keys(fromStderr.byDatabase)).toEqual(["postgres"]);
    expect(fromStderr.entries).toBe(fromCsv.entries);
    expect(fromStderr.byDatabase.postgres.entries).toBe(fromCsv.byDatabase.postgres.entries);
    expect(fromStderr.malformed).toBe(0);
  });

  it("exits 1 naming the file when --format is wrong: nothing in it could be read", async () => {
    const { code, stdout, stderr } = await runCli(["analyze", "--format", "csvlog", stderrLog]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain(`nothing in ${stderrLog} could be read as csvlog`);
    expect(stderr).toMatch(/looks like stderr: try --format stderr/);
  });

  it("exits 1 naming the file when --prefix reads no line", async () => {
    const { code, stdout, stderr } = await runCli(["analyze", "--prefix", "%t [%p] ", stderrLog]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain(`nothing in ${stderrLog} could be read as stderr`);
    expect(stderr).toMatch(/no line starts with --prefix '%t \[%p\] '.*SHOW log_line_prefix/);
  });
});
