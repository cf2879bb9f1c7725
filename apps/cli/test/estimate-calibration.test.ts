import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EstimateReport, estimateReportSchema } from "@auditpipe/estimate";
import { afterAll, describe, expect, it } from "vitest";
import { CALIBRATED_ON, CALIBRATION, PLANNED_WORKLOAD, writeCalibration } from "./_calibration.ts";
import { runCli } from "./_cli.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-calibration-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A planned workload: 1,000 TPS from 2 clients, one UPDATE and one SELECT per transaction. */
const workloadFile = join(work, "workload.json");
writeFileSync(workloadFile, JSON.stringify(PLANNED_WORKLOAD));

const calibrationFile = writeCalibration(work);

type EstimateJson = EstimateReport;

describe("estimate with a bench calibration", () => {
  it("prints the calibrated range, saying where and when it was measured", async () => {
    const { code, stdout, stderr } = await runCli([
      "estimate",
      "--workload",
      workloadFile,
      "--audit",
      "write",
      "--calibration",
      calibrationFile,
      "--json",
    ]);
    expect(code, stderr).toBe(0);
    // The published schema (docs/cli.md names its fields) is what the command prints.
    const json = estimateReportSchema.parse(JSON.parse(stdout)) as EstimateJson;
    const write = json.estimates[0]!;
    expect(write.overhead.assumptions[0]).toBe(CALIBRATED_ON);
    expect(json.calibration).toEqual({
      host: "benchhost",
      createdAt: CALIBRATION.createdAt,
      r2: 0.9,
      residualStdErrUs: null,
      points: 1,
      runs: null,
      basis: "tps",
    });
    // One WRITE entry per transaction: 8–12 µs added (10 at the estimate).
    const o = write.overhead;
    expect(o.addedCpuUs).toEqual({ low: 8, estimate: 10, high: 12 });
    // 2 clients at 1,000 TPS: 2 ms per transaction, which gains the added time.
    expect(o.latencyMs.estimate).toBeCloseTo(0.01, 9);
    expect(o.latencyShare!.estimate).toBeCloseTo(10 / 2000, 9);
    // CPU-bound, against its 2 statements at pg_stat_statements' default 0.1 ms (a floor).
    expect(o.cpuBound.estimate).toBeCloseTo(10 / 210, 9);
    expect(o.regime.transactionCpuSource).toBe("floor");
    // A workload file says nothing of the host: the answer spans idle cores to every core busy.
    expect(o.regime.kind).toBe("unknown");
    expect(o.throughput.low).toBeCloseTo(8 / 2008, 6);
    expect(o.throughput.high).toBeCloseTo(12 / 212, 6);
  });

  it("with --cpu-busy and --cores, answers for that server: every core busy, or mostly idle", async () => {
    const run = async (busy: string) => {
      const { code, stdout, stderr } = await runCli([
        ...["estimate", "--workload", workloadFile, "--audit", "write"],
        ...["--calibration", calibrationFile, "--cpu-busy", busy, "--cores", "2", "--json"],
      ]);
      expect(code, stderr).toBe(0);
      return (JSON.parse(stdout) as EstimateJson).estimates[0]!.overhead;
    };
    // 2 cores fully busy at 1,000 TPS: 2,000 µs of CPU per transaction, the CPU share applies.
    const saturated = await run("100");
    expect(saturated.regime.kind).toBe("cpu-bound");
    expect(saturated.regime.transactionCpuSource).toBe("given");
    expect(saturated.throughput.estimate).toBeCloseTo(10 / 2010, 4);
    // 10 % busy: 200 µs of CPU in a 2 ms transaction, which loses the latency share.
    const idle = await run("10");
    expect(idle.regime.kind).toBe("latency-bound");
    expect(idle.throughput.estimate).toBeCloseTo(10 / 2010, 4);
    expect(idle.cpuBound.estimate).toBeCloseTo(10 / 210, 6);
    const bad = await runCli(["estimate", "--workload", workloadFile, "--cpu-busy", "150"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--cpu-busy must be a percentage from 0 to 100");
  });

  it("prints the overhead in its own table, each shared assumption once, and never -0.0 %", async () => {
    const { stdout } = await runCli([
      ...["estimate", "--workload", workloadFile, "--audit", "write", "--audit", "ddl,role"],
      ...["--calibration", calibrationFile],
    ]);
    expect(stdout).toContain("server CPU/txn");
    expect(stdout).toContain("this server at this load");
    expect(stdout).toMatch(/^ddl,role\s+0 µs\s+0\.0%\s+0\.000 ms\s+0\.0%\s+0\.0%$/m);
    expect(stdout).not.toContain("-0.0");
    // The workload line: one statement is "1 statement", with no empty brackets.
    expect(stdout).toMatch(/^1,000\.0 transactions\/s, 2 statements$/m);
    const paragraphs = stdout.split("\n").filter((l) => l.length > 40);
    expect(new Set(paragraphs).size).toBe(paragraphs.length);
  });

  it("takes AUDITPIPE_CALIBRATION when no flag is given", async () => {
    process.env.AUDITPIPE_CALIBRATION = calibrationFile;
    try {
      const { stdout } = await runCli(["estimate", "--workload", workloadFile, "--audit", "write"]);
      expect(stdout).toContain(CALIBRATED_ON);
    } finally {
      delete process.env.AUDITPIPE_CALIBRATION;
    }
  });

  it("without one, says the range is uncalibrated and cites public sources by title and author", async () => {
    const { stdout } = await runCli(["estimate", "--workload", workloadFile, "--audit", "write", "--json"]);
    const first = (JSON.parse(stdout) as EstimateJson).estimates[0]!.overhead.assumptions[0]!;
    expect(first).toMatch(/^uncalibrated/);
    expect(first).toContain('Gold Lapel, "pgAudit Performance Impact: Benchmarks and Mitigation Strategies"');
    expect(first).toContain("digoal");
    expect(stdout).not.toMatch(/seed \d/i);
  });

  it("rejects a calibration with a negative cost, or of an unknown version, before sampling, naming the file and field", async () => {
    const negative = writeCalibration(work, "negative.json", {
      ...CALIBRATION,
      fit: { ...CALIBRATION.fit, transactionCostUs: { estimate: -20.75, low: -82, high: 41 } },
    });
    // --db names a port where nothing listens: the calibration is checked before any connection.
    const refused = "postgresql://nobody@127.0.0.1:1/none";
    let r = await runCli(["estimate", "--db", refused, "--calibration", negative]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("AUDITPIPE_ERR_BAD_CALIBRATION");
    expect(r.stderr).toContain(`--calibration ${negative}: fit.transactionCostUs.estimate is -20.75 µs`);
    const future = writeCalibration(work, "future.json", { ...CALIBRATION, version: 9 });
    r = await runCli(["recommend", "--db", refused, "--calibration", future]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--calibration ${future}: version: 9 is not a calibration version`);
  });

  it("rejects a file that is not a calibration, naming the field", async () => {
    const bad = writeCalibration(work, "bad.json", {
      ...CALIBRATION,
      fit: { ...CALIBRATION.fit, lineCostUs: 10 },
    });
    const { code, stderr } = await runCli(["estimate", "--workload", workloadFile, "--calibration", bad]);
    expect(code).toBe(1);
    expect(stderr).toContain("AUDITPIPE_ERR_BAD_CALIBRATION");
    expect(stderr).toContain("fit.lineCostUs");
  });
});
