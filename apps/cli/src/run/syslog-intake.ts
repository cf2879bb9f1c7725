import { join } from "node:path";
import { DEFAULT_PREFIX, type MalformedRecord, ParseErrorCode } from "@auditpipe/parse";
import type { RedactionMode, Sink } from "@auditpipe/ship";
import {
  type BatchLimits,
  FileSource,
  type FileSourceOptions,
  type SourceLogger,
  type SourceObserver,
  SyslogJournal,
  type SyslogJournalStats,
  type SyslogSource,
  type SyslogSourceStats,
  startSyslogSource,
} from "@auditpipe/tail";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * Syslog into the sidecar: the receiver appends each PostgreSQL message it rebuilt to a journal in
 * the state directory, and a FileSource follows the journal like any log directory (checkpoints,
 * acknowledgements, the sink's backoff); segments it has finished are deleted. While the journal is
 * full the receiver is paused: TCP is not read, UDP is dropped and counted.
 *
 *   <state>/syslog/journal/<segment>.log   the journal (stderr layout, see @auditpipe/tail)
 *   <state>/syslog/checkpoints.json        the follower's checkpoints
 */
export const SYSLOG_STATE_DIR = "syslog";
const JOURNAL_DIR = "journal";
/** The journal's segments are named `<16 digits>.log`. */
const SEGMENT_PATTERN = "*.log";
/**
 * A message whose process logs nothing more is complete (and journaled) 0.5 to 1 s after its last
 * chunk. Until then it is only in memory, so this bounds what a kill -9 loses besides the commit
 * window; PostgreSQL sends a message's chunks in one burst, so a second is still far more than
 * the gap between them (SyslogSource's own default, 4 s, holds messages four times as long).
 */
const MESSAGE_COMPLETE_MS = 1_000;

export interface SyslogIntakeOptions {
  listen: string[];
  /** log_line_prefix of the messages; PostgreSQL's default when undefined. */
  prefix: string | undefined;
  stateDir: string;
  /** The journal's size limit (segments plus what waits for its commit). */
  maxBytes: number;
  /** A TCP connection silent this long is closed (syslogTcpIdleTimeoutMs). */
  tcpIdleTimeoutMs: number;
  sink: Sink;
  redact?: RedactionMode | undefined;
  batch: BatchLimits;
  pollIntervalMs: number;
  /** The sidecar's observer: the follower reports to it as the file source does. */
  observer: SourceObserver;
  /** The outcome stage's options, as the file source gets them. */
  outcome?: FileSourceOptions["outcome"];
  /** Input the receiver could not rebuild into a message (framing, a missing chunk, a foreign line layout). */
  onMalformed: (listener: string, error: MalformedRecord) => void;
  logger: SourceLogger;
}

export interface SyslogIntake {
  readonly addresses: { url: string; port: number }[];
  receiverStats(): SyslogSourceStats;
  journalStats(): SyslogJournalStats;
  /** Why syslog is not ready (the journal is full), if it is not. */
  problem(): string | undefined;
  /** Stops receiving, commits the journal, then stops the follower (waiting at most `waitMs` for the sink). */
  stop(waitMs: number): Promise<void>;
}

export async function startSyslogIntake(options: SyslogIntakeOptions): Promise<SyslogIntake> {
  const { logger } = options;
  const checkpointDir = join(options.stateDir, SYSLOG_STATE_DIR);
  let source: SyslogSource | undefined;
  const journal = await openJournal(options, checkpointDir, () => source);
  const follower = followJournal(options, checkpointDir, journal);
  try {
    await follower.start();
    source = await startReceiver(options, journal);
  } catch (error) {
    await follower.stop(0).catch(() => {});
    await journal.close();
    throw error;
  }
  const receiver = source;
  if (journal.full) receiver.pause(); // full already at start: the follower must make room first
  const { tcpConnectionLimit } = receiver.stats();
  if (options.listen.some((url) => url.startsWith("tcp:")))
    logger.info(
      { maxConnections: tcpConnectionLimit },
      "syslog TCP connection limit (from the open-file limit)",
    );
  const losses = watchReceiverLosses(receiver, logger);

  return {
    addresses: receiver.addresses,
    receiverStats: () => receiver.stats(),
    journalStats: () => journal.stats(),
    problem() {
      const s = journal.stats();
      return s.full
        ? `syslog journal full (${s.bytes} of ${s.maxBytes} bytes): TCP senders held back, UDP dropped`
        : undefined;
    },
    async stop(waitMs) {
      clearInterval(losses);
      await receiver.close(); // completes the messages still open, into the journal
      await journal.close();
      await follower.stop(waitMs);
    },
  };
}

/**
 * The journal in `<state>/syslog/journal`; while it is full the receiver (`source()`, not yet
 * started when the journal opens) is paused.
 */
function openJournal(
  options: SyslogIntakeOptions,
  checkpointDir: string,
  source: () => SyslogSource | undefined,
): Promise<SyslogJournal> {
  const { logger } = options;
  return SyslogJournal.open({
    dir: join(checkpointDir, JOURNAL_DIR),
    checkpointDir,
    maxBytes: options.maxBytes,
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    onFull(full) {
      if (full) {
        source()?.pause();
        logger.warn(
          { maxBytes: options.maxBytes },
          "syslog journal full: TCP senders are held back and UDP is dropped until the sink catches up",
        );
      } else {
        source()?.resume();
        logger.info({ maxBytes: options.maxBytes }, "syslog journal has room again: receiving");
      }
    },
    onError(error, retry) {
      logger.error({ err: describe(error), ...retry }, "syslog journal write failed; retrying");
    },
  });
}

/** The FileSource that ships the journal's segments, releasing and deleting those it has finished. */
function followJournal(
  options: SyslogIntakeOptions,
  checkpointDir: string,
  journal: SyslogJournal,
): FileSource {
  const { logger, observer } = options;
  return new FileSource({
    logDir: journal.dir,
    format: "stderr",
    pattern: SEGMENT_PATTERN,
    prefix: options.prefix ?? DEFAULT_PREFIX,
    stateDir: checkpointDir,
    sink: options.sink,
    ...(options.redact ? { redact: options.redact } : {}),
    from: "beginning",
    pollIntervalMs: options.pollIntervalMs,
    batch: options.batch,
    ...(options.outcome ? { outcome: options.outcome } : {}),
    observer: {
      ...observer,
      fileGone(file) {
        observer.fileGone?.(file);
        journal.release(file);
      },
      checkpointSaved() {
        observer.checkpointSaved?.();
        journal
          .collect()
          .catch((error: unknown) =>
            logger.warn({ err: describe(error) }, "could not delete an acknowledged syslog journal segment"),
          );
      },
    },
    logger,
  });
}

/** The listeners, each rebuilt message appended to the journal (one not matching the prefix reported as malformed). */
function startReceiver(options: SyslogIntakeOptions, journal: SyslogJournal): Promise<SyslogSource> {
  return startSyslogSource({
    listen: options.listen,
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    flushAfterMs: MESSAGE_COMPLETE_MS,
    tcpIdleTimeoutMs: options.tcpIdleTimeoutMs,
    onMessage(message, from) {
      if (!journal.append(message.lines))
        options.onMalformed(from.name, {
          code: ParseErrorCode.PREFIX_MISMATCH,
          reason: "message does not start with log_line_prefix",
          offset: from.offset,
          size: message.size,
        });
    },
    onMalformed: (error, listener) => options.onMalformed(listener, error),
  });
}

/** How often the receiver's losses are looked for and, if any grew, logged (once per period at most). */
const LOSS_LOG_MS = 10_000;
/** How often the losses are looked at: the first one is logged within a second of it. */
const LOSS_CHECK_MS = 1_000;

/**
 * Logs at warn, at most once per LOSS_LOG_MS, TCP connections the cap refused and UDP datagrams
 * the kernel dropped since the last time (both are also metrics). Checked every second, so the
 * first loss after a quiet spell is logged at once rather than up to LOSS_LOG_MS later.
 */
function watchReceiverLosses(receiver: SyslogSource, logger: SourceLogger): NodeJS.Timeout {
  let refused = 0;
  let kernelDropped = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  const timer = setInterval(() => {
    const now = Date.now();
    // Within LOSS_LOG_MS of the last warning the counts keep adding up for the next one.
    if (now - loggedAt < LOSS_LOG_MS) return;
    const s = receiver.stats();
    if (s.tcpRefused > refused) {
      logger.warn(
        { refused: s.tcpRefused - refused, open: s.tcpConnections, maxConnections: s.tcpConnectionLimit },
        "syslog TCP connections refused: the connection limit is reached (idle ones are closed after syslogTcpIdleTimeoutMs)",
      );
      loggedAt = now;
    }
    if (s.udpKernelDropped > kernelDropped) {
      logger.warn(
        { dropped: s.udpKernelDropped - kernelDropped, receiveBufferBytes: s.udpReceiveBufferBytes },
        "syslog UDP datagrams dropped by the kernel: the receive buffer was full (raise net.core.rmem_max, or use TCP)",
      );
      loggedAt = now;
    }
    refused = s.tcpRefused;
    kernelDropped = s.udpKernelDropped;
  }, LOSS_CHECK_MS);
  timer.unref();
  return timer;
}

/** The syslog journal's metrics; registered whether syslog is received or not (0 then). */
export function registerSyslogMetrics(registry: Registry, intake: () => SyslogIntake | undefined): void {
  new Gauge({
    name: "auditpipe_syslog_journal_bytes",
    help: "Bytes in the syslog journal: segments not yet acknowledged and deleted, plus messages waiting for their commit.",
    registers: [registry],
    collect() {
      this.set(intake()?.journalStats().bytes ?? 0);
    },
  });
  new Gauge({
    name: "auditpipe_syslog_journal_limit_bytes",
    help: "The syslog journal's size limit (syslogJournalMaxBytes); at it, TCP is not read and UDP is dropped.",
    registers: [registry],
    collect() {
      this.set(intake()?.journalStats().maxBytes ?? 0);
    },
  });
  new Gauge({
    name: "auditpipe_syslog_journal_full",
    help: "1 while the syslog journal is full: TCP senders are held back, UDP datagrams are dropped.",
    registers: [registry],
    collect() {
      this.set(intake()?.journalStats().full ? 1 : 0);
    },
  });
  new Gauge({
    name: "auditpipe_syslog_tcp_connections",
    help: "Syslog TCP connections open now, all listeners together.",
    registers: [registry],
    collect() {
      this.set(intake()?.receiverStats().tcpConnections ?? 0);
    },
  });
  new Gauge({
    name: "auditpipe_syslog_tcp_connection_limit",
    help: "The cap on open syslog TCP connections: half of what the open-file limit leaves after 192 descriptors, 8 to 1024 (0 without --syslog).",
    registers: [registry],
    collect() {
      this.set(intake()?.receiverStats().tcpConnectionLimit ?? 0);
    },
  });
  new Counter({
    name: "auditpipe_syslog_tcp_connections_closed_total",
    help: "Syslog TCP connections the receiver closed: reason limit (refused on arrival, the cap reached) or idle (silent for syslogTcpIdleTimeoutMs).",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      const stats = intake()?.receiverStats();
      this.reset();
      this.inc({ reason: "limit" }, stats?.tcpRefused ?? 0);
      this.inc({ reason: "idle" }, stats?.tcpIdleClosed ?? 0);
    },
  });
  new Counter({
    name: "auditpipe_syslog_udp_dropped_total",
    help: "UDP syslog datagrams dropped: reason journal_full (read and dropped while the syslog journal was full) or receive_buffer (dropped by the kernel, the socket's receive buffer full: /proc/net/udp's drops).",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      const stats = intake()?.receiverStats();
      this.reset();
      this.inc({ reason: "journal_full" }, stats?.dropped ?? 0);
      this.inc({ reason: "receive_buffer" }, stats?.udpKernelDropped ?? 0);
    },
  });
  new Gauge({
    name: "auditpipe_syslog_udp_receive_buffer_bytes",
    help: "The UDP listeners' receive buffer (SO_RCVBUF) as the kernel reports it, twice what it grants; auditpipe asks for 4 MiB, capped by net.core.rmem_max (0 without UDP).",
    registers: [registry],
    collect() {
      this.set(intake()?.receiverStats().udpReceiveBufferBytes ?? 0);
    },
  });
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
