/**
 * Mitigations as an axis of one bench on a real scratch server: several log destinations,
 * log_statement_once off and on, the log directory here and elsewhere, and syslog through a real
 * rsyslogd, each measured as cells of their own, interleaved with the rest, in the JSON, the
 * table and the HTML report. Short runs: the counts (entries, bytes) are what is checked, and
 * they do not depend on the machine's speed.
 */
import { execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type BenchReport,
  benchReportSchema,
  type RunResult,
  renderHtmlReport,
  renderReport,
} from "@auditpipe/overhead";
import { SYSLOG_TEST_TIMEOUT_MS, startRsyslog } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { syslogSocketProblem } from "../src/bench/syslog.ts";
import { normaliseSwitches } from "../src/commands/bench.ts";
import { runCli } from "./_cli.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-mitigations-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const SHORT = ["--runs", "1", "--duration", "1", "--warmup", "0", "--scale", "1", "--json"];

async function bench(args: string[]): Promise<BenchReport> {
  const { code, stdout, stderr } = await runCli(["bench", ...args, ...SHORT]);
  expect(code, stderr).toBe(0);
  return benchReportSchema.parse(JSON.parse(stdout));
}

const perTxn = (r: RunResult, x: number): number => x / r.transactions;
const runOf = (report: BenchReport, configuration: string, variant: string): RunResult => {
  const run = report.runs.find((r) => r.configuration === configuration && r.variant === variant);
  expect(run, `${configuration} (${variant})`).toBeDefined();
  return run!;
};

