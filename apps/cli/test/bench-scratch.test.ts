import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchReportSchema, calibrationSchema } from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

describe("auditpipe bench --quick on a scratch server", () => {
  it("completes, and its JSON matches the schema with real measurements in every run", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-test-"));
    const calibrationFile = join(work, "calibration.json");
    try {
      // --quick's matrix (none, read, write, all, log_statement × tpcb, then none and all at 8
      // clients) with short runs, so the test is fast.
      const { code, stdout, stderr } = await runCli([
        "bench",
        "--quick",
        "--json",
        "--runs",
        "2",
        "--duration",
        "1",
        "--warmup",
        "1",
        "--scale",
        "1",
        "--calibration-out",
        calibrationFile,
      ]);
      expect(stderr).toMatch(/about \d+(\.5)? min|under a minute/); // the planned duration, printed before it starts
      expect(code, stderr).toBe(0);
      const report = benchReportSchema.parse(JSON.parse(stdout));
      expect(report.complete).toBe(true);
      expect(report.target).toEqual({ kind: "scratch", baseline: "pgaudit-not-loaded" });
      expect(report.environment.postgres.versionNum).toBeGreaterThanOrEqual(150_000);
      expect(report.environment.pgaudit).toMatch(/^1\./);
      // As it was started here (invocation.ts: `auditpipe`, or `pnpm exec auditpipe` under pnpm exec).
      expect(report.command).toMatch(/(?:^| )auditpipe bench --quick --json/);
      expect(report.configurations.map((c) => c.name)).toEqual([
        "none",
        "read",
        "write",
        "all",
        "log_statement",
      ]);
      expect(report.runs).toHaveLength(18);
      expect(report.workloads.map((w) => [w.name, w.clients, w.rate])).toEqual([
        ["tpcb", undefined, undefined],
        ["tpcb@8", 8, undefined],
        ["tpcb@300tps", 2, 300],
      ]);
      for (const rated of ["tpcb@8", "tpcb@300tps"])
        expect(
          report.runs
            .filter((r) => r.workload === rated)
            .map((r) => r.configuration)
            .sort(),
        ).toEqual(["all", "all", "none", "none"]);
      // pgbench -R holds the low-rate cell near its 300 TPS (it lags on a busy machine, never exceeds it much).
      for (const run of report.runs.filter((r) => r.workload === "tpcb@300tps"))
        expect(run.tps).toBeLessThan(360);
      // Interleaved: never the same configuration twice in a row.
      for (let i = 1; i < report.runs.length; i++)
        expect(report.runs[i]!.configuration).not.toBe(report.runs[i - 1]!.configuration);
      for (const run of report.runs) {
        expect(run.tps).toBeGreaterThan(0);
        expect(run.transactions).toBeGreaterThan(0);
        expect(run.walBytes).toBeGreaterThan(0);
        expect(run.latencyMs.p50).toBeGreaterThan(0);
        expect(run.latencyMs.p99).toBeGreaterThanOrEqual(run.latencyMs.p50);
        expect(run.log.malformed).toBe(0);
        expect(run.statWal.wal_bytes).toBeGreaterThan(0);
        const perTxn = run.log.auditEntries / run.transactions;
        if (run.configuration === "none") expect(run.log.auditEntries).toBe(0);
        // TPC-B-like: 3 UPDATEs and 1 INSERT are WRITE; the SELECT is READ; 'all' adds BEGIN and END.
        if (run.configuration === "read") expect(perTxn).toBeCloseTo(1, 0);
        if (run.configuration === "write") expect(perTxn).toBeCloseTo(4, 0);
        if (run.configuration === "all") expect(perTxn).toBeCloseTo(7, 0);
        if (run.configuration === "log_statement") {
          expect(run.log.auditEntries).toBe(0);
          expect(run.log.records / run.transactions).toBeCloseTo(7, 0);
        }
      }
      expect(report.cells).toHaveLength(9);
      // The collector's wake-ups are counted in every run (its voluntary context switches).
      for (const run of report.runs) expect(run.cpu?.loggerWakeups).toBeGreaterThanOrEqual(0);
      const all = report.cells.find((c) => c.configuration === "all")!;
      expect(all.overhead).not.toBeNull();
      expect(all.overhead!.low).toBeLessThanOrEqual(all.overhead!.median);
      expect(all.overhead!.high).toBeGreaterThanOrEqual(all.overhead!.median);
      expect(all.gbPerDay).toBeGreaterThan(0);
      expect(report.cells.find((c) => c.configuration === "none")!.overhead).toBeNull();
      expect(report.calibration).not.toBeNull();
      const calibration = calibrationSchema.parse(JSON.parse(readFileSync(calibrationFile, "utf8")));
      expect(calibration.points.map((p) => p.configuration)).toEqual([
        "read",
        "write",
        "all",
        "log_statement",
        "all",
        "all",
      ]);
      expect(calibration.points.at(-2)).toMatchObject({ workload: "tpcb@8", clients: 8 });
      expect(calibration.points.at(-1)).toMatchObject({ workload: "tpcb@300tps", clients: 2, rate: 300 });
      // The collector fitted apart, from every run's collector CPU, line rate and wake-ups; and
      // version 4, the backends' cost per wake-up as a column, where the low-rate cell sets it
      // apart from the lines (with a fitted τ near 0, one wake-up per line at every rate, it cannot).
      const wakeups = calibration.fit.cpu?.columns.includes("wakeups") === true;
      expect(calibration.version).toBe(wakeups ? 4 : 3);
      const collector = calibration.fit.cpu?.collector;
      expect(collector).toBeDefined();
      expect(collector!.wakeupUs.estimate).toBeGreaterThanOrEqual(0);
      expect(collector!.lineUs.estimate).toBeGreaterThanOrEqual(0);
      expect(collector!.awakeUs).toBeGreaterThanOrEqual(0);
      for (const p of calibration.points) {
        expect(p.loggerSamples).toHaveLength(2);
        expect(p.wakeupSamples).toHaveLength(2);
        expect(p.linesPerSecSamples!.every((r) => r > 0)).toBe(true);
      }
      expect(calibration.host).toBe(report.environment.host);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
