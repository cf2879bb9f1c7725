import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

describe("auditpipe run killed with SIGKILL", () => {
  it("loses nothing and duplicates nothing when killed -9 at random moments under load and restarted", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      rotationSizeKb: 400,
      pgaudit: { log: "all" },
    });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-kill9-"));
    const sinkDir = join(work, "sink");
    const args = [
      "--log-dir",
      pg.logDir,
      "--format",
      "csvlog",
      "--sink",
      sinkDir,
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--batch-max-entries",
      "300", // many small batches: more moments where a kill lands between write and checkpoint
      "--batch-max-age-ms",
      "100",
      "--log-level",
      "warn",
    ];
    let sidecar = spawnSidecar(args);
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      // A transaction count, not a duration: the same work however busy the machine is (about
      // 7 entries a transaction under pgaudit.log = all).
      const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "1500"]);
      // Each kill lands after the sink has taken more entries, at any machine speed: a kill on a
      // wall-clock timer landed after the work on a fast machine and before it on a slow one.
      const kills: number[] = [];
      for (const threshold of [500, 2000, 3500, 5000, 6500]) {
        await waitUntil(
          () => shippedKeys(sinkDir).length >= threshold,
          120_000,
          () => `the sink never reached ${threshold} entries`,
          100,
        );
        const jitter = Math.floor(Math.random() * 300);
        await new Promise((r) => setTimeout(r, jitter));
        sidecar.child.kill("SIGKILL");
        await sidecar.exited;
        kills.push(jitter);
        sidecar = spawnSidecar(args);
      }
      await load;
      await logSettled(pg.logDir);
      const written = writtenKeys(pg.logDir);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= written.length,
        60_000,
        () => "sink did not catch up",
        250,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      const shipped = shippedKeys(sinkDir);
      expect(kills).toHaveLength(5);
      expect(duplicates(shipped)).toEqual([]);
      expect(new Set(shipped)).toEqual(new Set(written));
      expect(written.length).toBeGreaterThan(5000);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
