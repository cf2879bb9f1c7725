/**
 * The sidecar's live meter: what `auditpipe run` has read, shipped and fallen behind on, as JSON
 * (snapshot(), for GET /v1/volume) and as a Prometheus registry (for GET /metrics).
 *
 * entry() is the hot path (every audit entry): the clock as of this turn of the event loop, one
 * ring slot, two exact capped tallies and three bounded heavy-hitter sketches; no allocation for
 * keys already seen and no prom-client call. Everything else is per record batch, per file or per sink batch.
 */
import { type AuditEntry, type LogRecord, parseLogTimestamp } from "@auditpipe/parse";
import type { Registry } from "prom-client";
import { exactBreakdown, type LiveBreakdown, sketchedBreakdown } from "./_breakdown.ts";
import { CappedTally } from "./_capped.ts";
import { PairTally } from "./_pairs.ts";
import { PrometheusMetrics } from "./_prometheus.ts";
import { TopN } from "./_top-n.ts";
import { turnNow } from "./_turn-clock.ts";
import { RollingWindows, WINDOWS, type WindowName, type WindowStats } from "./_windows.ts";
import { type Projection, projectVolume } from "./projection.ts";

export type { LiveBreakdown } from "./_breakdown.ts";
export type { WindowName, WindowStats } from "./_windows.ts";

/** Tracked keys per unbounded breakdown (user, database, object) unless told otherwise. */
export const DEFAULT_TOP_N = 1000;
/** The window projections are taken from: long enough to smooth bursts, short enough to follow change. */
const PROJECTION_WINDOW: WindowName = "5m";

export interface LiveMeterOptions {
  /** Keys tracked per unbounded breakdown (user, database, object); default 1000. */
  topN?: number;
  /**
   * Clock in ms since the epoch; injectable for tests, and then read for every entry too. Default
   * Date.now, and for entries the clock as of their turn of the event loop (turnNow).
   */
  now?: () => number;
}

export interface SyslogStats {
  received: number;
  reassembled: number;
  incomplete: number;
  malformed: number;
}

export interface SinkStats {
  acks: number;
  entries: number;
  bytes: number;
  errors: number;
  /** Latency of the last acknowledgement, or null before the first. */
  lastLatencyMs: number | null;
}

/** What became of the entries metered, and the attempts (see @auditpipe/outcome). */
export interface LiveOutcomes {
  succeeded: number;
  failed: number;
  rolled_back: number;
  unknown: number;
  /** `unknown` entries by reason (`boundaries-not-logged`, `server-stopped`, ...). */
  unknownReasons: Record<string, number>;
  /** `failed` entries by SQLSTATE class (its first two characters; `none` without one). */
  failedBySqlstateClass: Record<string, number>;
  /** Entries shipped `pending` (their batch closed first): an outcome line followed or will. */
  shippedPending: number;
  /** ERRORs and FATALs of no audited statement: refused statements and failed logins. */
  attempts: { count: number; bySqlstateClass: Record<string, number> };
}

/** GET /v1/volume: what the sidecar has metered since it started. Decimal units: 1 GB = 1e9 bytes. */
export interface LiveVolume {
  /** ISO 8601 start of the meter. */
  startedAt: string;
  uptimeSeconds: number;
  totals: {
    /** Log records read, audit or not. */
    records: number;
    /** pgAudit entries. */
    entries: number;
    /** On-disk bytes of the records that carry audit entries, newline included. */
    bytes: number;
    malformed: number;
  };
  windows: Record<WindowName, WindowStats>;
  /**
   * Rates extrapolated from the last 5 minutes of log time (by the entries' timestamps, not by
   * when they were read): `seconds` of log time covered, `asOf` the newest entry's time.
   * mbPerHour and gbPerDay are null, with `reason`, below MIN_PROJECTION_SECONDS.
   */
  projection: { window: WindowName; seconds: number; asOf: string | null } & Projection;
  byClass: LiveBreakdown;
  byCommand: LiveBreakdown;
  byAuditType: LiveBreakdown;
  /** Sketched: at most topN users, bounds in maxErrorBytes. */
  byUser: LiveBreakdown;
  byDatabase: LiveBreakdown;
  /** Entries that name an object, by OBJECT_NAME; sketched like byUser. */
  byObject: LiveBreakdown;
  /** Entries by outcome as the log settled them (after a restart, replayed entries count again). */
  outcomes: LiveOutcomes;
  pipeline: {
    files: { file: string; bytesBehind: number }[];
    truncations: number;
    sinks: Record<string, SinkStats>;
    /** Seconds since the last checkpoint save; null when none was saved yet. */
    checkpointAgeSeconds: number | null;
    syslog: SyslogStats;
  };
}

