import { AUDITPIPE_ERR_DB_QUERY, EstimateError, sampleWorkload } from "@auditpipe/estimate";
import { startPostgres } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

describe("sampleWorkload when the server goes away", () => {
  it("rejects with a sampling error (no unhandled 'error' event) when PostgreSQL stops mid-interval", async () => {
    const pg = await startPostgres({ pgaudit: { log: "none" } });
    let stopped = false;
    try {
      const sampling = sampleWorkload({
        connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
        intervalMs: 5_000,
      });
      const outcome = sampling.then(
        () => "resolved",
        (error: unknown) => error,
      );
      // Past the first reads, while the client sits idle between the two samples.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await pg.stop();
      stopped = true;
      const error = await outcome;
      expect(error).toBeInstanceOf(EstimateError);
      expect((error as EstimateError).code).toBe(AUDITPIPE_ERR_DB_QUERY);
    } finally {
      if (!stopped) await pg.stop();
    }
  });
});
