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
      await mkdir(this.dir, { recursive: true });
      const created = await open(this.path, "a");
      try {
        await created.appendFile(`${JSON.stringify(event)}\n`);
        await created.sync();
      } finally {
        await created.close();
      }
      await fsyncDir(this.dir);
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
