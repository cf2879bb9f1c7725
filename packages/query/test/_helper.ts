/**
 * Archives made by the real pipeline: a committed fixture log (written by a real PostgreSQL +
 * pgaudit) followed by FileSource and shipped by LocalDirSink, in small batches so an hour holds
 * many landing objects.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { LogFormat } from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";

export const FIXTURES = join(repoRoot(), "fixtures", "cases");

/** Ships `fixture` (a path under fixtures/cases) into the local-dir archive `dir`; resolves with the entries acknowledged. */
export async function shipFixture(
  fixture: string,
  dir: string,
  options: { format?: LogFormat; maxEntries?: number } = {},
): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-ship-"));
  try {
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const name = basename(fixture).replace(/\.gz$/, "");
    const raw = gunzipSync(readFileSync(join(FIXTURES, fixture)));
    writeFileSync(join(logDir, name), raw);
    let acked = 0;
    const source = new FileSource({
      logDir,
      format: options.format ?? "csvlog",
      pattern: name,
      stateDir: join(work, "state"),
      sink: new LocalDirSink({ dir }),
      batch: { maxEntries: options.maxEntries ?? 100 },
      observer: { sinkAck: (_name, entries) => (acked += entries) },
    });
    await source.start();
    await waitUntil(
      () => source.status().some((f) => f.read >= raw.length),
      60_000,
      () => `the source did not read ${fixture} to its end`,
    );
    await source.stop();
    return acked;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A clock far past every fixture's hour: every hour is closed. */
export const LATER = Date.parse("2030-01-01T00:00:00Z");