export interface SnapshotOptions {
  /** Keys listed per breakdown at most (the rest counts in `others`); default all tracked. */
  limit?: number;
}

export class LiveMeter {
  readonly registry: Registry;
  private readonly now: () => number;
  /** The clock entry() files entries by: `now` if injected, else turnNow. */
  private readonly entryNow: () => number;
  private readonly startMs: number;
  private readonly windows: RollingWindows;
  /** Bytes by the entries' own timestamps (log time), from the first timestamped entry on. */
  private logTime: RollingWindows | undefined;
  private logTimeEntries = 0;
  private newestLogMs = Number.NEGATIVE_INFINITY;
  private lastStamp = "";
  private lastStampMs: number | undefined;
  private readonly pairs = new PairTally();
  private readonly commands = new CappedTally();
  private readonly users: TopN;
  private readonly databases: TopN;
  private readonly objects: TopN;
  private entries = 0;
  private bytes = 0;
  private records = 0;
  private malformedCount = 0;
  private truncations = 0;
  private lastCheckpointMs: number | null = null;
  private readonly behind = new Map<string, number>();
  private readonly sinks = new Map<string, SinkStats>();
  private syslog: SyslogStats = { received: 0, reassembled: 0, incomplete: 0, malformed: 0 };
  private readonly outcomeCounts = new Map<string, number>();
  private readonly unknownReasons = new Map<string, number>();
  private readonly failedClasses = new Map<string, number>();
  private readonly attemptClasses = new Map<string, number>();
  private shippedPendingCount = 0;
  private readonly prometheus: PrometheusMetrics;

  constructor(options: LiveMeterOptions = {}) {
    const topN = options.topN ?? DEFAULT_TOP_N;
    this.now = options.now ?? Date.now;
    this.entryNow = options.now ?? turnNow;
    this.startMs = this.now();
    this.windows = new RollingWindows(this.startMs);
    this.users = new TopN(topN);
    this.databases = new TopN(topN);
    this.objects = new TopN(topN);
    this.prometheus = new PrometheusMetrics({
      pairs: this.pairs,
      records: () => this.records,
      malformed: () => this.malformedCount,
      truncations: () => this.truncations,
      window: (name) => this.window(name),
      // NaN while not meaningful: an alert on it does not fire on a few seconds of data.
      projectedBytesPerDay: () => (this.projection().gbPerDay ?? Number.NaN) * 1e9,
      checkpointAgeSeconds: () => (this.now() - (this.lastCheckpointMs ?? this.startMs)) / 1000,
      filesBehind: () => this.behind,
      syslog: () => ({ ...this.syslog }),
      outcomes: () => this.outcomeCounts,
      unknownReasons: () => this.unknownReasons,
      failedClasses: () => this.failedClasses,
      attemptClasses: () => this.attemptClasses,
      shippedPending: () => this.shippedPendingCount,
    });
    this.registry = this.prometheus.registry;
  }

