import { describe, expect, it } from "vitest";
import { spawnCli } from "./_sidecar.ts";

describe("auditpipe demo", () => {
  it("runs a scratch PostgreSQL, pgbench and the sidecar, shows the live view, and cleans up", async () => {
    const child = spawnCli(["demo", "--duration", "4", "--tps", "100"]);
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(err).toContain("starting a scratch PostgreSQL 15");
    expect(code).toBe(0);
    // 4 s of pgbench is too little log time to project a day from: the view says so.
    expect(out).toMatch(
      /^projected not yet: the entries span [\d.]+ s of log time; a projection needs at least 60 s/m,
    );
    expect(out).toMatch(/^WRITE +[\d,]+ /m);
    const final = /demo: ([\d,]+) audit entries .* metered and shipped/.exec(out);
    expect(Number(final?.[1]?.replaceAll(",", ""))).toBeGreaterThan(100);
  }, 120_000);
});
