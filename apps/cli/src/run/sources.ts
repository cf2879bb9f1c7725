import { join } from "node:path";
import type { LiveMeter } from "@auditpipe/meter";
import { type LogFormat, ParseErrorCode, sessionClasses } from "@auditpipe/parse";
import type { RedactionMode, Sink } from "@auditpipe/ship";
import { FileSource, type FileSourceOptions, type SourceObserver } from "@auditpipe/tail";
import type { Logger } from "pino";
import type { RunConfig } from "./config.ts";
import type { CoverageRecorder } from "./coverage-recorder.ts";
import type { PipelineTap } from "./pipeline-tap.ts";
import { SYSLOG_STATE_DIR, type SyslogIntake, startSyslogIntake } from "./syslog-intake.ts";

/** How often the syslog receiver's counters are copied into the meter. */
const SYSLOG_STATS_MS = 200;

/** What every source of the sidecar shares: the one sink, redaction, batch limits and the tap. */
export interface SourceWiring {
  config: RunConfig;
  /** log_line_prefix for stderr and syslog. */
  prefix: string | undefined;
  sink: Sink;
  redact: RedactionMode | undefined;
  tap: PipelineTap;
  /** Journals coverage events into the manifest (S3 sinks); `sink` is then already wrapped by it. */
  coverage: CoverageRecorder | undefined;
  logger: Logger;
}

function batchLimits(config: RunConfig): { maxEntries: number; maxBytes: number; maxAgeMs: number } {
  return {
    maxEntries: config.batchMaxEntries,
    maxBytes: config.batchMaxBytes,
    maxAgeMs: config.batchMaxAgeMs,
  };
}

/**
 * The outcome stage's options: every session's transaction control is known to be logged when the
 * server's pgaudit.log (as told) has misc; otherwise it is learnt per session, user and database.
 */
function outcomeOptions(w: SourceWiring): NonNullable<FileSourceOptions["outcome"]> {
  const { config, coverage } = w;
  return {
    ...(config.pgauditLog === undefined ? {} : { miscLogged: sessionClasses(config.pgauditLog).has("MISC") }),
    ...(coverage ? { event: (event, file) => coverage.streamEvent(event, file) } : {}),
  };
}

/** The tap's observer, with byte ranges given up also journaled as coverage gaps. */
function sourceObserver(w: SourceWiring): SourceObserver {
  const { observer } = w.tap;
  const { coverage } = w;
  if (!coverage) return observer;
  return {
    ...observer,
    dataLost(file, from, to, reason) {
      coverage.dataLost(file, from, to, reason);
      observer.dataLost?.(file, from, to, reason);
    },
  };
}

/**
 * The file pipeline over the log directory: follower → lane (parse, decode, tap, redact, encode,
 * outcome, batch) → delivery → sink. `created` gets the source before it starts, so a stop during its
 * start-up stops it too.
 */
export async function startFileSource(
  w: SourceWiring,
  stream: { logDir: string; format: LogFormat | "auto"; prefix: FileSourceOptions["prefix"] },
  created: (files: FileSource) => void,
): Promise<FileSource> {
  const { config } = w;
  const files = new FileSource({
    logDir: stream.logDir,
    format: stream.format,
    ...(config.pattern ? { pattern: config.pattern } : {}),
    ...(stream.prefix !== undefined ? { prefix: stream.prefix } : {}),
    stateDir: config.state,
    sink: w.sink,
    ...(w.redact ? { redact: w.redact } : {}),
    from: config.from,
    pollIntervalMs: config.pollIntervalMs,
    batch: batchLimits(config),
    outcome: outcomeOptions(w),
    observer: sourceObserver(w),
    logger: w.logger,
  });
  created(files);
  w.tap.sourceHealth.follow(files);
  await files.start();
  w.logger.info(
    { logDir: stream.logDir, format: stream.format, sink: config.sink, state: config.state },
    "following log files",
  );
  return files;
}

/**
 * The syslog intake (receiver, journal, and a file pipeline over the journal), and a timer that
 * copies the receiver's counters into the meter.
 */
export async function startSyslog(
  w: SourceWiring,
  meter: LiveMeter,
): Promise<{ intake: SyslogIntake; ticker: NodeJS.Timeout }> {
  const { config, logger, tap } = w;
  /** Messages with a chunk missing since the last tick, per listener: journaled as coverage. */
  const incomplete = new Map<string, number>();
  const intake = await startSyslogIntake({
    listen: config.syslog,
    prefix: w.prefix,
    stateDir: config.state,
    maxBytes: config.syslogJournalMaxBytes,
    tcpIdleTimeoutMs: config.syslogTcpIdleTimeoutMs,
    sink: w.sink,
    redact: w.redact,
    batch: batchLimits(config),
    pollIntervalMs: config.pollIntervalMs,
    outcome: outcomeOptions(w),
    observer: sourceObserver(w),
    onMalformed(listener, error) {
      if (error.code === ParseErrorCode.SYSLOG_INCOMPLETE)
        incomplete.set(listener, (incomplete.get(listener) ?? 0) + 1);
      meter.malformed(listener, 1);
      tap.malformedInput.malformed(listener, error.code);
      logger.debug(
        { source: listener, code: error.code, size: error.size },
        "malformed syslog input skipped",
      );
    },
    logger,
  });
  const ticker = setInterval(() => {
    for (const [listener, messages] of incomplete)
      w.coverage?.record({ kind: "incomplete-syslog", listener, messages, at: new Date().toISOString() });
    incomplete.clear();
    const s = intake.receiverStats();
    meter.syslogStats({
      received: s.received,
      reassembled: s.reassembled,
      incomplete: s.incomplete,
      malformed: s.malformed,
    });
  }, SYSLOG_STATS_MS);
  logger.info(
    { listen: intake.addresses.map((a) => a.url), journal: join(config.state, SYSLOG_STATE_DIR) },
    "receiving syslog into the journal",
  );
  return { intake, ticker };
}
