import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type PostgresCluster,
  SYSLOG_TEST_TIMEOUT_MS,
  shippedRecords,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { getJson, spawnSidecar } from "./_sidecar.ts";

/** user, database and application: reads as '%m [%p] %q%u@%d ' too, with database "postgres/pgbench". */
const PREFIX = "%m [%p] %u@%d/%a ";

/**
 * `run` never ships on a guessed log_line_prefix: it learns the server's from --pgdata or --db,
 * or is given --prefix, and refuses to start otherwise (real PostgreSQL logs).
 */
describe("auditpipe run on stderr and syslog without --prefix", () => {
  let pg: PostgresCluster;
  let work: string;
  let entries: number;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "auditpipe-run-prefix-"));
    pg = await startPostgres({ logDestination: ["stderr"], logLinePrefix: PREFIX, pgaudit: { log: "all" } });
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", "2", "-t", "20"]);
    await pg.query("SELECT 'end of the test load' AS marker");
    const log = pg.currentLogfiles().stderr!;
    await waitUntil(
      () => readFileSync(log, "utf8").includes("end of the test load"),
      10_000,
      () => "the logging collector did not write the marker",
      50,
    );
    const report = await runCli(["analyze", "--json", "--prefix", PREFIX, log]);
    entries = JSON.parse(report.stdout).entries;
    expect(entries).toBeGreaterThan(100);
  });
  afterAll(async () => {
    await pg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it.each([
    [
      "--pgdata",
      () => ["--pgdata", pg.dataDir],
      /"from":"postgresql\.auto\.conf:\d+".*learned from the data directory's configuration/,
    ],
    [
      "--db",
      () => ["--log-dir", pg.logDir, "--db", pg.connectionString],
      /"from":"--db \(SHOW log_line_prefix\)".*learned from the server/,
    ],
  ])(
    "learns the server's log_line_prefix from %s and ships the right databases",
    async (name, args, learned) => {
      const sink = join(work, `sink${name}`);
      const sidecar = spawnSidecar([
        ...args(),
        "--format",
        "stderr",
        "--sink",
        sink,
        "--state",
        join(work, `state${name}`),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ]);
      try {
        await sidecar.url();
        expect(sidecar.stderr()).toContain(`"prefix":${JSON.stringify(PREFIX)}`);
        expect(sidecar.stderr()).toMatch(learned);
        await waitUntil(
          () => shippedRecords(sink).length >= entries,
          30_000,
          () => `shipped ${shippedRecords(sink).length} of ${entries}`,
          200,
        );
        const databases = new Set(shippedRecords<{ database: string | null }>(sink).map((r) => r.database));
        expect(databases).toEqual(new Set(["postgres"]));
      } finally {
        // Not SIGTERM: with --db an in-flight workload sample outlives stop() (left to the signals work).
        sidecar.child.kill("SIGKILL");
        await sidecar.exited;
      }
    },
  );

  it.each([
    ["a stderr log", () => ["--log-dir", pg.logDir, "--format", "stderr"], "the stderr log in"],
    ["syslog", () => ["--syslog", "tcp://127.0.0.1:0"], "--syslog"],
  ])(
    "refuses to start on %s with no way to learn the prefix, naming every way",
    async (_name, args, reader) => {
      const sink = join(work, "sink-refused");
      const sidecar = spawnSidecar([
        ...args(),
        "--sink",
        sink,
        "--state",
        join(work, "state-refused"),
        "--listen",
        "127.0.0.1:0",
      ]);
      try {
        await waitUntil(
          () => sidecar.child.exitCode !== null,
          30_000,
          () => `the sidecar started without a log_line_prefix:\n${sidecar.stderr()}`,
          100,
        );
        expect(sidecar.child.exitCode).toBe(2);
        expect(sidecar.stderr()).toContain(`run: ${reader}`);
        expect(sidecar.stderr()).toMatch(
          /never ships on a guess: give --pgdata DIR .* or --db URL \(SHOW log_line_prefix\), or --prefix/,
        );
        expect(existsSync(sink) ? readdirSync(sink) : []).toEqual([]);
      } finally {
        sidecar.child.kill("SIGKILL");
      }
    },
  );
});

describe("auditpipe run --syslog without --prefix", () => {
  it(
    "reads syslog with the prefix learned from --pgdata (a data directory without log files)",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-run-prefix-syslog-"));
      // The settings side of a data directory: its postgresql.conf, as the syslog-writing server has it.
      const pgdata = join(work, "pgdata");
      mkdirSync(pgdata);
      writeFileSync(
        join(pgdata, "postgresql.conf"),
        `log_destination = 'syslog'\nlog_line_prefix = '${PREFIX}'\n`,
      );
      const sink = join(work, "sink");
      const sidecar = spawnSidecar([
        "--syslog",
        "tcp://127.0.0.1:0",
        "--pgdata",
        pgdata,
        "--sink",
        sink,
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ]);
      const url = await sidecar.url();
      expect(sidecar.stderr()).toMatch(/"prefix":"%m \[%p\] %u@%d\/%a ","from":"postgresql\.conf:2"/);
      const port = await sidecar.syslogTcpPort();
      const rsyslog = await startRsyslog({
        forward: [{ protocol: "tcp", port, format: "rfc5424", framing: "octet-counted" }],
      });
      const pg = await startPostgres({
        logDestination: ["csvlog", "syslog"],
        logLinePrefix: PREFIX,
        pgaudit: { log: "all" },
      });
      try {
        await pg.pgbench(["-i", "-s", "1", "-q"]);
        await pg.pgbench(["-n", "-c", "2", "-t", "20"]);
        await pg.query("SELECT 'end of the test load' AS marker");
        const csvlog = pg.currentLogfiles().csvlog!;
        await waitUntil(
          () => readFileSync(csvlog, "utf8").includes("end of the test load"),
          10_000,
          () => "the logging collector did not write the marker",
          50,
        );
        const written = JSON.parse((await runCli(["analyze", "--json", csvlog])).stdout).entries as number;
        await waitUntil(
          () => shippedRecords(sink).length >= written,
          30_000,
          () => `shipped ${shippedRecords(sink).length} of ${written}`,
          200,
        );
        const databases = new Set(shippedRecords<{ database: string | null }>(sink).map((r) => r.database));
        expect(databases).toEqual(new Set(["postgres"]));
        expect(await getJson(`${url}/readyz`)).toEqual({ ready: true, reasons: [] });
      } finally {
        sidecar.child.kill("SIGKILL");
        await pg.stop();
        await rsyslog.stop();
        rmSync(work, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );
});
