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
import { LocalDirSink, type Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";

export const FIXTURES = join(repoRoot(), "fixtures", "cases");

/**
 * Ships `fixture` (a path under fixtures/cases) into the local-dir archive `dir`, or through `sink`;
 * resolves with the entries acknowledged. `shiftHours` moves every timestamp of the real log by
 * whole hours (same byte lengths), for archives that span several hours: a fixture holds one.
 */
export async function shipFixture(
  fixture: string,
  dir: string | Sink,
  options: {
    format?: LogFormat;
    maxEntries?: number;
    shiftHours?: number;
    /** Filled with the attempts shipped (refused statements: rows of their own beside the entries). */
    counts?: { attempts: number };
  } = {},
): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-ship-"));
  try {
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const name = basename(fixture).replace(/\.gz$/, "");
    let raw: Buffer = gunzipSync(readFileSync(join(FIXTURES, fixture)));
    if (options.shiftHours) raw = shiftHours(raw, options.shiftHours);
    writeFileSync(join(logDir, name), raw);
    let acked = 0;
    const source = new FileSource({
      logDir,
      format: options.format ?? "csvlog",
      pattern: name,
      stateDir: join(work, "state"),
      sink: typeof dir === "string" ? new LocalDirSink({ dir }) : dir,
      batch: { maxEntries: options.maxEntries ?? 100 },
      observer: {
        sinkAck: (_name, entries) => (acked += entries),
        attempt: () => {
          if (options.counts) options.counts.attempts++;
        },
      },
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

/** `YYYY-MM-DD HH:` timestamps (csvlog, stderr) and `YYYY-MM-DDTHH:` ones, moved by `hours`. */
function shiftHours(raw: Buffer, hours: number): Buffer {
  const text = raw
    .toString("latin1")
    .replace(/\b(\d{4}-\d{2}-\d{2})([ T])(\d{2}):/g, (_m, d: string, sep: string, h: string) => {
      const t = new Date(Date.parse(`${d}T${h}:00:00Z`) + hours * 3_600_000).toISOString();
      return `${t.slice(0, 10)}${sep}${t.slice(11, 13)}:`;
    });
  return Buffer.from(text, "latin1");
}
