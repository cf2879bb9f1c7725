import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CALIBRATED_ON, CALIBRATION, PLANNED_WORKLOAD, writeCalibration } from "./_calibration.ts";
import { runCli } from "./_cli.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-calibration-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A planned workload: 1,000 TPS from 2 clients, one UPDATE and one SELECT per transaction. */
const workloadFile = join(work, "workload.json");
writeFileSync(workloadFile, JSON.stringify(PLANNED_WORKLOAD));

const calibrationFile = writeCalibration(work);

type EstimateJson = {
  estimates: Array<{
    config: string;
    overhead: { throughput: { low: number; high: number }; assumptions: string[] };
  }>;
};

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
    const write = (JSON.parse(stdout) as EstimateJson).estimates[0]!;
    expect(write.overhead.assumptions[0]).toBe(CALIBRATED_ON);
    // One WRITE entry per transaction, 2 clients at 1,000 TPS = 2,000 µs each: 8–12 µs added.
    expect(write.overhead.throughput.low).toBeCloseTo(8 / 2008, 6);
    expect(write.overhead.throughput.high).toBeCloseTo(12 / 2012, 6);
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
