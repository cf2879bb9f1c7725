/**
 * One conformance suite (_parser-suite.ts), every log format: csvlog against csv-parse record for
 * record; jsonlog, stderr and syslog against csv-parse's reading of the csvlog the same server
 * wrote in the same window, per process (the logging collector may order processes differently
 * across destinations).
 */
import { LOG_LINE_PREFIX } from "@auditpipe/fixtures";
import { expect } from "vitest";
import { csvParseRecords } from "./_csvlog-oracle.ts";
import { testParser } from "./_parser-suite.ts";
import { actualByPid, csvRows, expectedByPid } from "./_stderr-oracle.ts";

/** The fields the fixtures' log_line_prefix carries into stderr and syslog records. */
const PREFIX_FIELDS = ["timestamp", "user", "database", "applicationName", "host"];
/**
 * jsonlog carries every csvlog column. commandTag is compared on its own: the shared oracle reads
 * an empty ps display as null (what a stderr prefix's empty %i gives), while csvlog and jsonlog
 * both keep PostgreSQL's "".
 */
const JSONLOG_FIELDS = [
  ...PREFIX_FIELDS,
  "sessionId",
  "sessionStart",
  "virtualTransactionId",
  "transactionId",
  "sqlState",
  "backendType",
  "leaderPid",
  "queryId",
];

testParser({
  format: "csvlog",
  files: ["postgresql.csv.gz"],
  accounting: "tiles",
  differential: (got, _csvlog, data) => expect(got.records).toEqual(csvParseRecords(data)),
});

testParser({
  format: "jsonlog",
  files: ["postgresql.json.gz"],
  accounting: "tiles",
  differential: (got, csvlog) => {
    const rows = csvRows(csvlog);
    expect(actualByPid(got.records, JSONLOG_FIELDS)).toEqual(expectedByPid(rows, JSONLOG_FIELDS));
    const tags = (list: { pid: number | null; tag: string | null }[]) =>
      list.map((t) => `${t.pid} ${t.tag}`).sort();
    expect(tags(got.records.map((r) => ({ pid: r.pid, tag: r.commandTag })))).toEqual(
      tags(rows.map((r) => ({ pid: Number(r.process_id), tag: r.command_tag }))),
    );
  },
});

testParser({
  format: "stderr",
  files: ["postgresql.log.gz"],
  options: { prefix: LOG_LINE_PREFIX },
  accounting: "tiles",
  differential: (got, csvlog) =>
    expect(actualByPid(got.records, PREFIX_FIELDS)).toEqual(expectedByPid(csvRows(csvlog), PREFIX_FIELDS)),
});

testParser({
  format: "syslog",
  files: ["syslog-rfc3164.log.gz", "syslog-rfc5424.log.gz", "syslog-rsyslog-file.log.gz"],
  options: { prefix: LOG_LINE_PREFIX },
  accounting: "sums",
  differential: (got, csvlog) =>
    expect(actualByPid(got.records, PREFIX_FIELDS)).toEqual(expectedByPid(csvRows(csvlog), PREFIX_FIELDS)),
});
