/**
 * Coverage events taken while the manifest journal cannot be opened (the store down at start-up):
 * appended and fsynced to a file in the manifest state directory, and handed to the journal once
 * it opens. A source that waits for its events to be durable before its batch is acknowledged
 * (and spooled) must not wait for the store: the spool exists for exactly that outage.
 */
import { mkdir, open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fsyncDir } from "../durable-write.ts";
import { coverageEventProblem } from "./_format.ts";
import type { CoverageEvent } from "./types.ts";

export const COVERAGE_BACKLOG_FILE = "coverage-backlog.ndjson";

/** Where the backlog's events go once the journal opens (ManifestJournal fits). */
export interface CoverageSink {
  recordCoverage(event: CoverageEvent): Promise<void>;
}

/**
 * Serialises every recording: before `drainInto` an event is appended to the backlog file; after
 * it, it goes straight to the journal. An event handed over twice (a crash between the hand-over
 * and the file's removal) is listed once, as the journal lists the same event once per hour.
 */
export class CoverageBacklog {
  private readonly path: string;
  private readonly dir: string;
  private target: CoverageSink | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Lines appended by this process: the same event again (a source, per batch) is kept once. */
  private readonly written = new Set<string>();

  constructor(dir: string) {
    this.dir = dir;
    this.path = join(dir, COVERAGE_BACKLOG_FILE);
  }

  /** Resolves once the event is durable: in the journal, or fsynced to the backlog. */
  record(event: CoverageEvent): Promise<void> {
    const problem = coverageEventProblem(event);
    if (problem) return Promise.reject(new TypeError(`recordCoverage: ${problem}`));
    return this.serial(async () => {
      if (this.target) return this.target.recordCoverage(event);
      const line = `${JSON.stringify(event)}\n`;
      if (this.written.has(line)) return;
      await mkdir(this.dir, { recursive: true });
      const created = await open(this.path, "a+");
      try {
        // A line an earlier process left torn (a crash mid-append) ends before this one starts.
        const { size } = await created.stat();
        const last = Buffer.alloc(1);
        if (this.written.size === 0 && size > 0) await created.read(last, 0, 1, size - 1);
        await created.appendFile(
          size > 0 && this.written.size === 0 && last[0] !== 0x0a ? `\n${line}` : line,
        );
        await created.sync();
      } finally {
        await created.close();
      }
      if (this.written.size === 0) await fsyncDir(this.dir); // the file's first line: its name too
      this.written.add(line);
    });
  }

  /**
   * Hands what the backlog holds (this run's and an earlier run's) to `target`, removes the file,
   * and sends every later event straight there. A line torn by a crash mid-append is skipped.
   */
  drainInto(target: CoverageSink): Promise<{ events: number; skipped: number }> {
    return this.serial(async () => {
      const text = await readFile(this.path, "utf8").catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return "";
        throw error;
      });
      let events = 0;
      let skipped = 0;
      for (const line of text.split("\n")) {
        if (line === "") continue;
        let event: CoverageEvent;
        try {
          event = JSON.parse(line) as CoverageEvent;
        } catch {
          skipped++;
          continue;
        }
        if (coverageEventProblem(event)) {
          skipped++;
          continue;
        }
        await target.recordCoverage(event);
        events++;
      }
      if (text !== "") await rm(this.path, { force: true });
      this.written.clear();
      this.target = target;
      return { events, skipped };
    });
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
