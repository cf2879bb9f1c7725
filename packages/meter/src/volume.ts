import { type AuditEntry, detached, type LogRecord, parseLogTimestamp } from "@auditpipe/parse";
import { projectVolume } from "./projection.ts";

export interface Tally {
  entries: number;
  bytes: number;
}
export type Breakdown = Record<string, Tally>;

/** The volume report of the design's `analyze --json` contract. Decimal units: 1 GB = 1e9 bytes. */
export interface VolumeReport {
  /** All log records read. */
  records: number;
  /** pgAudit entries. */
  entries: number;
  /** On-disk bytes of the records that carry audit entries, newline included. */
  bytes: number;
  malformed: number;
  /** First to last audit entry, by the records' timestamps (ISO 8601), or null without entries. */
  span: { start: string | null; end: string | null; seconds: number };
  /**
   * Rates over the span. mbPerHour and gbPerDay are null when the span is shorter than
   * MIN_PROJECTION_SECONDS of log time, with the reason in `reason` (null when they are given).
   */
  rate: {
    entriesPerSec: number;
    bytesPerSec: number;
    mbPerHour: number | null;
    gbPerDay: number | null;
    reason: string | null;
  };
  byClass: Breakdown;
  byCommand: Breakdown;
  byAuditType: Breakdown;
  /** Entries that name an object, by OBJECT_NAME. */
  byObject: Breakdown;
  /** Entries whose record carries a user (csvlog, jsonlog, or a prefix with %u). */
  byUser: Breakdown;
  byDatabase: Breakdown;
  /**
   * Entries by what became of their statement (see @auditpipe/outcome): `unknown` where the log
   * cannot tell, with why in `unknownReasons`.
   */
  outcomes: OutcomeCounts;
  /** `unknown` entries by reason (`boundaries-not-logged`, `log-ended`, ...). */
  unknownReasons: Record<string, number>;
  /** The `failed` entries by user, command and SQLSTATE (`none` where the format has no SQLSTATE). */
  failed: { byUser: Breakdown; byCommand: Breakdown; bySqlstate: Breakdown };
  /**
   * ERRORs and FATALs of no audited statement: statements refused before pgAudit logged them
   * (permission denied, a missing relation), and failed logins.
   */
  attempts: { count: number; byUser: Record<string, number>; bySqlstate: Record<string, number> };
}

/** Entries by outcome. */
export interface OutcomeCounts {
  succeeded: number;
  failed: number;
  rolled_back: number;
  unknown: number;
}

/** The key of a breakdown when the log does not carry the value. */
const NONE = "none";

/** A breakdown as VolumeTallyState carries it: `[key, entries, bytes]`. */
export type BreakdownState = [key: string, entries: number, bytes: number][];

/** A breakdown's tally, with its key as the map keeps it (a copy: see detached()). */
interface Kept extends Tally {
  key: string;
}

class Counter {
  readonly map: Map<string, Kept> = new Map();
  /**
   * The tally added to last: consecutive entries often share a key (a session's user and
   * database, the audit type), and comparing a fresh string with its kept key costs less than
   * hashing it for the map.
   */
  private last: Kept | undefined;
  add(key: string, bytes: number, entries = 1): void {
    let tally = this.last;
    if (tally === undefined || key !== tally.key) {
      tally = this.map.get(key);
      if (tally === undefined) {
        const own = detached(key);
        tally = { entries: 0, bytes: 0, key: own };
        this.map.set(own, tally);
      }
      this.last = tally;
    }
    tally.entries += entries;
    tally.bytes += bytes;
  }
  state(): BreakdownState {
    return [...this.map].map(([key, t]) => [key, t.entries, t.bytes]);
  }
  merge(state: BreakdownState): void {
    for (const [key, entries, bytes] of state) this.add(key, bytes, entries);
  }
  /** Largest first (by bytes, then entries, then key) so reports and JSON read top-down. */
  toObject(): Breakdown {
    const sorted = [...this.map].sort(
      (a, b) => b[1].bytes - a[1].bytes || b[1].entries - a[1].entries || (a[0] < b[0] ? -1 : 1),
    );
    return Object.fromEntries(sorted.map(([k, v]) => [k, { entries: v.entries, bytes: v.bytes }]));
  }
}

/**
 * Everything a VolumeTally has counted, as plain data (structured-clone and JSON safe): what a
 * worker thread of `analyze` hands back, merged with VolumeTally.merge. Merging tallies of any
 * partition of the input, in any order, gives the report one tally of all of it gives (every
 * figure is a sum, a minimum or a maximum; breakdowns are sorted when reported).
 */
