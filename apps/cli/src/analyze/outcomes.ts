/**
 * The outcome stage of `analyze` (and `advise`): every record of the files goes through one
 * OutcomeJoin per log stream (per format: the files of one stream are read in order), and each
 * entry's outcome and each attempt land in the report. Also what the log showed of the settings
 * that make outcomes knowable, for the hints the report prints.
 */
import type { VolumeTally } from "@auditpipe/meter/volume";
import { type Outcome, OutcomeJoin, type StreamEvent, UnknownReason } from "@auditpipe/outcome";
import type { AuditEntry, AuditView, LogFormat, LogRecord } from "@auditpipe/parse";

interface Pending {
  /** What the tally reads of a decided entry. */
  command: string;
  user: string | null;
  size: number;
  /** The entry and its record (null for one read as an AuditView: only without onOutcome). */
  entry: AuditEntry | null;
  record: LogRecord | null;
}

export interface OutcomeReadingOptions {
  /** pgaudit.log includes misc for every session (from --pgaudit-log). */
  miscLogged?: boolean;
  /** Each entry's outcome, when decided (advise). */
  onOutcome?: (entry: AuditEntry, record: LogRecord, outcome: Outcome, sqlstate: string | null) => void;
  /** Each attempt (a refused statement, a failed login). */
  onAttempt?: (record: LogRecord) => void;
  /** Server starts, stops and crashes and audit-setting changes (coverage), with the file that showed each. */
  onEvent?: (event: StreamEvent, file: string) => void;
}

/** A setting that would make more outcomes knowable, and why. */
export interface OutcomeHint {
  setting: string;
  why: string;
}

/**
 * What the records showed of the server's logging settings (for the hints): counted per record,
 * so the counts of parts of a log add up to those of the whole (parallel `analyze`).
 */
export interface LoggingSigns {
  disconnections: number;
  errors: number;
  errorsWithoutStatement: number;
  /** Some entry carried ROWS (pgaudit.log_rows). */
  logRows: boolean;
}

export function noSigns(): LoggingSigns {
  return { disconnections: 0, errors: 0, errorsWithoutStatement: 0, logRows: false };
}

/** Counts what a record (and its entry, if any) shows of the logging settings. */
export function noteSigns(signs: LoggingSigns, record: LogRecord, entry: AuditEntry | undefined): void {
  if (entry !== undefined) {
    if (entry.rows !== null) signs.logRows = true;
  } else if (record.severity === "ERROR") {
    signs.errors++;
    if (record.query === null) signs.errorsWithoutStatement++;
  } else if (record.message.startsWith("disconnection: ")) signs.disconnections++;
}

export function mergeSigns(into: LoggingSigns, from: LoggingSigns): void {
  into.disconnections += from.disconnections;
  into.errors += from.errors;
  into.errorsWithoutStatement += from.errorsWithoutStatement;
  into.logRows ||= from.logRows;
}

export class OutcomeReading {
  private readonly joins = new Map<LogFormat, OutcomeJoin<Pending>>();
  private readonly tally: VolumeTally;
  private readonly options: OutcomeReadingOptions;
  /** What the records showed of the server's logging settings. */
  private readonly signs = noSigns();
  private readonly prefixes = new Set<string>();
  /** The file being read: events are reported with it. */
  private current = "";

  constructor(tally: VolumeTally, options: OutcomeReadingOptions = {}) {
    this.tally = tally;
    this.options = options;
  }

  /** A file (`name`) of `format` starts, read with `prefix` (stderr, syslog). */
  file(format: LogFormat, prefix: string | undefined, name = ""): void {
    this.current = name;
    if ((format === "stderr" || format === "syslog") && prefix !== undefined) this.prefixes.add(prefix);
  }

  record(format: LogFormat, record: LogRecord, entry: AuditEntry | undefined): void {
    let join = this.joins.get(format);
    if (join === undefined) {
      join = this.newJoin();
      this.joins.set(format, join);
    }
    noteSigns(this.signs, record, entry);
    if (entry !== undefined)
      join.record(record, entry, {
        command: entry.command,
        user: record.user,
        size: record.size,
        entry,
        record,
      });
    else join.record(record);
  }

