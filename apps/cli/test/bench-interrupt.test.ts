import { benchReportSchema } from "@auditpipe/overhead";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnCli } from "./_sidecar.ts";

describe("auditpipe bench stopped with Ctrl-C", () => {
  it("stops pgbench, still reports the runs it measured, and exits 130", async () => {
    const child = spawnCli([
      "bench",
      "--audit",
      "write",
      "--workload",
      "tpcb",
      "--runs",
      "50",
      "--duration",
      "1",
      "--warmup",
      "0",
      "--scale",
      "1",
      "--json",
    ]);
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    // Two runs done and a third under way: interrupt it.
    await waitUntil(
      () => /run 3\/100/.test(err),
      120_000,
      () => `bench did not reach run 3:\n${err}`,
    );
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(err).toContain("stopping after Ctrl-C");
    const report = benchReportSchema.parse(JSON.parse(out));
    expect(report.complete).toBe(false);
    expect(report.interruption).toMatch(/Ctrl-C/);
    expect(report.runs.length).toBeGreaterThanOrEqual(2);
    expect(report.runs.length).toBeLessThan(100);
    for (const run of report.runs) expect(run.transactions).toBeGreaterThan(0);
  });
});
