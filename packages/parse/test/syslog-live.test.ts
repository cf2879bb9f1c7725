import { readFileSync } from "node:fs";
import { createStderrParser, createSyslogParser, type LogParser, type RecordSink } from "@auditpipe/parse";
import { SYSLOG_TEST_TIMEOUT_MS, startPostgres, startRsyslog, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { actualByPid, collector, csvRows, expectedByPid, feed } from "./_stderr-oracle.ts";

interface Config {
  name: string;
  prefix: string;
  /** LogRecord fields the prefix carries that csvlog also has. */
  fields: string[];
  settings?: Record<string, string | number | boolean>;
}

const CONFIGS: Config[] = [
  { name: "PostgreSQL's default prefix", prefix: "%m [%p] ", fields: ["timestamp"] },
  {
    name: "every escape, with padding and %q",
    prefix: "%m %-8p %b %c %s %x %v %e %Q [%P]|%q%10u|%-12d|%r|%h|%i|%a|%%|%n|%t|%l ",
    fields: [
      "timestamp",
      "backendType",
      "sessionId",
      "sessionStart",
      "transactionId",
      "virtualTransactionId",
      "sqlState",
      "queryId",
      "leaderPid",
      "user",
      "database",
      "remoteHost",
      "commandTag",
      "applicationName",
    ],
  },
  {
    name: "spaces in application_name, syslog_sequence_numbers off",
    prefix: "%m [%p] %q%u@%d/%a ",
    fields: ["timestamp", "user", "database", "applicationName"],
    settings: { syslog_sequence_numbers: false },
  },
];

/** Statements that exercise multi-line messages, tabs, non-ASCII, syslog's 900-byte cuts, and errors. */
const WORKLOAD = [
  "SET application_name = 'my app x'",
  "SELECT 'a\nb\tc é' AS x",
  "SELECT\n\t1 AS a,\n\t2 AS b",
  `SELECT '${"x".repeat(950)} ${"y".repeat(1000)}' AS long_words`,
  `SELECT '${"é".repeat(700)}' AS long_multibyte_no_space`,
  `SELECT '${"z\t".repeat(800)}' AS long_with_tabs`,
  "CREATE TABLE t (id int PRIMARY KEY)",
  "INSERT INTO t VALUES (1)",
  "INSERT INTO t VALUES (1)", // ERROR + DETAIL + STATEMENT
  "SELECT * FROM nonexistent", // ERROR ... at character 15
  "SELECT 'live-done-marker'",
];

function parseFile(make: (sink: RecordSink) => LogParser, file: string) {
  const c = collector();
  feed(make(c.sink), readFileSync(file), [8191]);
  return c;
}

describe("stderr and syslog parsers against a live PostgreSQL 15 + pgaudit + rsyslog", () => {
  for (const config of CONFIGS) {
    it(
      `${config.name}: stderr and syslog records equal csvlog's (csv-parse)`,
      async () => {
        const rsyslog = await startRsyslog();
        try {
          const pg = await startPostgres({
            logDestination: ["csvlog", "stderr", "syslog"],
            logLinePrefix: config.prefix,
            pgaudit: { log: "all" },
            settings: { log_connections: true, ...config.settings },
          });
          try {
            const client = await pg.connect();
            let pid: number;
            try {
              pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
              for (const sql of WORKLOAD) await client.query(sql).catch(() => {});
            } finally {
              await client.end();
            }
            const files = pg.currentLogfiles();
            for (const file of [files.stderr!, files.csvlog!])
              await waitUntil(
                () => readFileSync(file, "utf8").includes("live-done-marker"),
                10_000,
                () => file,
              );
            for (const file of Object.values(rsyslog.files))
              await rsyslog.waitForText(file, "live-done-marker");

            const expected = expectedByPid(csvRows(readFileSync(files.csvlog!)), config.fields).get(pid)!;
            expect(expected.length).toBeGreaterThan(WORKLOAD.length);
            expect(expected.filter((r) => r.severity === "ERROR")).toHaveLength(2);

            const stderr = parseFile((s) => createStderrParser(s, { prefix: config.prefix }), files.stderr!);
            expect(stderr.malformed).toEqual([]);
            expect(actualByPid(stderr.records, config.fields).get(pid)).toEqual(expected);

            for (const file of Object.values(rsyslog.files)) {
              const syslog = parseFile((s) => createSyslogParser(s, { prefix: config.prefix }), file);
              expect(syslog.malformed).toEqual([]);
              expect(actualByPid(syslog.records, config.fields).get(pid), file).toEqual(expected);
            }
            if (config.settings?.syslog_sequence_numbers === false)
              expect(readFileSync(rsyslog.files.rfc3164, "utf8")).toMatch(/postgres\[\d+\]: \[2\] /);
          } finally {
            await pg.stop();
          }
        } finally {
          await rsyslog.stop();
        }
      },
      SYSLOG_TEST_TIMEOUT_MS,
    );
  }
});
