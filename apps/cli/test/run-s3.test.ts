import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, s3Keys, startMinio, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

describe("auditpipe run --sink s3://", () => {
  it("puts every entry PostgreSQL wrote into MinIO exactly once through an outage and kill -9s, and drains its spool", async () => {
    const minio = await startMinio({ buckets: ["audit"] });
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      rotationSizeKb: 500,
      pgaudit: { log: "all" },
    });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-s3-"));
    const env = minio.env();
    const args = [
      "--pgdata",
      pg.dataDir,
      "--sink",
      "s3://audit/pg/main",
      "--s3-endpoint",
      minio.endpoint,
      "--s3-force-path-style",
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--batch-max-entries",
      "500",
      "--batch-max-age-ms",
      "200",
    ];
    let sidecar = spawnSidecar(args, env);
    try {
      await sidecar.url();
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "8"]);
      await new Promise((r) => setTimeout(r, 1500));
      await minio.down(); // the store goes away: the spool fills, the checkpoint waits
      await new Promise((r) => setTimeout(r, 1500));
      const metrics = await (await fetch(`${await sidecar.url()}/metrics`)).text();
      expect(Number(/^auditpipe_spool_bytes (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      const readyDown = await fetch(`${await sidecar.url()}/readyz`);
      expect(await readyDown.text()).toMatch(/sink s3/);
      expect(readyDown.status).toBe(503);
      sidecar.child.kill("SIGKILL"); // with batches spooled and unacknowledged
      await sidecar.exited;
      sidecar = spawnSidecar(args, env);
      await sidecar.url();
      await new Promise((r) => setTimeout(r, 1000));
      await minio.up();
      await new Promise((r) => setTimeout(r, 1200));
      sidecar.child.kill("SIGKILL"); // during uploads
      await sidecar.exited;
      sidecar = spawnSidecar(args, env);
      await load;

      await logSettled(pg.logDir);
      const written = writtenKeys(pg.logDir);
      const client = minio.client();
      await waitUntil(
        async () => (await s3Keys(client, "audit", "pg/main/")).keys.length >= written.length,
        90_000,
        () => "MinIO does not hold every entry",
        1000,
      );
      const url = await sidecar.url();
      await waitUntil(
        async () => /^auditpipe_spool_bytes 0$/m.test(await (await fetch(`${url}/metrics`)).text()),
        30_000,
        () => "spool not drained",
        300,
      );
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      const { keys, objects } = await s3Keys(client, "audit", "pg/main/");
      expect(objects).toBeGreaterThan(5);
      expect(duplicates(keys)).toEqual([]);
      expect(new Set(keys)).toEqual(new Set(written));
      // The outage phases above are timed to the 8 s load, so the load is a duration; how much it
      // writes depends on the machine (about 4,000 entries at load 15 on 2 cores, 20,000 quiet):
      // enough to have crossed the outage either way.
      expect(written.length).toBeGreaterThan(1000);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
