/**
 * What the outcome join decides, and the events it reports. The join itself is in join.ts.
 */
import type { LogRecord } from "@auditpipe/parse";

/**
 * What became of a statement an audit entry records:
 *
 * - `succeeded`: it ran without error and its transaction committed.
 * - `failed`: it raised an ERROR (`sqlstate` where the log carries it); so did everything its
 *   backend ran for it under later statement ids (a deferred foreign-key check inside a COMMIT).
 * - `rolled_back`: it ran, but its effect was undone — its transaction rolled back, or a
 *   ROLLBACK TO SAVEPOINT undid it. What it read, it still read.
 * - `unknown`: the log cannot tell (see UnknownReason).
 */
export type Outcome = "succeeded" | "failed" | "rolled_back" | "unknown";

export const OUTCOMES: readonly Outcome[] = ["succeeded", "failed", "rolled_back", "unknown"];

/** Why an outcome is `unknown`: each a case where the log truly cannot tell (docs/architecture.md). */
export const UnknownReason = {
  /**
   * pgaudit.log without `misc` (and no MISC entry seen for this session, user and database):
   * BEGIN, COMMIT and ROLLBACK are not logged, so a statement that raised no error may have been
   * rolled back by a ROLLBACK that left no trace.
   */
  BOUNDARIES_NOT_LOGGED: "boundaries-not-logged",
  /** The log ends (or `end()` is called) before the statement's transaction did. */
  LOG_ENDED: "log-ended",
  /** The server crashed (or stopped without a word for the session) before the end was logged. */
  SERVER_STOPPED: "server-stopped",
  /**
   * An error inside a transaction block with several savepoints, then the block went on: a
   * ROLLBACK TO SAVEPOINT happened (pgaudit does not log it in a failed block), but to which one?
   * Also: no `%v` in log_line_prefix, so whether the block went on at all cannot be told.
   */
  SAVEPOINT_AMBIGUOUS: "savepoint-ambiguous",
  /** PREPARE TRANSACTION, and neither COMMIT PREPARED nor ROLLBACK PREPARED for it in the log. */
  TWO_PHASE: "two-phase",
  /** A transaction block ended without a logged COMMIT or ROLLBACK (pgaudit.log changed inside it?). */
  END_NOT_LOGGED: "end-not-logged",
  /** The record carries no session id and no pid: it cannot be joined with anything. */
  NO_SESSION: "no-session",
  /** More entries or sessions than the join tracks (its memory bound); counted. */
  CAP: "cap",
} as const;
export type UnknownReason = (typeof UnknownReason)[keyof typeof UnknownReason];

/** An outcome with what explains it. */
export interface Decision {
  outcome: Outcome;
  /** The SQLSTATE of a `failed` statement where the format carries it (csvlog, jsonlog, `%e`); else null. */
  sqlstate: string | null;
  /** Why it is `unknown`; null otherwise. */
  reason: UnknownReason | null;
}

/**
 * Server-level and audit-configuration events the same scan sees (for coverage; pure). Messages
 * are recognised in PostgreSQL's English (lc_messages 'C' or 'en').
 */
export type StreamEvent =
  | {
      kind: "server-start" | "server-stop-requested" | "server-stop" | "server-crash" | "crash-recovery";
      record: LogRecord;
    }
  /** `received SIGHUP, reloading configuration files`. */
  | { kind: "config-reload"; record: LogRecord }
  /**
   * A setting that decides what the audit trail holds changed: a reload's `parameter "pgaudit.log"
   * changed to "none"` (`via: "reload"`, also for log_* settings), or an audited statement that
   * sets a pgaudit.* setting (`set`, `reset`, `alter-system`, `alter-role`, `alter-database`).
   * `value` is null for RESET and for a setting reset to its default. An audited statement is
   * reported when it is logged, before its outcome is known; `SET LOCAL` and a SET in a
   * transaction that rolls back do not last. Invisible: `set_config()`, `PGOPTIONS`, a role's
   * settings applied at login, and any SET while pgaudit.log lacks `misc` (pgAudit 1.7 logs SET as
   * class MISC; MISC_SET is for SET ROLE and the like).
   */
  | {
      kind: "setting-changed";
      setting: string;
      value: string | null;
      via: "reload" | "set" | "reset" | "alter-system" | "alter-role" | "alter-database";
      record: LogRecord;
    };
