import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { type Batch, LocalDirSink, type Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { duplicates, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");

/** Real csvlog written by PostgreSQL (a committed fixture), split into whole records. */
function fixtureRecords(name: string): string[] {
  const text = gunzipSync(readFileSync(join(FIXTURES, name, "postgresql.csv.gz"))).toString("utf8");
  // Records start at a line beginning with a timestamp (a quoted field never starts a line so).
  return text
    .split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} )/)
    .map((r) => (r.endsWith("\n") ? r : `${r}\n`));
}

/** A sink that acknowledges nothing until the test opens the gate: the reader stays behind. */
class GatedSink implements Sink {
  readonly name = "gated";
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.open = resolve;
  });
  private readonly inner: Sink;
  constructor(inner: Sink) {
    this.inner = inner;
  }
  release(): void {
    this.open();
  }
  async write(batch: Batch): Promise<void> {
    await this.gate;
    await this.inner.write(batch);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

describe("FileSource and files that change under it", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });
  const workDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-trunc-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it("copytruncate on a live PostgreSQL log: the copy's unread tail and the new content both arrive, once", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      logFilename: "postgresql.log",
      pgaudit: { log: "all" },
    });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const sinkDir = join(work, "sink");
    const gated = new GatedSink(new LocalDirSink({ dir: sinkDir }));
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      pattern: "postgresql.csv*", // logrotate's copies: postgresql.csv.1
      stateDir: join(work, "state"),
      // Nothing is acknowledged until after the truncation: the copy is taken while the source is
      // behind (it reads at most 3 batches ahead of the sink).
      sink: gated,
      batch: { maxEntries: 200, maxAgeMs: 100 },
    });
    await source.start();
    cleanups.push(() => source.stop());
    cleanups.push(() => gated.release()); // runs first: a failed test must not leave stop() waiting on it
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    // Well over one read (1 MiB, ~3 MB here): the source parses at most one read before it waits
    // for the gated sink, so it is behind at the copy however its passes fall.
    await pg.pgbench(["-n", "-c", "1", "-t", "1500"]);
    const live = join(pg.logDir, "postgresql.csv");
    // The collector writes asynchronously: let it finish, so nothing lands between copy and
    // truncate (logrotate's own loss window, which is not what this test is about).
    const settled = async (): Promise<void> => {
      let size = -1;
      await waitUntil(
        () => {
          const now = statSync(live).size;
          const same = now === size;
          size = now;
          return same;
        },
        10_000,
        () => "log did not settle",
        300,
      );
    };
    await settled();
    // What logrotate's copytruncate does: copy, then truncate in place (PostgreSQL appends with O_APPEND).
    copyFileSync(live, `${live}.1`);
    truncateSync(live, 0);
    expect(source.status().some((f) => f.read < readFileSync(`${live}.1`).length)).toBe(true); // really behind
    gated.release();
    await pg.pgbench(["-n", "-c", "1", "-t", "200"]);
    // What the files hold once the collector has written it all (a CI run counted the file while
    // its last lines were still on their way, and the source then shipped more than that).
    await settled();

    const written = writtenKeysOf([`${live}.1`, live]);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= written.length,
      60_000,
      () => `behind: ${JSON.stringify(source.status())}`,
      250,
    );
    await source.stop();
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
  });

  it("truncate-on-rotation reusing a file name: the new content is read from its start", async () => {
    const work = workDir();
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const sinkDir = join(work, "sink");
    const first = fixtureRecords("object-only");
    const second = fixtureRecords("ddl-role-object");
    const file = join(logDir, "postgresql-Mon.csv");
    writeFileSync(file, first.join(""));
    const source = new FileSource({
      logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxAgeMs: 50 },
      pollIntervalMs: 50,
    });
    await source.start();
    cleanups.push(() => source.stop());
    const firstKeys = writtenKeysOf([file]);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= firstKeys.length,
      20_000,
      () => "first file not shipped",
      100,
    );
    // A week later PostgreSQL opens the same name with "w": truncated, then written anew.
    writeFileSync(file, second.join(""));
    const secondKeys = writtenKeysOf([file]);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= firstKeys.length + secondKeys.length,
      20_000,
      () => `second content not shipped: ${JSON.stringify(source.status())}`,
      100,
    );
    await source.stop();
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set([...firstKeys, ...secondKeys]));
  });

  it("a rotated file deleted before it was read is drained through the open handle", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const sinkDir = join(work, "sink");
    const sink = new GatedSink(new LocalDirSink({ dir: sinkDir }));
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      // Closed until the old file is deleted: once DEFAULT_MAX_IN_FLIGHT (3) batches are out and
      // one more is ready, the source stops reading (backpressure), so the old file is still
      // unread when it goes, however fast or slow pgbench runs.
      sink,
      batch: { maxEntries: 100, maxAgeMs: 100 },
    });
    await source.start();
    cleanups.push(() => source.stop());
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", "1", "-t", "300"]);
    await waitUntil(
      () => source.status().length > 0,
      10_000,
      () => "not following",
    );
    const old = pg.currentLogfiles().csvlog!;
    await new Promise((r) => setTimeout(r, 1100));
    await pg.rotate();
    await pg.query("SELECT 'after rotation' AS marker");
    // Once the marker is in the new file, the collector has written all it will to the old one.
    await waitUntil(
      () => readFileSync(pg.currentLogfiles().csvlog!, "utf8").includes("after rotation"),
      10_000,
      () => "no marker",
    );
    const oldKeys = writtenKeysOf([old]);
    expect(source.status().find((f) => f.path === old)!.read).toBeLessThan(readFileSync(old).length);
    unlinkSync(old);
    sink.release();
    const newKeys = writtenKeys(pg.logDir);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= oldKeys.length + newKeys.length,
      60_000,
      () => `behind: ${JSON.stringify(source.status())}`,
      250,
    );
    await source.stop();
    const shipped = shippedKeys(sinkDir);
    const want = new Set([...oldKeys, ...newKeys]);
    expect(duplicates(shipped)).toEqual([]);
    expect({
      missing: [...want].filter((k) => !shipped.includes(k)),
      extra: shipped.filter((k) => !want.has(k)),
    }).toEqual({ missing: [], extra: [] });
  });
});

function writtenKeysOf(files: string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-oracle-"));
  try {
    for (const [i, f] of files.entries()) copyFileSync(f, join(dir, `${i}.csv`));
    return writtenKeys(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
