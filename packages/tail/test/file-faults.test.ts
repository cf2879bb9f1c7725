import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { csvlogKeys, writtenKeys } from "@auditpipe/fixtures/oracle";
import { type Batch, LocalDirSink, type Sink } from "@auditpipe/ship";
import { type FileCheckpoint, FileSource, type FileSourceOptions, type SourceLogger } from "@auditpipe/tail";
import { duplicates, logSettled, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { CHECKPOINT_FILE } from "../src/_checkpoint.ts";

/** A logger that keeps what FileSource says, to wait on and check. */
function capturingLogger(): SourceLogger & { lines: { level: string; obj: object; msg: string }[] } {
  const lines: { level: string; obj: object; msg: string }[] = [];
  const keep = (level: string) => (obj: object, msg: string) => lines.push({ level, obj, msg });
  return { lines, info: keep("info"), warn: keep("warn"), error: keep("error") };
}

/** A sink that takes its time, so the source is still behind when the test stops it. */
class SlowSink implements Sink {
  readonly name = "slow";
  private readonly inner: Sink;
  private readonly delayMs: number;
  constructor(inner: Sink, delayMs: number) {
    this.inner = inner;
    this.delayMs = delayMs;
  }
  async write(batch: Batch): Promise<void> {
    await new Promise((r) => setTimeout(r, this.delayMs));
    await this.inner.write(batch);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** A sink whose writes wait while it is closed, so a test holds a file's last batch unacknowledged. */
class GatedSink implements Sink {
  readonly name = "gated";
  private readonly inner: Sink;
  private open = true;
  private readonly waiting: (() => void)[] = [];
  constructor(inner: Sink) {
    this.inner = inner;
  }
  /** Writes held now. */
  get held(): number {
    return this.waiting.length;
  }
  /** Writes from now on wait. */
  hold(): void {
    this.open = false;
  }
  /** The writes held go on, and the next ones pass. */
  pass(): void {
    this.open = true;
    for (const release of this.waiting.splice(0)) release();
  }
  async write(batch: Batch): Promise<void> {
    if (!this.open) await new Promise<void>((resolve) => this.waiting.push(resolve));
    await this.inner.write(batch);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

function savedCheckpoints(stateDir: string): FileCheckpoint[] {
  return (
    JSON.parse(readFileSync(join(stateDir, CHECKPOINT_FILE), "utf8")) as { checkpoints: FileCheckpoint[] }
  ).checkpoints;
}

/** A csvlog source from `stateDir` into a local sink, polling fast; `more` adds a logger, an observer. */
function localSource(
  logDir: string,
  stateDir: string,
  sinkDir: string,
  more: Partial<FileSourceOptions> = {},
): FileSource {
  return new FileSource({
    logDir,
    format: "csvlog",
    stateDir,
    sink: new LocalDirSink({ dir: sinkDir }),
    batch: { maxAgeMs: 50 },
    pollIntervalMs: 50,
    ...more,
  });
}
describe("FileSource under directory and file faults", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });
  const workDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-faults-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it("--from end skips only what was there at the very first start, not a file rotated in while stopped", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const sinkDir = join(work, "sink");
    const stateDir = join(work, "state");
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await logSettled(pg.logDir);
    const first = pg.currentLogfiles().csvlog!;
    const skipped = new Set(csvlogKeys(first)); // there at the very first start: `end` skips these
    expect(skipped.size).toBeGreaterThan(10);
    const options = {
      logDir: pg.logDir,
      format: "csvlog" as const,
      stateDir,
      sink: new LocalDirSink({ dir: sinkDir }),
      from: "end" as const,
      batch: { maxAgeMs: 50 },
      pollIntervalMs: 50,
    };
    const once = new FileSource(options);
    await once.start();
    cleanups.push(() => once.stop());
    await waitUntil(
      () => once.status().some((f) => f.path === first && f.read === f.size && f.size > 0),
      10_000,
      () => `not following ${first} from its end: ${JSON.stringify(once.status())}`,
    );
    await once.stop();

    // While the sidecar is stopped, PostgreSQL rotates and writes a new file.
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
    await logSettled(pg.logDir);
    const second = pg.currentLogfiles().csvlog!;
    expect(second).not.toBe(first);
    const secondKeys = csvlogKeys(second);
    expect(secondKeys.length).toBeGreaterThan(500);

    const again = new FileSource({ ...options, sink: new LocalDirSink({ dir: sinkDir }) });
    await again.start();
    cleanups.push(() => again.stop());
    await waitUntil(
      () => shippedKeys(sinkDir).length >= secondKeys.length,
      20_000,
      () =>
        `the file rotated in while stopped was not read from its start: ${JSON.stringify(again.status())}`,
      100,
    );
    await again.stop();
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    // Everything but what was there at the very first start (pg_rotate_logfile()'s own entry, in
    // the first file, came after it).
    expect(new Set(shipped)).toEqual(new Set(writtenKeys(pg.logDir).filter((k) => !skipped.has(k))));
    expect(shipped.filter((k) => skipped.has(k))).toEqual([]);
  });

  it("a log directory that briefly cannot be listed is an error, not an empty directory: nothing is read twice", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const sinkDir = join(work, "sink");
    const logger = capturingLogger();
    let truncations = 0;
    const away = `${pg.logDir}.away`;
    /** Set: the next listing of the directory is followed at once by the directory going away. */
    let goAfterListing = false;
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxAgeMs: 50 },
      pollIntervalMs: 50,
      quietMs: 20,
      logger,
      observer: { truncation: () => truncations++ },
      onListed: () => {
        if (!goAfterListing) return;
        goAfterListing = false;
        renameSync(pg.logDir, away);
      },
    });
    await source.start();
    cleanups.push(() => source.stop());
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
    await logSettled(pg.logDir);
    const before = writtenKeys(pg.logDir);
    // Caught up, and the two rotated files finished and let go (their checkpoints say done).
    await waitUntil(
      () => shippedKeys(sinkDir).length >= before.length && source.status().length === 1,
      30_000,
      () => `not caught up: ${JSON.stringify(source.status())}`,
      100,
    );

    // The directory goes away for a moment (as root, chmod 000 would not stop a listing; a
    // directory renamed away fails readdir with ENOENT just as a remount or a lost mount would),
    // right after a scan has listed it: that scan then finds none of the files it listed (the
    // interleaving that once took every file for deleted, let the finished files' checkpoints go
    // and read them again from 0). The scans after it fail to list the directory.
    const marks = logger.lines.length;
    goAfterListing = true;
    try {
      // Until a scan has failed to list the directory (older code took that for "every file
      // deleted").
      await waitUntil(
        () => logger.lines.slice(marks).some((l) => /cannot be listed/.test(l.msg)),
        10_000,
        () =>
          `the source did not report the failed listing; it logged: ${logger.lines
            .slice(marks)
            .map((l) => l.msg)
            .join(" | ")}`,
        20,
      );
    } finally {
      if (goAfterListing) goAfterListing = false;
      else renameSync(away, pg.logDir);
    }
    const back = logger.lines.length;
    await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
    // A listing that failed is said to work again.
    await waitUntil(
      () => logger.lines.slice(back).some((l) => /listed again/.test(l.msg)),
      10_000,
      () =>
        `the source did not see the directory come back; it logged: ${logger.lines
          .slice(marks)
          .map((l) => l.msg)
          .join(" | ")}`,
      20,
    );
    await logSettled(pg.logDir);
    const written = writtenKeys(pg.logDir);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= written.length,
      30_000,
      () => `behind: ${JSON.stringify(source.status())}`,
      100,
    );
    await source.stop();
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
    expect(truncations).toBe(0);
    // The files a scan listed and then could not find proved nothing: none was taken for deleted.
    expect(logger.lines.filter((l) => /removed or replaced/.test(l.msg))).toEqual([]);
    expect(
      logger.lines.some(
        (l) =>
          l.level === "warn" &&
          (l.obj as { err?: string }).err === "ENOENT" &&
          /cannot be listed/.test(l.msg),
      ),
    ).toBe(true);
    expect(source.health()).toEqual({ unreadable: [] });
  });

  it("a log directory listed empty for a while (a mount gone and back) reads no file twice: known files resume where they were read", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const sinkDir = join(work, "sink");
    const logger = capturingLogger();
    const sink = new GatedSink(new LocalDirSink({ dir: sinkDir }));
    let truncations = 0;
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink,
      batch: { maxAgeMs: 50 },
      pollIntervalMs: 50,
      quietMs: 20,
      logger,
      observer: { truncation: () => truncations++ },
    });
    await source.start();
    cleanups.push(() => source.stop());
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "50"]);
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "20"]);
    await logSettled(pg.logDir);
    const before = writtenKeys(pg.logDir);
    // Caught up, and the two rotated files finished and let go (their checkpoints say done).
    await waitUntil(
      () => shippedKeys(sinkDir).length >= before.length && source.status().length === 1,
      30_000,
      () => `not caught up: ${JSON.stringify(source.status())}`,
      100,
    );

    // The file PostgreSQL writes now has a batch the sink has not acknowledged: its lane cannot
    // settle, so it is still followed (taken for deleted, draining) when the directory is back.
    sink.hold();
    await pg.pgbench(["-n", "-c", "1", "-t", "10"]);
    await waitUntil(
      () => sink.held > 0,
      20_000,
      () => `no write reached the sink: ${JSON.stringify(source.status())}`,
      20,
    );

    // The directory is replaced by an empty one (what an NFS mount gone away leaves: its empty
    // mount point, listed fine), then comes back with every file on the same device and inode.
    const away = `${pg.logDir}.away`;
    const marks = logger.lines.length;
    renameSync(pg.logDir, away);
    mkdirSync(pg.logDir);
    try {
      await waitUntil(
        () => logger.lines.slice(marks).some((l) => /removed or replaced/.test(l.msg)),
        10_000,
        () =>
          `the source did not take the file for removed; it logged: ${logger.lines
            .slice(marks)
            .map((l) => l.msg)
            .join(" | ")}`,
        20,
      );
    } finally {
      rmdirSync(pg.logDir);
      renameSync(away, pg.logDir);
    }
    const back = logger.lines.length;
    // A scan has seen the files again (before the fix: each read again from 0, the current one
    // under a second id since its old self still drained).
    await waitUntil(
      () => logger.lines.slice(back).some((l) => /back in the directory|following file/.test(l.msg)),
      10_000,
      () =>
        `the source did not see the directory come back; it logged: ${logger.lines
          .slice(marks)
          .map((l) => l.msg)
          .join(" | ")}`,
      20,
    );
    sink.pass();
    await pg.pgbench(["-n", "-c", "1", "-t", "10"]);
    await logSettled(pg.logDir);
    const written = writtenKeys(pg.logDir);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= written.length,
      30_000,
      () => `behind: ${JSON.stringify(source.status())}`,
      100,
    );
    await source.stop();
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
    expect(truncations).toBe(0);
    // Each file kept its one id: none was taken for another file starting with the same line.
    expect(logger.lines.filter((l) => /same line as another log file/.test(l.msg))).toEqual([]);
    // The file still draining was known again by its inode, the finished ones by their checkpoints.
    const backs = logger.lines.slice(back).filter((l) => /back in the directory/.test(l.msg));
    expect(backs.filter((l) => /checkpoint is taken up again/.test(l.msg))).toHaveLength(2);
    expect(backs.filter((l) => /reading on|after it was drained/.test(l.msg))).toHaveLength(1);
  });

  it("a file read to its last seen end and deleted while stopped is a gap of unknown length: what PostgreSQL wrote meanwhile is unknown", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const stateDir = join(work, "state");
    await pg.query("SELECT 'before the stop' AS marker");
    await logSettled(pg.logDir);
    const [file] = pg.logFiles().filter((f) => f.endsWith(".csv"));
    const first = localSource(pg.logDir, stateDir, join(work, "sink-first"));
    await first.start();
    cleanups.push(() => first.stop());
    const size = statSync(file!).size;
    await waitUntil(
      () => savedCheckpoints(stateDir).some((c) => c.path === file && c.position === size),
      20_000,
      () => `not read to its end: ${JSON.stringify(savedCheckpoints(stateDir))}`,
      50,
    );
    await first.stop();

    // While stopped: PostgreSQL moves on to a new file and the one read is deleted.
    await pg.rotate();
    await pg.query("SELECT 'after the stop' AS marker");
    await logSettled(pg.logDir);
    unlinkSync(file!);
    const lost: { file: string; from: number; to: number; reason: string }[] = [];
    const logger = capturingLogger();
    const second = localSource(pg.logDir, stateDir, join(work, "sink-second"), {
      logger,
      observer: { dataLost: (f, from, to, reason) => lost.push({ file: f, from, to, reason }) },
    });
    await second.start();
    cleanups.push(() => second.stop());
    await waitUntil(
      () => lost.length > 0,
      10_000,
      () => "no range given up was reported",
      20,
    );
    await second.stop();
    expect(lost).toEqual([{ file, from: size, to: size, reason: "deleted" }]);
    expect(logger.lines.some((l) => l.level === "warn" && /while the source was stopped/.test(l.msg))).toBe(
      true,
    );
  });

  it("data given up because a file was deleted or truncated while stopped is counted and logged with its range", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    cleanups.push(() => pg.stop());
    const work = workDir();
    const stateDir = join(work, "state");
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", "1", "-t", "1500"]); // ~3 MB: read well behind a slow sink
    await pg.rotate();
    await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
    await logSettled(pg.logDir);
    const [older, newer] = pg.logFiles().filter((f) => f.endsWith(".csv"));
    expect(newer).toBeDefined();

    const slowSinkDir = join(work, "sink-first");
    const first = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir,
      sink: new SlowSink(new LocalDirSink({ dir: slowSinkDir }), 300),
      batch: { maxEntries: 100, maxAgeMs: 50 },
    });
    await first.start();
    cleanups.push(() => first.stop());
    await waitUntil(
      () => shippedKeys(slowSinkDir).length > 0,
      20_000,
      () => "nothing acknowledged",
      50,
    );
    await first.stop();
    const saved = new Map(savedCheckpoints(stateDir).map((c) => [c.path, c]));
    const olderCheckpoint = saved.get(older!)!;
    expect(olderCheckpoint.position).toBeLessThan(olderCheckpoint.size!); // really stopped behind

    // While stopped: the older file is deleted, the newer one truncated (PostgreSQL writes on into it).
    unlinkSync(older!);
    truncateSync(newer!, 0);
    await pg.query("SELECT 'after truncation' AS marker");
    await logSettled(pg.logDir);

    const logger = capturingLogger();
    const lost: { file: string; from: number; to: number; reason: string }[] = [];
    const truncated: string[] = [];
    const second = localSource(pg.logDir, stateDir, join(work, "sink-second"), {
      logger,
      observer: {
        dataLost: (file, from, to, reason) => lost.push({ file, from, to, reason }),
        truncation: (file) => truncated.push(file),
      },
    });
    await second.start();
    cleanups.push(() => second.stop());
    await waitUntil(
      () => lost.length >= 2,
      10_000,
      () => `given-up ranges reported: ${JSON.stringify(lost)}`,
      20,
    );
    await second.stop();
    const expected = [older!, newer!].map((file) => ({
      file,
      from: saved.get(file)!.position,
      to: saved.get(file)!.size!,
      reason: file === older ? "deleted" : "truncated",
    }));
    expect(lost.sort((a, b) => a.file.localeCompare(b.file))).toEqual(expected);
    expect(truncated).toEqual([newer]); // the deleted file is not a truncation; the truncated one is
    for (const range of expected)
      expect(
        logger.lines.some(
          (l) =>
            l.level === "warn" &&
            (l.obj as { file?: string }).file === range.file &&
            (l.obj as { from?: number }).from === range.from &&
            (l.obj as { to?: number }).to === range.to,
        ),
      ).toBe(true);
    // Reported once: the next start has nothing left to give up.
    expect(savedCheckpoints(stateDir).some((c) => c.path === older)).toBe(false);
  });
});