export interface VolumeTallyState {
  records: number;
  entries: number;
  bytes: number;
  malformed: number;
  byClass: BreakdownState;
  byCommand: BreakdownState;
  byAuditType: BreakdownState;
  byObject: BreakdownState;
  byUser: BreakdownState;
  byDatabase: BreakdownState;
  outcomes: OutcomeCounts;
  unknownReasons: [string, number][];
  failedByUser: BreakdownState;
  failedByCommand: BreakdownState;
  failedBySqlstate: BreakdownState;
  attempts: number;
  attemptsByUser: [string, number][];
  attemptsBySqlstate: [string, number][];
  /** First and last entry time (ms since the epoch); ±Infinity without one. */
  firstMs: number;
  lastMs: number;
}

/**
 * Accumulates a volume report over records and audit entries, in any order. Pure: no I/O, no
 * clock; the span comes from the records' own timestamps.
 */
export class VolumeTally {
  records = 0;
  entries = 0;
  bytes = 0;
  malformed = 0;
  private readonly byClass = new Counter();
  private readonly byCommand = new Counter();
  private readonly byAuditType = new Counter();
  private readonly byObject = new Counter();
  private readonly byUser = new Counter();
  private readonly byDatabase = new Counter();
  private readonly outcomes: OutcomeCounts = { succeeded: 0, failed: 0, rolled_back: 0, unknown: 0 };
  private readonly unknownReasons = new Map<string, number>();
  private readonly failedByUser = new Counter();
  private readonly failedByCommand = new Counter();
  private readonly failedBySqlstate = new Counter();
  private attemptCount = 0;
  private readonly attemptsByUser = new Map<string, number>();
  private readonly attemptsBySqlstate = new Map<string, number>();
  private firstMs = Number.POSITIVE_INFINITY;
  private lastMs = Number.NEGATIVE_INFINITY;
  private lastStamp = "";

  /** Every record read, audit or not. */
  addRecord(): void {
    this.records += 1;
  }

  addMalformed(count = 1): void {
    this.malformed += count;
  }

  /** An audit entry and the record that carried it (whose size is the entry's bytes). */
  addEntry(
    entry: Pick<AuditEntry, "class" | "command" | "auditType" | "objectName">,
    record: Pick<LogRecord, "size" | "user" | "database" | "timestamp">,
  ): void {
    const bytes = record.size;
    this.entries += 1;
    this.bytes += bytes;
    this.byClass.add(entry.class, bytes);
    this.byCommand.add(entry.command, bytes);
    this.byAuditType.add(entry.auditType, bytes);
    if (entry.objectName !== "") this.byObject.add(entry.objectName, bytes);
    if (record.user !== null) this.byUser.add(record.user, bytes);
    if (record.database !== null) this.byDatabase.add(record.database, bytes);
    const stamp = record.timestamp;
    if (stamp !== null && stamp !== this.lastStamp) {
      this.lastStamp = stamp; // consecutive records share timestamps: parse each distinct one once
      const ms = parseLogTimestamp(stamp);
      if (ms !== undefined) {
        if (ms < this.firstMs) this.firstMs = ms;
        if (ms > this.lastMs) this.lastMs = ms;
      }
    }
  }

  /** What became of an entry given to addEntry (in any order: outcomes come later). */
  addOutcome(
    entry: AuditEntry,
    record: LogRecord,
    outcome: keyof OutcomeCounts,
    sqlstate: string | null,
    reason: string | null,
  ): void {
    this.addOutcomeOf(entry.command, record.user, record.size, outcome, sqlstate, reason);
  }

  /** addOutcome from what it reads of the entry: its command, its record's user and size. */
  addOutcomeOf(
    command: string,
    user: string | null,
    bytes: number,
    outcome: keyof OutcomeCounts,
    sqlstate: string | null,
    reason: string | null,
  ): void {
    this.outcomes[outcome] += 1;
    if (outcome === "unknown") bump(this.unknownReasons, reason ?? NONE);
    if (outcome !== "failed") return;
    this.failedByUser.add(user ?? NONE, bytes);
    this.failedByCommand.add(command, bytes);
    this.failedBySqlstate.add(sqlstate ?? NONE, bytes);
  }

