import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { getJson, spawnSidecar } from "./_sidecar.ts";

describe("auditpipe run", () => {
  it("follows a live PostgreSQL through rotation, meters it, ships every entry once, and stops cleanly on SIGTERM", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      rotationSizeKb: 300,
      pgaudit: { log: "all" },
    });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-"));
    const sinkDir = join(work, "sink");
    const sidecar = spawnSidecar([
      "--pgdata",
      pg.dataDir,
      "--sink",
      sinkDir,
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--batch-max-age-ms",
      "200",
    ]);
    try {
      const url = await sidecar.url();
      expect(await getJson(`${url}/healthz`)).toEqual({ status: "ok" });
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "3"]);
      await new Promise((r) => setTimeout(r, 1500));
      await pg.rotate();
      await load;

      await logSettled(pg.logDir);
      const written = writtenKeys(pg.logDir);
      await waitUntil(
        async () =>
          (await getJson<{ totals: { entries: number } }>(`${url}/v1/volume`)).totals.entries >=
          written.length,
        30_000,
        () => "the meter did not count every entry",
        200,
      );
      const volume = await getJson<{
        totals: { entries: number; bytes: number };
        byClass: { keys: Record<string, { entries: number }> };
      }>(`${url}/v1/volume`);
      expect(volume.totals.entries).toBe(written.length);
      expect(volume.byClass.keys.WRITE?.entries).toBeGreaterThan(1000);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toMatch(/^auditpipe_audit_entries_total\{class="WRITE",audit_type="SESSION"\} \d+/m);
      expect(metrics).not.toMatch(/user="|object="/);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= written.length,
        30_000,
        () => "sink behind",
        200,
      );

      const stopAt = Date.now();
      sidecar.child.kill("SIGTERM");
      const { code } = await sidecar.exited;
      expect(code).toBe(0);
      expect(Date.now() - stopAt).toBeLessThan(10_000);
      expect(sidecar.stderr()).not.toMatch(/pgbench_accounts SET abalance/); // no statement text in our logs

      const shipped = shippedKeys(sinkDir);
      expect(duplicates(shipped)).toEqual([]);
      expect(new Set(shipped)).toEqual(new Set(written));
      expect(pg.logFiles().length).toBeGreaterThan(2);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
