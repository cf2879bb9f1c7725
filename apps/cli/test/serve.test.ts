import { createServer } from "node:net";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnCli, spawnServer } from "./_sidecar.ts";

const pgEnv = (pg: PostgresCluster): NodeJS.ProcessEnv => ({
  PGHOST: pg.socketDir,
  PGPORT: String(pg.port),
  PGUSER: "postgres",
  PGDATABASE: "postgres",
});

/** Whether the sampler's connection is open on the server: a sample is under way. */
async function sampling(pg: PostgresCluster): Promise<boolean> {
  const rows = await pg.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'auditpipe-estimate'",
  );
  return rows.rows[0]!.n > 0;
}

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
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
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

  it("is not ready before its first sample, has no /v1/volume, and stops at once on SIGTERM mid-sample", async () => {
    const pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
    // The default interval: the sample under way lasts 60 s.
    const serve = spawnServer(["serve", "--listen", "127.0.0.1:0"], pgEnv(pg));
    try {
      const url = await serve.url();
      await waitUntil(
        () => sampling(pg),
        30_000,
        () => `no sample started:\n${serve.stderr()}`,
        200,
      );
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        ready: false,
        reasons: ["no workload sample yet: the first one spans --sample-interval-ms (60000 ms)"],
      });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${url}/v1/workload`)).json()).toMatchObject({
        code: "AUDITPIPE_ERR_NO_SAMPLE",
      });
      // serve reads no logs: no volume route that would only ever answer zeros.
      expect((await fetch(`${url}/v1/volume`)).status).toBe(404);
      const wrongMethod = await fetch(`${url}/v1/estimates`);
      expect([wrongMethod.status, wrongMethod.headers.get("allow")]).toEqual([405, "POST"]);
      const misspelt = await fetch(`${url}/v1/estimates`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ confgs: ["write"] }),
      });
      expect(misspelt.status).toBe(400);
      expect(await misspelt.json()).toMatchObject({ code: "AUDITPIPE_ERR_VALIDATION", field: "body.confgs" });

      const signalled = Date.now();
      serve.child.kill("SIGTERM");
      // A bound, not a measurement: the sample under way had ~60 s to go.
      await waitUntil(
        () => serve.child.exitCode !== null,
        15_000,
        () => `serve still runs 15 s after SIGTERM:\n${serve.stderr()}`,
        100,
      );
      expect(await serve.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(15_000);
      expect(serve.stderr()).toContain('"msg":"stopped"');
      await waitUntil(
        async () => !(await sampling(pg)),
        10_000,
        () => "the sampler's connection stayed open",
      );
    } finally {
      serve.child.kill("SIGKILL");
      await serve.exited;
      await pg.stop();
    }
  }, 90_000);

  it("on an address in use prints the error and exits 1 at once, with a database to sample", async () => {
    const pg = await startPostgres();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    const serve = spawnServer(["serve", "--listen", `127.0.0.1:${port}`], pgEnv(pg));
    try {
      await waitUntil(
        () => serve.child.exitCode !== null,
        15_000,
        () => `serve still runs 15 s after failing to listen:\n${serve.stderr()}`,
        100,
      );
      expect(await serve.exited).toEqual({ code: 1, signal: null });
      expect(serve.stderr()).toContain(
        `auditpipe serve: --listen 127.0.0.1:${port}: cannot listen there: the address is in use (EADDRINUSE)`,
      );
      // It never started sampling.
      expect(serve.stderr()).not.toContain("workload sample");
    } finally {
      serve.child.kill("SIGKILL");
      await serve.exited;
      await new Promise((r) => taken.close(r));
      await pg.stop();
    }
  }, 60_000);

  it("names the flag on a usage error", async () => {
    const { code, stderr } = await runCli(["serve", "--sample-interval-ms", "soon"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /--sample-interval-ms "soon": expected a whole number of at least 1000 \(milliseconds\)/,
    );
  });
});
