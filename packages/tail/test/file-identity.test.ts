import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource, type SourceLogger } from "@auditpipe/tail";
import {
  duplicates,
  type PostgresCluster,
  shippedRecords,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

const PREFIX = "[%p] ";
/** What `[%p] ` makes of a pgAudit line: the oracle for the stderr files below. */
const AUDIT_LINE = /^\[\d+\] LOG: {2}AUDIT: /;

/** `file@offset` of every audit record PostgreSQL wrote to the stderr files of a log dir. */
function writtenAuditRecords(logDir: string): string[] {
  const keys: string[] = [];
  for (const name of readdirSync(logDir).filter((n) => n.endsWith(".log"))) {
    const path = join(logDir, name);
    const bytes = readFileSync(path);
    let offset = 0;
    while (offset < bytes.length) {
      const end = bytes.indexOf(0x0a, offset);
      const stop = end < 0 ? bytes.length : end + 1;
      if (AUDIT_LINE.test(bytes.subarray(offset, stop).toString("utf8"))) keys.push(`${path}@${offset}`);
      offset = stop;
    }
  }
  return keys;
}

function shippedAuditRecords(sinkDir: string): string[] {
  return shippedRecords<{ source: { file: string; offset: number } }>(sinkDir).map(
    (r) => `${r.source.file}@${r.source.offset}`,
  );
}

function firstLine(path: string): string {
  const text = readFileSync(path, "utf8");
  return text.slice(0, text.indexOf("\n") + 1);
}

/**
 * A new log file whose first line repeats: with log_checkpoints and a prefix of only the PID, a
 * CHECKPOINT right after a rotation makes the checkpointer (same PID every time) write
 * `[PID] LOG:  checkpoint starting: immediate force wait` first; pgbench then writes audit entries.
 */
async function fileStartingWithCheckpoint(pg: PostgresCluster): Promise<string> {
  await pg.rotate();
  await pg.query("CHECKPOINT");
  await pg.pgbench(["-n", "-c", "1", "-t", "50"]);
  return pg.currentLogfiles().stderr!;
}

describe("FileSource and files that start with the same line", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("follows two distinct files with the same first line as two files, also across a restart", async () => {
    const pg = await startPostgres({
      logDestination: ["stderr"],
      logLinePrefix: PREFIX,
      settings: { log_checkpoints: true },
      // Not MISC: the CHECKPOINT statement itself is not audited, so the checkpointer's line comes first.
      pgaudit: { log: "write,ddl" },
    });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-identity-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    const second = await fileStartingWithCheckpoint(pg);
    const third = await fileStartingWithCheckpoint(pg);
    expect(firstLine(third)).toBe(firstLine(second)); // the collision this test is about
    expect(firstLine(second)).toMatch(/^\[\d+\] LOG: {2}checkpoint starting/);

    const warnings: string[] = [];
    const logger: SourceLogger = { info() {}, warn: (_o, msg) => warnings.push(msg), error() {} };
    const options = {
      logDir: pg.logDir,
      format: "stderr" as const,
      prefix: PREFIX,
      stateDir: join(work, "state"),
      batch: { maxAgeMs: 50 },
      pollIntervalMs: 50,
      logger,
    };
    const caughtUp = async (source: FileSource): Promise<void> => {
      const written = writtenAuditRecords(pg.logDir);
      await waitUntil(
        () => shippedAuditRecords(sinkDir).length >= written.length,
        20_000,
        () =>
          `shipped ${shippedAuditRecords(sinkDir).length} of ${written.length}: ${JSON.stringify(source.status())}`,
        100,
      );
      await source.stop();
      const shipped = shippedAuditRecords(sinkDir);
      expect(duplicates(shipped)).toEqual([]);
      expect(new Set(shipped)).toEqual(new Set(written));
    };

    const first = new FileSource({ ...options, sink: new LocalDirSink({ dir: sinkDir }) });
    await first.start();
    cleanups.push(() => first.stop());
    await caughtUp(first);
    expect(warnings.some((w) => /starts with the same line as another log file/.test(w))).toBe(true);

    // While stopped, a fourth file with the same first line; the other two are still there.
    const fourth = await fileStartingWithCheckpoint(pg);
    expect(firstLine(fourth)).toBe(firstLine(second));
    const again = new FileSource({ ...options, sink: new LocalDirSink({ dir: sinkDir }) });
    await again.start();
    cleanups.push(() => again.stop());
    await caughtUp(again);
  });
});