  /** An audit entry and the record that carried it (whose size is the entry's bytes). */
  entry(entry: AuditEntry, record: LogRecord): void {
    const bytes = record.size;
    this.entries += 1;
    this.bytes += bytes;
    this.windows.add(this.entryNow(), bytes);
    this.addLogTime(record.timestamp, bytes);
    const pair = this.pairs.slot(entry.class, entry.auditType);
    pair.entries += 1;
    pair.bytes += bytes;
    const command = this.commands.slot(entry.command);
    command.entries += 1;
    command.bytes += bytes;
    if (record.user !== null) this.users.add(record.user, bytes);
    if (record.database !== null) this.databases.add(record.database, bytes);
    if (entry.objectName !== "") this.objects.add(entry.objectName, bytes);
  }

  /** An entry's outcome was decided. */
  outcome(outcome: string, sqlstate: string | null, reason: string | null): void {
    bump(this.outcomeCounts, outcome);
    if (outcome === "unknown") bump(this.unknownReasons, reason ?? "none");
    else if (outcome === "failed") bump(this.failedClasses, sqlstateClass(sqlstate));
  }

  /** An ERROR or FATAL of no audited statement (a refused statement, a failed login). */
  attempt(sqlstate: string | null): void {
    bump(this.attemptClasses, sqlstateClass(sqlstate));
  }

  /** A batch closed with `count` entries whose outcome was not known yet. */
  shippedPending(count: number): void {
    this.shippedPendingCount += count;
  }

  /** Log records read from a source, audit or not. The source is not a label (file names rotate). */
  recordsRead(_source: string, count: number): void {
    this.records += count;
  }

  malformed(_source: string, count: number): void {
    this.malformedCount += count;
  }

  /** A followed file's size minus its checkpointed offset. */
  setBytesBehind(file: string, bytes: number): void {
    this.behind.set(file, bytes);
  }

  /** The file is gone (drained and released): its gauge goes too. */
  forgetFile(file: string): void {
    this.behind.delete(file);
  }

  /** A followed file was truncated or replaced and is read again from 0. */
  truncation(_file: string): void {
    this.truncations += 1;
  }

  sinkAck(sink: string, entries: number, bytes: number, latencyMs: number): void {
    const stats = this.sink(sink);
    stats.acks += 1;
    stats.entries += entries;
    stats.bytes += bytes;
    stats.lastLatencyMs = latencyMs;
    this.prometheus.sinkAck(sink, entries, bytes, latencyMs);
  }

  sinkError(sink: string, code: string): void {
    this.sink(sink).errors += 1;
    this.prometheus.sinkError(sink, code);
  }

  checkpointSaved(atMs: number = this.now()): void {
    this.lastCheckpointMs = atMs;
  }

  /** Cumulative counts from the syslog source: they replace the previous ones. */
  syslogStats(stats: SyslogStats): void {
    this.syslog = {
      received: stats.received,
      reassembled: stats.reassembled,
      incomplete: stats.incomplete,
      malformed: stats.malformed,
    };
  }

