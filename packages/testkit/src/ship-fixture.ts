/**
 * Archives made by the real pipeline, for the tests of what reads an archive (compact, query): a
 * committed fixture log (written by a real PostgreSQL + pgaudit) followed by a FileSource and
 * shipped by a sink, in small batches so an hour holds many landing objects. testkit depends on
 * no package of ours, so the test's own helper hands in FileSource and LocalDirSink:
 * `export const shipFixture = fixtureShipper(FileSource, LocalDirSink);`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot } from "./paths.ts";
import { waitUntil } from "./process.ts";

/** The committed fixture logs (fixtures/cases/<case>/postgresql.<ext>.gz). */
export const FIXTURE_CASES: string = join(repoRoot(), "fixtures", "cases");

/** A clock far past every fixture's hour: every hour is closed. */
export const LATER: number = Date.parse("2030-01-01T00:00:00Z");

/** The options shipFixture gives a FileSource (@auditpipe/tail's takes them all). */
export interface FixtureSourceOptions<Sink, Format> {
  logDir: string;
  format: Format;
  pattern: string;
  stateDir: string;
  sink: Sink;
  batch: { maxEntries: number };
  observer: { sinkAck(sink: string, entries: number): void; attempt(): void };
}

/** What shipFixture uses of a FileSource. */
export interface FixtureSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): { read: number }[];
}

export interface ShipFixtureOptions<Format> {
  /** The fixture's format; default csvlog. */
  format?: Format;
  /** Entries per landing object; default 100. */
  maxEntries?: number;
  /**
   * Moves every timestamp of the real log by whole hours (same byte lengths), for archives that
   * span several hours: a fixture holds one.
   */
  shiftHours?: number;
}

/**
 * shipFixture(fixture, dir | sink, options): ships `fixture` (a path under fixtures/cases) into
 * the local-dir archive `dir`, or through `sink`; resolves with the entries acknowledged and the
 * rows they make in the audit view (statements refused before pgAudit logged them ship as
 * attempts, lines of their own).
 */
export function fixtureShipper<Sink, Format>(
  FileSource: new (options: FixtureSourceOptions<Sink, Format>) => FixtureSource,
  LocalDirSink: new (options: { dir: string }) => Sink,
): (
  fixture: string,
  dir: string | Sink,
  options?: ShipFixtureOptions<Format>,
) => Promise<{ entries: number; rows: number }> {
  return async (fixture, dir, options = {}) => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-fixture-ship-"));
    try {
      const logDir = join(work, "log");
      mkdirSync(logDir);
      const name = basename(fixture).replace(/\.gz$/, "");
      let raw: Buffer = gunzipSync(readFileSync(join(FIXTURE_CASES, fixture)));
      if (options.shiftHours) raw = shiftHours(raw, options.shiftHours);
      writeFileSync(join(logDir, name), raw);
      let acked = 0;
      let attempts = 0;
      const source = new FileSource({
        logDir,
        format: options.format ?? ("csvlog" as Format),
        pattern: name,
        stateDir: join(work, "state"),
        sink: typeof dir === "string" ? new LocalDirSink({ dir }) : dir,
        batch: { maxEntries: options.maxEntries ?? 100 },
        observer: {
          sinkAck: (_sink, entries) => {
            acked += entries;
          },
          attempt: () => {
            attempts++;
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
      return { entries: acked, rows: acked + attempts };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  };
}

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
