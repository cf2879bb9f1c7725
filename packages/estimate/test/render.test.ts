/**
 * The record renderer against real logs: for every audit record of every fixture case, rendering
 * its message with the record's own field values gives exactly the bytes PostgreSQL wrote. This
 * is what lets the model count bytes per entry instead of assuming an overhead.
 */
import { join } from "node:path";
import { type LogContext, recordBytes } from "@auditpipe/estimate";
import { LOG_LINE_PREFIX, listCases, readFixture } from "@auditpipe/fixtures";
import { createParser, type LogFormat, type LogRecord } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const CASES_DIR = join(repoRoot(), "fixtures", "cases");

function records(caseName: string, file: string, format: LogFormat): LogRecord[] {
  const out: LogRecord[] = [];
  const parser = createParser(
    format,
    { record: (r) => out.push(r), malformed: () => {} },
    { prefix: LOG_LINE_PREFIX },
  );
  parser.push(readFixture(join(CASES_DIR, caseName), file));
  parser.end();
  return out.filter((r) => r.message.startsWith("AUDIT: ") && r.backendType !== "background worker");
}

function contextOf(r: LogRecord, destination: LogContext["destination"]): LogContext {
  const tz = /\s(\S+)$/.exec(r.timestamp ?? "")?.[1] ?? "UTC";
  const [host, port] =
    r.remoteHost === null || r.remoteHost === "[local]"
      ? ["[local]", null]
      : r.remoteHost.includes(":")
        ? [r.remoteHost.slice(0, r.remoteHost.lastIndexOf(":")), Number(r.remoteHost.split(":").pop())]
        : [r.remoteHost, null];
  return {
    destination,
    prefix: LOG_LINE_PREFIX,
    timezone: tz,
    user: r.user ?? "",
    database: r.database ?? "",
    application: r.applicationName ?? "",
    remoteHost: host,
    remotePort: port,
    backendType: r.backendType ?? "client backend",
    pid: r.pid ?? 0,
    sessionLine: r.sessionLine ?? 0,
    statementId: 1,
    vxid: r.virtualTransactionId ?? "",
    xid: Number(r.transactionId ?? 0),
    queryIds: false,
    constantLength: 4,
  };
}

describe("renderRecord reproduces PostgreSQL's bytes", () => {
  const cases = listCases(CASES_DIR);
  it("has fixture cases to check", () => expect(cases.length).toBeGreaterThanOrEqual(5));

  for (const name of cases) {
    for (const [file, format] of [
      ["postgresql.csv.gz", "csvlog"],
      ["postgresql.json.gz", "jsonlog"],
      ["postgresql.log.gz", "stderr"],
    ] as const) {
      it(`${name} ${format}: every audit record's size`, () => {
        const all = records(name, file, format);
        expect(all.length).toBeGreaterThan(50);
        const wrong: string[] = [];
        for (const r of all) {
          const ctx = contextOf(r, format);
          const predicted = recordBytes(format, ctx, r.message, {
            commandTag: r.commandTag ?? "",
            xid: ctx.xid,
            queryId: r.queryId ?? "0",
          });
          if (predicted !== r.size) wrong.push(`offset ${r.offset}: ${predicted} != ${r.size}`);
        }
        expect(wrong.slice(0, 5)).toEqual([]);
      });
    }
  }
});
