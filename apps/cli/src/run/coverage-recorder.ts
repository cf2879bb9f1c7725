/**
 * Coverage into the signed manifest: what the sources see of server starts, stops and crashes,
 * audit-setting changes and byte ranges given up goes to the manifest journal
 * (`recordCoverage`) before the range that showed it is acknowledged, and once per source range.
 *
 * Durable: the outcome join reports an event while it reads the record, before the batch holding
 * the record goes to the sink; the sink this wraps awaits every recording started so far before
 * it writes (and so acknowledges) a batch. A crash before that re-reads the range and reports the
 * event again.
 *
 * Once: an event is identified by its source range (file, offset, kind). The journal lists the
 * same event once per hour; a replay that crosses an hour is caught by the offsets already
 * recorded, kept in the state directory after each recording is journaled.
 */
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { StreamEvent } from "@auditpipe/outcome";
import { type Batch, type CoverageEvent, type Sink, writeFileDurably } from "@auditpipe/ship";
import type { Logger } from "pino";
import { PgdataSettingError, readPgdataSetting } from "./pgdata-settings.ts";

/** Where the recorded event ids are kept, in the state directory. */
export const COVERAGE_STATE_FILE = "coverage-recorded.json";

/** How many recorded ids are kept; the oldest go first (a replay re-reads a few batches at most). */
const MAX_REMEMBERED = 10_000;

/** `via` of the pgaudit.log the sidecar was told (--pgaudit-log): the baseline changes are judged against. */
export const CONFIGURED = "configured";

/**
 * The server's pgaudit.log that setting changes are judged against: the one the sidecar was told
 * (--pgaudit-log), else the one --pgdata's configuration files set (pgAudit's default `none` when
 * none does), else unknown. Only a baseline for coverage: roles and databases may override it, so
 * the outcome stage does not take it as every session's value.
 */
export function coverageBaseline(
  config: { pgauditLog?: string | undefined; pgdata?: string | undefined },
  logger: Logger,
): string | undefined {
  if (config.pgauditLog !== undefined || config.pgdata === undefined) return config.pgauditLog;
  try {
    const { value, from } = readPgdataSetting(config.pgdata, "pgaudit.log", "none");
    logger.info({ pgauditLog: value, from }, "pgaudit.log learned from the data directory's configuration");
    return value;
  } catch (error) {
    if (!(error instanceof PgdataSettingError)) throw error;
    logger.warn(
      { reason: error.message },
      "cannot learn pgaudit.log from --pgdata: setting changes are judged without it",
    );
    return undefined;
  }
}

/** The coverage event a stream event is, or null for those that add nothing (a reload's own message). */
export function coverageEventOf(event: StreamEvent, file: string): CoverageEvent | null {
  const { record } = event;
  const at = record.timestamp ?? new Date().toISOString();
  const where = { at, sourceName: basename(file), offset: record.offset };
  switch (event.kind) {
    case "server-start":
      return { kind: "server", event: "start", ...where };
    case "server-stop":
      return { kind: "server", event: "stop", ...where };
    case "server-crash":
      return { kind: "server", event: "crash", ...where };
    case "setting-changed":
      return {
        kind: "setting",
        setting: event.setting,
        ...(event.value === null ? {} : { value: event.value }),
        via: event.via,
        ...where,
      };
    default:
      // server-stop-requested and crash-recovery precede the stop or start that says it;
      // config-reload precedes the setting changes it made.
      return null;
  }
}

/** The source range an event is identified by: a replay of the range yields the same id. */
export function coverageEventId(event: CoverageEvent): string | null {
  switch (event.kind) {
    case "server":
      return `server:${event.sourceName}@${event.offset}:${event.event}`;
    case "setting":
      // What the sidecar was told at its start is recorded once per run (and per hour), not per range.
      if (event.via === CONFIGURED) return null;
      return `setting:${event.sourceName}@${event.offset}:${event.setting}`;
    case "gap":
      return `gap:${event.sourceId ?? event.sourceName}@${event.start}:${event.reason}`;
    default:
      return null; // sources: listed once per hour by the journal, and again in each hour read
  }
}