  /** An ERROR or FATAL of no audited statement (a refused statement, a failed login). */
  addAttempt(record: LogRecord): void {
    this.attemptCount += 1;
    bump(this.attemptsByUser, record.user ?? NONE);
    bump(this.attemptsBySqlstate, record.sqlState ?? NONE);
  }

  /** What this tally has counted, as plain data (see VolumeTallyState). */
  state(): VolumeTallyState {
    return {
      records: this.records,
      entries: this.entries,
      bytes: this.bytes,
      malformed: this.malformed,
      byClass: this.byClass.state(),
      byCommand: this.byCommand.state(),
      byAuditType: this.byAuditType.state(),
      byObject: this.byObject.state(),
      byUser: this.byUser.state(),
      byDatabase: this.byDatabase.state(),
      outcomes: { ...this.outcomes },
      unknownReasons: [...this.unknownReasons],
      failedByUser: this.failedByUser.state(),
      failedByCommand: this.failedByCommand.state(),
      failedBySqlstate: this.failedBySqlstate.state(),
      attempts: this.attemptCount,
      attemptsByUser: [...this.attemptsByUser],
      attemptsBySqlstate: [...this.attemptsBySqlstate],
      firstMs: this.firstMs,
      lastMs: this.lastMs,
    };
  }

  /** Adds what another tally counted (its state()): the report is that of both inputs together. */
  merge(s: VolumeTallyState): void {
    this.records += s.records;
    this.entries += s.entries;
    this.bytes += s.bytes;
    this.malformed += s.malformed;
    this.byClass.merge(s.byClass);
    this.byCommand.merge(s.byCommand);
    this.byAuditType.merge(s.byAuditType);
    this.byObject.merge(s.byObject);
    this.byUser.merge(s.byUser);
    this.byDatabase.merge(s.byDatabase);
    for (const k of Object.keys(this.outcomes) as (keyof OutcomeCounts)[]) this.outcomes[k] += s.outcomes[k];
    for (const [key, n] of s.unknownReasons) bump(this.unknownReasons, key, n);
    this.failedByUser.merge(s.failedByUser);
    this.failedByCommand.merge(s.failedByCommand);
    this.failedBySqlstate.merge(s.failedBySqlstate);
    this.attemptCount += s.attempts;
    for (const [key, n] of s.attemptsByUser) bump(this.attemptsByUser, key, n);
    for (const [key, n] of s.attemptsBySqlstate) bump(this.attemptsBySqlstate, key, n);
    if (s.firstMs < this.firstMs) this.firstMs = s.firstMs;
    if (s.lastMs > this.lastMs) this.lastMs = s.lastMs;
  }

  report(): VolumeReport {
    const hasSpan = Number.isFinite(this.firstMs);
    const seconds = hasSpan ? (this.lastMs - this.firstMs) / 1000 : 0;
    const perSec = (n: number) => (seconds > 0 ? n / seconds : 0);
    const bytesPerSec = perSec(this.bytes);
    return {
      records: this.records,
      entries: this.entries,
      bytes: this.bytes,
      malformed: this.malformed,
      span: {
        start: hasSpan ? new Date(this.firstMs).toISOString() : null,
        end: hasSpan ? new Date(this.lastMs).toISOString() : null,
        seconds,
      },
      rate: {
        entriesPerSec: perSec(this.entries),
        bytesPerSec,
        ...projectVolume(this.bytes, hasSpan ? seconds : null, this.entries),
      },
      byClass: this.byClass.toObject(),
      byCommand: this.byCommand.toObject(),
      byAuditType: this.byAuditType.toObject(),
      byObject: this.byObject.toObject(),
      byUser: this.byUser.toObject(),
      byDatabase: this.byDatabase.toObject(),
      outcomes: { ...this.outcomes },
      unknownReasons: sortedCounts(this.unknownReasons),
      failed: {
        byUser: this.failedByUser.toObject(),
        byCommand: this.failedByCommand.toObject(),
        bySqlstate: this.failedBySqlstate.toObject(),
      },
      attempts: {
        count: this.attemptCount,
        byUser: sortedCounts(this.attemptsByUser),
        bySqlstate: sortedCounts(this.attemptsBySqlstate),
      },
    };
  }
}

function bump(map: Map<string, number>, key: string, by = 1): void {
  const n = map.get(key);
  if (n === undefined) map.set(detached(key), by);
  else map.set(key, n + by);
}

/** Largest first, then by key. */
function sortedCounts(map: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...map].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}
