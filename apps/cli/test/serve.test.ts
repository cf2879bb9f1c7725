import { startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnCli } from "./_sidecar.ts";

describe("auditpipe serve", () => {
  it("samples its database in the background and answers GET /v1/workload and the OpenAPI document", async () => {
    const pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
    await pg.query("CREATE EXTENSION pg_stat_statements");
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    const child = spawnCli(["serve", "--listen", "127.0.0.1:0", "--sample-interval-ms", "1000"], {
      PGHOST: pg.socketDir,
      PGPORT: String(pg.port),
      PGUSER: "postgres",
      PGDATABASE: "postgres",
    });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    try {
      await waitUntil(
        () => /"url":"http:[^"]+"/.test(err),
        30_000,
        () => `serve did not listen:\n${err}`,
      );
      const url = /"url":"(http:[^"]+)"/.exec(err)![1];
      const load = pg.pgbench(["-n", "-c", "2", "-T", "3"]);
      await waitUntil(
        async () => (await fetch(`${url}/v1/workload`)).status === 200,
        30_000,
        () => `no sample:\n${err}`,
        250,
      );
      await load;
      const sample = (await (await fetch(`${url}/v1/workload`)).json()) as {
        database: string;
        statementStats: boolean;
      };
      expect(sample.database).toBe("postgres");
      expect(sample.statementStats).toBe(true);
      const openapi = (await (await fetch(`${url}/docs/json`)).json()) as {
        openapi: string;
        paths: Record<string, unknown>;
      };
      expect(openapi.openapi).toMatch(/^3\./);
      expect(Object.keys(openapi.paths)).toEqual(
        expect.arrayContaining(["/v1/estimates", "/v1/recommendations", "/v1/workload"]),
      );
      expect(err).not.toContain(pg.socketDir); // the connection is never logged
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.on("exit", r));
      await pg.stop();
    }
  });

  it("names the flag on a usage error", async () => {
    const { code, stderr } = await runCli(["serve", "--sample-interval-ms", "soon"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /--sample-interval-ms "soon": expected a whole number of at least 1000 \(milliseconds\)/,
    );
  });
});