  snapshot(options: SnapshotOptions = {}): LiveVolume {
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    const nowMs = this.now();
    const windows = {} as Record<WindowName, WindowStats>;
    for (const name of Object.keys(WINDOWS) as WindowName[])
      windows[name] = this.windows.read(nowMs, WINDOWS[name]);
    return {
      startedAt: new Date(this.startMs).toISOString(),
      uptimeSeconds: Math.max(0, nowMs - this.startMs) / 1000,
      totals: {
        records: this.records,
        entries: this.entries,
        bytes: this.bytes,
        malformed: this.malformedCount,
      },
      windows,
      projection: this.projection(),
      byClass: exactBreakdown(this.pairs.sums(true), this.pairs.overflow, limit),
      byCommand: exactBreakdown(this.commands.map, this.commands.overflow, limit),
      byAuditType: exactBreakdown(this.pairs.sums(false), this.pairs.overflow, limit),
      byUser: sketchedBreakdown(this.users.result(limit)),
      byDatabase: sketchedBreakdown(this.databases.result(limit)),
      byObject: sketchedBreakdown(this.objects.result(limit)),
      outcomes: {
        succeeded: this.outcomeCounts.get("succeeded") ?? 0,
        failed: this.outcomeCounts.get("failed") ?? 0,
        rolled_back: this.outcomeCounts.get("rolled_back") ?? 0,
        unknown: this.outcomeCounts.get("unknown") ?? 0,
        unknownReasons: Object.fromEntries(this.unknownReasons),
        failedBySqlstateClass: Object.fromEntries(this.failedClasses),
        shippedPending: this.shippedPendingCount,
        attempts: {
          count: [...this.attemptClasses.values()].reduce((a, b) => a + b, 0),
          bySqlstateClass: Object.fromEntries(this.attemptClasses),
        },
      },
      pipeline: {
        files: [...this.behind]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .map(([file, bytesBehind]) => ({ file, bytesBehind })),
        truncations: this.truncations,
        sinks: Object.fromEntries([...this.sinks].map(([name, s]) => [name, { ...s }])),
        checkpointAgeSeconds:
          this.lastCheckpointMs === null ? null : Math.max(0, nowMs - this.lastCheckpointMs) / 1000,
        syslog: { ...this.syslog },
      },
    };
  }

  /** Consecutive records share timestamps: each distinct one is parsed once. */
  private addLogTime(stamp: string | null, bytes: number): void {
    if (stamp === null) return;
    if (stamp !== this.lastStamp) {
      this.lastStamp = stamp;
      this.lastStampMs = parseLogTimestamp(stamp);
    }
    const ms = this.lastStampMs;
    if (ms === undefined) return;
    this.logTime ??= new RollingWindows(ms);
    // An entry older than the newest lands in the newest second (RollingWindows never rewrites
    // the past): files are read oldest first, so this is rare and moves bytes by seconds only.
    this.logTime.add(ms, bytes);
    this.logTimeEntries += 1;
    if (ms > this.newestLogMs) this.newestLogMs = ms;
  }

  private projection(): LiveVolume["projection"] {
    const window = WINDOWS[PROJECTION_WINDOW];
    if (this.logTime === undefined) {
      const none = projectVolume(0, this.entries > 0 ? null : 0, this.entries);
      return { window: PROJECTION_WINDOW, seconds: 0, asOf: null, ...none };
    }
    const w = this.logTime.read(this.newestLogMs, window);
    return {
      window: PROJECTION_WINDOW,
      seconds: w.seconds,
      asOf: new Date(this.newestLogMs).toISOString(),
      ...projectVolume(w.bytes, w.seconds, this.logTimeEntries),
    };
  }

  private window(name: WindowName): WindowStats {
    return this.windows.read(this.now(), WINDOWS[name]);
  }

  private sink(name: string): SinkStats {
    let stats = this.sinks.get(name);
    if (stats === undefined) {
      stats = { acks: 0, entries: 0, bytes: 0, errors: 0, lastLatencyMs: null };
      this.sinks.set(name, stats);
    }
    return stats;
  }
}

/** Distinct keys of the outcome tallies at most (reasons and SQLSTATE classes are few; a cap all the same). */
const MAX_OUTCOME_KEYS = 64;

function bump(map: Map<string, number>, key: string): void {
  const n = map.get(key);
  if (n !== undefined) map.set(key, n + 1);
  else if (map.size < MAX_OUTCOME_KEYS) map.set(key, 1);
  else map.set("other", (map.get("other") ?? 0) + 1);
}

/** A SQLSTATE's class (`23505` → `23`), the label failures and attempts are counted by; `none` without one. */
function sqlstateClass(sqlstate: string | null): string {
  return sqlstate !== null && /^[0-9A-Z]{5}$/.test(sqlstate) ? sqlstate.slice(0, 2) : "none";
}