/** Where events are journaled (S3Archive.recordCoverage). */
export interface CoverageJournal {
  recordCoverage(event: CoverageEvent): Promise<void>;
}

export class CoverageRecorder {
  private readonly recorded: Set<string>;
  private pending: Promise<void>[] = [];
  /** Events whose recording failed: tried again before the next batch is acknowledged. */
  private retry: CoverageEvent[] = [];
  private saving: Promise<void> = Promise.resolve();

  private readonly journal: CoverageJournal;
  private readonly statePath: string;
  private readonly logger: Logger;

  private constructor(journal: CoverageJournal, statePath: string, recorded: string[], logger: Logger) {
    this.journal = journal;
    this.statePath = statePath;
    this.logger = logger;
    this.recorded = new Set(recorded);
  }

  /** Loads the ids recorded by earlier runs from the state directory. */
  static async open(journal: CoverageJournal, stateDir: string, logger: Logger): Promise<CoverageRecorder> {
    const path = join(stateDir, COVERAGE_STATE_FILE);
    const ids = await readFile(path, "utf8").then(
      (text) => {
        const parsed: unknown = JSON.parse(text);
        return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === "string") : [];
      },
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return [];
        throw error;
      },
    );
    return new CoverageRecorder(journal, path, ids, logger);
  }

  /** A server or setting event from a stream (FileSourceOptions.outcome.event). */
  streamEvent(event: StreamEvent, file: string): void {
    const coverage = coverageEventOf(event, file);
    if (coverage) this.record(coverage);
  }

  /** The server's pgaudit.log as the sidecar was told it (--pgaudit-log), at its start. */
  configured(pgauditLog: string): void {
    this.record({
      kind: "setting",
      setting: "pgaudit.log",
      value: pgauditLog,
      via: CONFIGURED,
      at: new Date().toISOString(),
      sourceName: "--pgaudit-log",
      offset: 0,
    });
  }

  /** A byte range given up (FollowObserver.dataLost). */
  dataLost(file: string, from: number, to: number, reason: string): void {
    this.record({
      kind: "gap",
      sourceName: basename(file),
      start: from,
      end: to,
      reason,
      at: new Date().toISOString(),
    });
  }

  /** Journals an event unless its source range was recorded already. */
  record(event: CoverageEvent): void {
    const id = coverageEventId(event);
    if (id !== null && this.recorded.has(id)) return;
    if (id !== null) this.recorded.add(id);
    const done = this.journal.recordCoverage(event).then(
      () => (id === null ? undefined : this.remember()),
      (error: unknown) => {
        if (id !== null) this.recorded.delete(id);
        this.retry.push(event);
        this.logger.error(
          { kind: event.kind, reason: error instanceof Error ? error.message : String(error) },
          "coverage event not journaled yet: tried again before the next batch is acknowledged",
        );
      },
    );
    this.pending.push(done);
  }

  /** Resolves once every event reported so far is journaled; rejects if one could not be. */
  async settled(): Promise<void> {
    for (const event of this.retry.splice(0)) this.record(event);
    const pending = this.pending;
    this.pending = [];
    await Promise.all(pending);
    if (this.retry.length > 0)
      throw new Error(`${this.retry.length} coverage event(s) could not be journaled: the batch waits`);
  }

  /** The sink that acknowledges a batch only after the events its records showed are journaled. */
  wrap(sink: Sink): Sink {
    return {
      name: sink.name,
      write: async (batch: Batch, release?: () => void) => {
        this.record({
          kind: "source",
          sourceId: batch.range.sourceId,
          sourceName: basename(batch.range.sourceName),
        });
        await this.settled();
        await sink.write(batch, release);
      },
      close: () => sink.close(),
    };
  }

  /** Saves the recorded ids (the newest MAX_REMEMBERED), one save at a time. */
  private remember(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const ids = [...this.recorded].slice(-MAX_REMEMBERED);
      await writeFileDurably(this.statePath, JSON.stringify(ids));
    });
    return this.saving;
  }
}
