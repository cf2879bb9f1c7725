/**
 * The file pipeline, composed: one PostgreSQL log stream from its directory to a sink.
 *
 *   FileFollower (file-follower.ts)       source: follow, rotation, checkpoints on ack;
 *     FileDiscovery (_file-discovery.ts)  which files there are, and which is which
 *     → FileLane, one per file (_file-lane.ts):
 *         parse (@auditpipe/parse createParser) → decode (decodeAuditEntry)
 *         → meter (observer.entry, a tap) → redact → encode (@auditpipe/ship encodeEntry)
 *         → outcome (the stream's OutcomeJoin, _outcome-stream.ts) → batch (Batcher)
 *     → Delivery (@auditpipe/ship deliver.ts)  ordered acknowledgements, one backoff
 *     → Sink (LocalDirSink, S3Sink)
 *
 * Each stage is its own module and knows only the next; this file only wires them. `FileSource`
 * keeps the name and options it had when it did all of this itself.
 */
import type { StreamEvent } from "@auditpipe/outcome";
import { type LogFormat, ParseErrorCode, type PrefixHistory } from "@auditpipe/parse";
import {
  type BatchLimits,
  DEFAULT_BATCH_LIMITS,
  Delivery,
  type DeliveryObserver,
  type RedactionMode,
  type Sink,
} from "@auditpipe/ship";
import type { FileRole } from "./_destinations.ts";
import { FileLane, type LaneObserver } from "./_file-lane.ts";
import { OutcomeStream } from "./_outcome-stream.ts";
import { FileFollower } from "./file-follower.ts";
import {
  DataLostReason,
  type FileSourceHealth,
  type FollowObserver,
  type SourceLogger,
} from "./follow-reports.ts";

/** What the file pipeline reports as it goes; every method optional. The sidecar wires these to its meter. */
export interface SourceObserver extends FollowObserver, LaneObserver, DeliveryObserver {}

export interface FileSourceOptions {
  /** PostgreSQL's log_directory. */
  logDir: string;
  /**
   * The format of the files followed (one log stream); `auto`: every destination PostgreSQL writes,
   * each entry once (see FileFollowerOptions.format).
   */
  format: LogFormat | "auto";
  /** Which file names belong to the stream; default by format (`*.csv`, `*.json`, `*.log`). */
  pattern?: string;
  /**
   * log_line_prefix, for stderr and syslog files; a PrefixHistory follows reloads that change it
   * (learned from the postmaster's message in the log).
   */
  prefix?: string | PrefixHistory;
  /** Where checkpoints are kept. */
  stateDir: string;
  sink: Sink;
  /**
   * Redactions applied to each record before it is encoded for the sink (`--redact`); absent or
   * all false: none. The observer (metering) sees the original records.
   */
  redact?: RedactionMode;
  /**
   * Where to start in the files present at the very first start (no checkpoint state yet); default
   * `beginning`. Files that appear later, or while the source was stopped, are always read from 0.
   */
  from?: "beginning" | "end";
  /** How often the directory and files are checked when no fs event arrives; default 200 ms. */
  pollIntervalMs?: number;
  /** A file that has not grown for this long is quiet: held records are released; default 50 ms. */
  quietMs?: number;
  batch?: Partial<BatchLimits>;
  /** The outcome stage (docs/architecture.md, "Outcomes"). */
  outcome?: {
    /** Every session's pgaudit.log has misc (the server's setting says so): see OutcomeJoinOptions. */
    miscLogged?: boolean;
    /**
     * How long past its age a batch may stay open while entries in it await their outcome
     * (DEFAULT_OUTCOME_HOLD_MS); size limits still cut it.
     */
    holdMs?: number;
    /**
     * Server starts and stops and audit-setting changes seen in the stream (coverage), with the
     * file whose record showed each; called while the record is read, before the batch holding it
     * goes to the sink.
     */
    event?: (event: StreamEvent, file: string) => void;
  };
  observer?: SourceObserver;
  logger?: SourceLogger;
  /**
   * For tests: called after each listing of the log directory, before the files listed are looked
   * at, so a test can change the directory between the two.
   */
  onListed?: () => void | Promise<void>;
}

/**
 * A batch whose entries await their outcome stays open this much past its age at most: long
 * enough for a session's next statement to settle its last one at low load (at high load batches
 * are cut by size, and few of their entries are any session's last), short enough that a quiet
 * session's entry ships `pending` (its outcome line follows) instead of holding up the rest. It
 * adds up to this much to the delay from a record to its acknowledgement (docs/benchmarks.md).
 */