  /**
   * An entry read as an AuditView (read-logs.ts): joined as record() joins its record and entry;
   * false, having done nothing, when it cannot be (the caller gives them to record()): an option
   * hands every outcome its entry and record, or the entry may make an event.
   */
  entry(format: LogFormat, view: AuditView): boolean {
    if (this.options.onOutcome !== undefined) return false;
    let join = this.joins.get(format);
    if (join === undefined) {
      join = this.newJoin();
      this.joins.set(format, join);
    }
    return join.entry(view, {
      command: view.command,
      user: view.user,
      size: view.size,
      entry: null,
      record: null,
    });
  }

  /**
   * The parser's text read so far is let go: each join hashes the open statements' texts it held
   * (OutcomeJoinOptions.holdTexts). Called after each chunk the parser was given.
   */
  releaseTexts(): void {
    for (const join of this.joins.values()) join.releaseTexts();
  }

  /** The input ended: what is still undecided is `unknown` (log-ended). */
  end(): void {
    for (const join of this.joins.values()) join.end();
  }

  private newJoin(): OutcomeJoin<Pending> {
    return new OutcomeJoin<Pending>({
      ...(this.options.miscLogged === undefined ? {} : { miscLogged: this.options.miscLogged }),
      // A statement's text is hashed only where the join compares it (releaseTexts after each chunk).
      holdTexts: true,
      decided: (h, outcome, sqlstate, reason) => {
        this.tally.addOutcomeOf(h.command, h.user, h.size, outcome, sqlstate, reason);
        this.options.onOutcome?.(h.entry!, h.record!, outcome, sqlstate);
      },
      attempt: (record) => {
        this.tally.addAttempt(record);
        this.options.onAttempt?.(record);
      },
      ...(this.options.onEvent ? { event: (e: StreamEvent) => this.options.onEvent?.(e, this.current) } : {}),
    });
  }

  hints(unknownReasons: Record<string, number>): OutcomeHint[] {
    return outcomeHints(this.signs, this.prefixes, unknownReasons);
  }
}

/**
 * The settings that would have let more outcomes be told, from what the log showed (`signs`,
 * the log_line_prefix of its stderr/syslog files, the report's unknown reasons):
 * docs/architecture.md lists what each gives.
 */
export function outcomeHints(
  signs: LoggingSigns,
  prefixes: Iterable<string>,
  unknownReasons: Record<string, number>,
): OutcomeHint[] {
  const hints: OutcomeHint[] = [];
  const unknown = (reason: string) => unknownReasons[reason] ?? 0;
  if (unknown(UnknownReason.BOUNDARIES_NOT_LOGGED) > 0)
    hints.push({
      setting: "pgaudit.log with misc",
      why: `${unknown(UnknownReason.BOUNDARIES_NOT_LOGGED)} entries raised no error but may have been rolled back: without MISC entries BEGIN, COMMIT and ROLLBACK are not logged (if the server's pgaudit.log has misc or all for every role, say so with --pgaudit-log)`,
    });
  for (const prefix of prefixes) {
    if (!prefix.includes("%v"))
      hints.push({
        setting: "%v in log_line_prefix",
        why: "without the virtual transaction id, a multi-statement transaction and an error inside a block with savepoints cannot always be told apart",
      });
    if (!prefix.includes("%e"))
      hints.push({
        setting: "%e in log_line_prefix",
        why: "failed statements carry no SQLSTATE without it",
      });
    if (!prefix.includes("%c"))
      hints.push({
        setting: "%c in log_line_prefix",
        why: "sessions are told apart by process id alone (and log_connections when a pid is reused)",
      });
  }
  if (signs.disconnections === 0 && unknown(UnknownReason.LOG_ENDED) > 0)
    hints.push({
      setting: "log_disconnections = on",
      why: `${unknown(UnknownReason.LOG_ENDED)} entries were still open when the log ended; a session's end settles its last statement`,
    });
  if (signs.errors > 0 && signs.errorsWithoutStatement === signs.errors)
    hints.push({
      setting: "log_min_error_statement = error",
      why: "no ERROR carries its statement: an error is pinned on its session's latest statement, and a refused statement's text is not known",
    });
  if (signs.logRows)
    hints.push({
      setting: "pgaudit.log_rows = off",
      why: "with log_rows pgAudit logs a statement after it ran: a statement that fails has no entry, its ERROR counts as an attempt",
    });
  return hints;
}
