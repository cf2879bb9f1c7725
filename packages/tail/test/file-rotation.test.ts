import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import {
  duplicates,
  logSettled,
  type PostgresCluster,
  shippedKeys,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Waits until the collector has written all it will and the sink holds as many entries as the
 * files (then the test compares them: a line still on its way would land after the count).
 */
async function caughtUp(source: FileSource, pg: PostgresCluster, sinkDir: string): Promise<void> {
  await logSettled(pg.logDir);
  await waitUntil(
    () => shippedKeys(sinkDir).length >= writtenKeys(pg.logDir).length,
    60_000,
    () => `source did not catch up: ${JSON.stringify(source.status())}`,
    250,
  );
}

describe("FileSource following PostgreSQL's csvlog", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("ships every entry exactly once through size rotation and pg_rotate_logfile() under pgbench load", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      rotationSizeKb: 200, // many rotations in a short run
      pgaudit: { log: "all" },
    });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-tail-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxEntries: 500, maxAgeMs: 100 },
    });
    await source.start();
    cleanups.push(() => source.stop());

    await pg.pgbench(["-i", "-s", "1", "-q"]);
    // A transaction count, not a duration: a busy machine must not shrink the load below the checks.
    const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "1000"]);
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1100));
      await pg.rotate();
    }
    await load;
    await caughtUp(source, pg, sinkDir);
    await source.stop();

    const written = writtenKeys(pg.logDir);
    const shipped = shippedKeys(sinkDir);
    expect(pg.logFiles().length).toBeGreaterThan(5);
    expect(written.length).toBeGreaterThan(5000);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
  });
});

describe("FileSource batch age under steady load", () => {
  it("closes batches by age while the file keeps growing (never quiet)", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-age-"));
    const acks: number[] = [];
    const sink = {
      name: "recording",
      async write(batch: { entries: number }) {
        acks.push(batch.entries);
      },
      async close() {},
    };
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink,
      batch: { maxEntries: 1_000_000, maxAgeMs: 300 },
      // The age limit alone: no batch is held for its entries' outcomes.
      outcome: { holdMs: 0 },
    });
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await source.start();
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "3", "-R", "300"]);
      // 3 s of steady appends with a 300 ms age limit: many batches, none waiting for quiet.
      expect(acks.filter((n) => n > 0).length).toBeGreaterThan(5);
    } finally {
      await source.stop();
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