describe("bench with mitigations as an axis", () => {
  it("measures each destination with log_statement_once off and on as cells of their own, on a durable server", async () => {
    // Object auditing on the two largest tables (pgbench_accounts and one of the small ones): a
    // statement touching the three is logged once per audited table, so log_statement_once has
    // statement text to leave out.
    const script = join(work, "three-tables.sql");
    writeFileSync(
      script,
      [
        "\\set aid random(1, 100000 * :scale)",
        "UPDATE pgbench_tellers SET tbalance = tbalance WHERE tid = (SELECT min(t.tid) FROM pgbench_tellers t JOIN pgbench_branches b ON b.bid = t.bid JOIN pgbench_accounts a ON a.bid = b.bid WHERE a.aid = :aid);",
        "",
      ].join("\n"),
    );
    const report = await bench([
      ...["--audit", "object", "--script", script],
      ...["--log-destination", "csvlog,stderr", "--log-statement-once", "off,on", "--durable"],
    ]);
    expect(report.complete).toBe(true);
    expect(report.variants.map((v) => v.name)).toEqual(["csvlog", "csvlog+once", "stderr", "stderr+once"]);
    expect(report.options).toMatchObject({
      logDestination: "csvlog,stderr",
      logStatementOnce: false,
      durable: true,
    });
    expect(report.environment.settings).toMatchObject({ fsync: "on", synchronous_commit: "on" });
    expect(report.notes.join("\n")).not.toContain("fsync and synchronous_commit off");
    // The baseline once; object under every variant: 5 cells, one run each, in the plan's order.
    expect(report.runs.map((r) => `${r.configuration} (${r.variant})`)).toEqual([
      "none (csvlog)",
      "object (csvlog)",
      "object (csvlog+once)",
      "object (stderr)",
      "object (stderr+once)",
    ]);
    expect(report.cells.map((c) => [c.configuration, c.variant])).toEqual([
      ["none", "csvlog"],
      ["object", "csvlog"],
      ["object", "csvlog+once"],
      ["object", "stderr"],
      ["object", "stderr+once"],
    ]);
    for (const cell of report.cells.filter((c) => c.configuration === "object"))
      expect(cell.overhead).not.toBeNull();
    for (const run of report.runs) expect(run.log.malformed).toBe(0);
    for (const destination of ["csvlog", "stderr"]) {
      const off = runOf(report, "object", destination);
      const on = runOf(report, "object", `${destination}+once`);
      // Read in each destination's own format: at least two entries per statement either way...
      expect(perTxn(off, off.log.auditEntries)).toBeGreaterThanOrEqual(1.9);
      expect(perTxn(on, on.log.auditEntries)).toBeCloseTo(perTxn(off, off.log.auditEntries), 0);
      // ...and with log_statement_once on, the second one's statement text is left out.
      const bytesPerEntry = (r: RunResult): number => r.log.bytes / r.log.auditEntries;
      expect(bytesPerEntry(on)).toBeLessThan(bytesPerEntry(off) * 0.9);
    }
    // The table, and the HTML report's table and chart labels, name each cell's mitigations.
    expect(renderReport(report)).toMatch(/^configuration\s+mitigations\s+workload/m);
    expect(renderReport(report)).toMatch(/^object\s+stderr\+once\s+script:three-tables\.sql/m);
    const html = renderHtmlReport(report);
    expect(html).toContain("<th>mitigations</th>");
    expect(html).toContain("object (stderr+once)");
  });

  it(
    "counts syslog entries from the daemon's file, and a log directory elsewhere, beside csvlog",
    async () => {
      const rsyslog = await startRsyslog();
      // Under /tmp itself: the scratch server runs as PostgreSQL's OS user when the test runs as
      // root, and must be able to reach the directory as well as write it.
      const elsewhere = mkdtempSync(join(tmpdir(), "auditpipe-bench-elsewhere-"));
      if (process.getuid?.() === 0) {
        const id = (flag: string): number =>
          Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }));
        chownSync(elsewhere, id("-u"), id("-g"));
      }
      try {
        const report = await bench([
          ...["--audit", "write", "--workload", "tpcb", "--log-destination", "csvlog,syslog"],
          ...["--log-dir", "data,elsewhere"],
          ...["--log-dir-elsewhere", elsewhere, "--syslog-file", rsyslog.files.rfc3164],
        ]);
        expect(report.complete).toBe(true);
        expect(report.variants.map((v) => v.name)).toEqual(["csvlog", "csvlog+elsewhere", "syslog"]);
        expect(report.options.syslogFile).toBe(rsyslog.files.rfc3164);
        const variant = (name: string) => report.variants.find((v) => v.name === name)!;
        expect(variant("csvlog+elsewhere").logDirectory.path).toBe(elsewhere);
        expect(variant("syslog").logDirectory.path).toBe(dirname(rsyslog.files.rfc3164));
        expect(readdirSync(elsewhere).some((f) => f.endsWith(".csv"))).toBe(true);
        // TPC-B-like under write: 3 UPDATEs and the INSERT, whatever the destination.
        for (const name of ["csvlog", "csvlog+elsewhere", "syslog"]) {
          const run = runOf(report, "write", name);
          expect(perTxn(run, run.log.auditEntries), name).toBeCloseTo(4, 0);
          expect(run.log.malformed, name).toBe(0);
          expect(run.log.bytes, name).toBeGreaterThan(0);
        }
        expect(report.notes.join("\n")).toContain(
          `syslog: the entries and bytes are what the syslog daemon wrote to ${rsyslog.files.rfc3164}`,
        );
      } finally {
        await rsyslog.stop();
        rmSync(elsewhere, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );

  it("says what syslog needs when nothing listens on the socket, or no file is named; checks its flags", async () => {
    const problem = syslogSocketProblem(join(work, "no-socket"));
    expect(problem).toContain(`nothing listens on ${join(work, "no-socket")}`);
    expect(problem).toContain("--syslog-file FILE");
    expect(problem).toContain("SysSock.RateLimit.Interval");
    const { code, stderr } = await runCli(["bench", "--log-destination", "syslog"]);
    expect(code).toBe(2);
    expect(stderr).toContain("--log-destination syslog needs --syslog-file FILE");
    const existing = await runCli(["bench", "--existing", "--log-destination", "jsonlog"]);
    // --log-statement-once alone still means on, as when it was a switch.
    expect(normaliseSwitches(["--log-statement-once", "--json"])).toEqual([
      "--log-statement-once=on",
      "--json",
    ]);
    expect(normaliseSwitches(["--log-statement-once"])).toEqual(["--log-statement-once=on"]);
    expect(normaliseSwitches(["--log-statement-once", "off,on"])).toEqual(["--log-statement-once", "off,on"]);
    expect(existing.code).toBe(2);
    expect(existing.stderr).toContain("--log-destination apply to the scratch server only");
  });
});