export const DEFAULT_OUTCOME_HOLD_MS = 1_000;

/** stop() gives up waiting for the sink after this long; what is unacknowledged is re-read next start. */
const STOP_DEADLINE_MS = 8_000;

/**
 * Follows one PostgreSQL log stream in a directory and ships each audit entry in it to the sink,
 * once per range: a file's checkpoint advances only over ranges the sink acknowledged.
 */
export class FileSource {
  private readonly follower: FileFollower;
  private readonly delivery: Delivery;

  constructor(options: FileSourceOptions) {
    const limits: BatchLimits = { ...DEFAULT_BATCH_LIMITS, ...options.batch };
    const observer = options.observer ?? {};
    const redact = options.redact?.literals || options.redact?.parameters ? options.redact : undefined;
    // One outcome join per destination (a stderr file beside a csvlog one holds other records,
    // written at the same time): a destination's files are read oldest first, one at a time.
    const outcomes = new Map<string, OutcomeStream>();
    const outcomeOf = (role: FileRole): OutcomeStream => {
      const key = role.diverted ? "diverted" : role.format;
      let stream = outcomes.get(key);
      if (!stream) {
        stream = new OutcomeStream({
          ...(options.outcome?.miscLogged === undefined ? {} : { miscLogged: options.outcome.miscLogged }),
          ...(options.outcome?.event ? { event: options.outcome.event } : {}),
          unordered: (file) =>
            options.logger?.warn(
              { file },
              "a newer log file is read while an older one still grows (a pattern matching two streams?): their outcomes are joined apart",
            ),
        });
        outcomes.set(key, stream);
      }
      return stream;
    };
    const holdMs = options.outcome?.holdMs ?? DEFAULT_OUTCOME_HOLD_MS;
    // A record over the parser's size limit is valid data skipped whole: besides malformed, it is
    // a range given up, reported where every other give-up is (dataLost).
    const laneObserver: LaneObserver = {
      ...observer,
      malformed(source, error) {
        observer.malformed?.(source, error);
        if (error.code !== ParseErrorCode.RECORD_TOO_LARGE) return;
        const to = error.offset + error.size;
        observer.dataLost?.(source, error.offset, to, DataLostReason.RECORD_TOO_LARGE);
        options.logger?.warn(
          {
            file: source,
            from: error.offset,
            to,
            bytes: error.size,
            reason: DataLostReason.RECORD_TOO_LARGE,
          },
          `record larger than the parser's limit: bytes ${error.offset} to ${to} are given up`,
        );
      },
    };
    this.delivery = new Delivery({
      sink: options.sink,
      observer,
      ...(options.logger ? { logger: options.logger } : {}),
      onSettled: () => this.follower.nudge(),
    });
    this.follower = new FileFollower({
      logDir: options.logDir,
      format: options.format,
      ...(options.pattern !== undefined ? { pattern: options.pattern } : {}),
      stateDir: options.stateDir,
      ...(options.from !== undefined ? { from: options.from } : {}),
      ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
      ...(options.quietMs !== undefined ? { quietMs: options.quietMs } : {}),
      observer,
      ...(options.logger ? { logger: options.logger } : {}),
      finished: (state, role) => outcomeOf(role).finishedFile(state),
      ...(options.onListed ? { onListed: options.onListed } : {}),
      downstream: (file, start, replayEnds, checkpoints, resume, state, role) =>
        new FileLane(file, {
          format: role.format,
          diverted: role.diverted,
          prefix: options.prefix,
          start,
          resume,
          replayEnds,
          limits,
          observer: laneObserver,
          redact,
          delivery: this.delivery,
          checkpoints,
          outcome: { stream: outcomeOf(role), state, holdMs },
        }),
    });
  }

  /** Reads the checkpoints and starts following; throws when the log directory is not there. */
  start(): Promise<void> {
    return this.follower.start();
  }

  /**
   * Stops reading, writes what was read, waits for the sink's acks at most `waitMs` (default
   * STOP_DEADLINE_MS), saves checkpoints.
   */
  async stop(waitMs: number = STOP_DEADLINE_MS): Promise<void> {
    this.delivery.stopBy(Date.now() + waitMs);
    await this.follower.stop();
  }

  /** Files followed now: path, identity, position read and acknowledged. */
  status(): { path: string; fingerprint: string; size: number; read: number; acked: number }[] {
    return this.follower.status();
  }

  /** What keeps the source from seeing every file now (for /readyz and metrics). */
  health(): FileSourceHealth {
    return this.follower.health();
  }
}
