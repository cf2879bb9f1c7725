/**
 * The outcome join of one range of a stream, started without the join's state at the range's
 * start (analyze's parallel ranges), and merged with that state once it is known: the merged
 * decisions and state are exactly those of one join reading the stream in order, or the merge
 * says it cannot tell (then the range is joined in order).
 *
 * Sessions are what the state holds, and a session forgets its past at the first statement of a
 * new transaction: from there on its records are joined at once (`RangeJoin`). What a session
 * logs before that point in the range (its head), and every record of a session that never gets
 * there, is the range's edge: the caller keeps those few records, and `mergeRange` replays them
 * on the state at the range's start, checking at each hand-over point that the session stands
 * exactly as the range's own join started it. What crosses sessions is watched (JoinWatch): MISC
 * entries others wait on, prepared transactions, the caps; where it mattered, the merge refuses.
 * Server starts, stops and crashes end every session: they go to both joins.
 *
 * Memory: the edge is bounded by the sessions open at the range's start and their unfinished
 * transactions, not by the range's size — where the log carries virtual transaction ids (csvlog,
 * jsonlog, `%v`). Without them only a BEGIN starts a session's part of the range's join: the
 * records of a session that only runs single statements are all edge. Pure: no I/O.
 */
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { detached } from "@auditpipe/parse";
import { MessageKind, messageKind } from "./_messages.ts";
import { Control, controlOf } from "./_statement.ts";
import {
  DEFAULT_MAX_PENDING,
  DEFAULT_MAX_SESSIONS,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
} from "./join.ts";
import type { StreamEvent } from "./types.ts";

/** Where a record went: the range's join, the edge (kept by the caller for the merge), or both. */
export const Route = {
  JOIN: 0,
  EDGE: 1,
  /** The edge, and the range's join: its session is handed over here (see mergeRange). */
  HAND_OVER: 2,
  /** Both: it ends every session (a server start, stop or crash). */
  BOTH: 3,
} as const;
export type Route = (typeof Route)[keyof typeof Route];

const NO_XACT = /\/0$/;

/** What a range's own join left: its state at the range's end and how it started each session it took over. */
export interface RangeJoinResult<J> {
  state: OutcomeJoinSnapshot<J>;
  /** Per session taken over at a statement: its shape there (OutcomeJoin.shapeOf; null: none). */
  shapes: [string | number, string | null][];
  /** It did something whose outcome depends on other sessions (JoinWatch: prepared transactions, caps). */
  unsure: boolean;
  /** The pairs it was told show MISC entries (the state at its start must know them). */
  assumedPairs: readonly string[];
  /** Its entries waited for transaction control to be known in these (user, database) pairs and sessions. */
  awaitedPairs: string[];
  awaitedSessions: (string | number)[];
  peakPending: number;
  peakSessions: number;
}

/** A range's records joined from an empty state, per session from where its past stops mattering. */
export class RangeJoin<H> {
  readonly join: OutcomeJoin<H>;
  /** Sessions this join took over (their later records are joined here). */
  private readonly owned = new Set<string | number>();
  private readonly shapes = new Map<string | number, string | null>();
  /** A session's last transaction id in its head (a new one starts a transaction). */
  private readonly lastVxid = new Map<string | number, string>();

  /**
   * `miscPairs`: (user, database) pairs known to show MISC entries before the range (those of
   * an earlier range's merged state: they only grow), so that its join need not wait on them.
   */
  constructor(options: OutcomeJoinOptions<H>, miscPairs: readonly string[] = []) {
    this.join = new OutcomeJoin<H>(options);
    this.join.knowMisc(miscPairs);
    this.assumed = miscPairs;
  }

  private readonly assumed: readonly string[];

  /** The next record: joined here, or to be kept for the merge (see Route). */
  record(record: LogRecord, entry?: AuditEntry, handle?: H): Route {
    const key = record.sessionId ?? record.pid;
    const route = this.route(key, record, entry);
    if (route !== Route.EDGE) this.join.record(record, entry, handle);
    if (route === Route.HAND_OVER) this.shapes.set(key!, this.join.shapeOf(key!) ?? null);
    return route;
  }

  private route(key: string | number | null, record: LogRecord, entry: AuditEntry | undefined): Route {
    if (entry === undefined) {
      if (record.severity === "LOG") {
        const kind = messageKind(record);
        if (
          kind === MessageKind.CRASH ||
          kind === MessageKind.SERVER_STOP ||
          kind === MessageKind.SERVER_START ||
          kind === MessageKind.RECOVERY
        )
          return Route.BOTH;
        if (kind === MessageKind.CONNECTION && key !== null && !this.owned.has(key)) {
          // A new backend: the session before it under this key ends (on the edge); the rest is new.
          this.owned.add(key);
          return Route.EDGE;
        }
      }
      return key === null || this.owned.has(key) ? Route.JOIN : Route.EDGE;
    }
    if (key === null || this.owned.has(key)) return Route.JOIN;
    const vxid = record.virtualTransactionId;
    const control = controlOf(entry).control;
    // Without a transaction id (stderr without %v, syslog), only a BEGIN says a transaction starts.
    if (vxid === null || vxid === "") return control === Control.BEGIN ? this.handOver(key) : Route.EDGE;
    if (NO_XACT.test(vxid)) return Route.EDGE;
    const last = this.lastVxid.get(key);
    const starts =
      control === Control.BEGIN || (control === Control.NONE && last !== undefined && last !== vxid);
    if (!starts) {
      if (last !== vxid) this.lastVxid.set(key, detached(vxid));
      return Route.EDGE;
    }
    return this.handOver(key);
  }

  private handOver(key: string | number): Route {
    this.owned.add(key);
    this.lastVxid.delete(key);
    return Route.HAND_OVER;
  }

  /** The range is read: what its join gives the merge. */
  result<J>(toJson: (handle: H) => J): RangeJoinResult<J> {
    const w = this.join.watch;
    return {
      state: this.join.snapshot(toJson),
      shapes: [...this.shapes],
      unsure: w.twoPhase || this.join.counts.capped > 0,
      assumedPairs: this.assumed,
      awaitedPairs: [...w.awaitedPairs],
      awaitedSessions: [...w.awaitedSessions],
      peakPending: w.peakPending,
      peakSessions: w.peakSessions,
    };
  }
}

/** Replays the range's edge records, in order, through `record` (with the route each was given). */
export type EdgeReplay<H> = (
  record: (route: Route, record: LogRecord, entry?: AuditEntry, handle?: H) => void,
) => void;

/**
 * The join's state at the range's end, from the state at its start (none: the stream's start),
 * the range's edge and what its own join gave; the edge's decisions, attempts and events go to
 * `options` (events of records that went to both joins only from the range's own). Undefined
 * when the range's join cannot be taken for the serial one (the caller joins the range in order).
 */
export function mergeRange<H, J>(
  start: OutcomeJoinSnapshot<J> | undefined,
  range: RangeJoinResult<J>,
  edge: EdgeReplay<H>,
  options: OutcomeJoinOptions<H>,
  fromJson: (json: J) => H,
  toJson: (handle: H) => J,
): OutcomeJoinSnapshot<J> | undefined {
  if (range.unsure) return undefined;
  let both = false;
  const event = options.event;
  const edgeOptions: OutcomeJoinOptions<H> = {
    ...options,
    ...(event === undefined
      ? {}
      : {
          event: (e: StreamEvent) => {
            if (!both) event(e);
          },
        }),
  };
  const join =
    start === undefined ? new OutcomeJoin<H>(edgeOptions) : OutcomeJoin.restore(start, edgeOptions, fromJson);
  const awaitedBefore = start?.sessions.some(([, s]) => s.awaiting.length > 0) ?? false;
  const shapes = new Map(range.shapes);
  const handed = new Map<string | number, { misc: boolean; entries: number }>();
  let same = true;
  edge((route, record, entry, handle) => {
    both = route !== Route.EDGE;
    join.record(record, entry, handle);
    both = false;
    if (route !== Route.HAND_OVER) return;
    const key = (record.sessionId ?? record.pid)!;
    const was = join.handOver(key);
    if (was === undefined || was.shape === undefined || was.shape !== shapes.get(key)) same = false;
    else handed.set(key, was);
  });
  if (!same) return undefined;
  const end = join.snapshot(toJson);
  const w = join.watch;
  const max = options.maxPending ?? DEFAULT_MAX_PENDING;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  // (Prepared transactions on the edge alone are the serial join's: the range's own had none.)
  if (w.peakPending + range.peakPending > max || w.peakSessions + range.peakSessions > maxSessions)
    return undefined;
  // A MISC entry in one join settles what waits in the other's sessions of its user and database;
  // what waited in the range's own would not have where the state before knew transaction control.
  const known = new Set(start?.miscPairs);
  if (range.assumedPairs.some((p) => !known.has(p))) return undefined;
  if ((w.awaitedPairs.size > 0 || awaitedBefore) && range.state.miscPairs.some((p) => !known.has(p)))
    return undefined;
  const pairs = new Set(end.miscPairs);
  if (range.awaitedPairs.some((p) => pairs.has(p)) || range.awaitedSessions.some((k) => handed.get(k)?.misc))
    return undefined;
  for (const p of range.state.miscPairs) pairs.add(p);
  if (pairs.size >= 10_000) return undefined;
  // The edge's sessions, then the range's own: one join keeps them in the order each began. The
  // order only decides which session the session cap lets go first: past it (DEFAULT_MAX_SESSIONS
  // open at once) a later range may let another one go than one join in order would.
  const sessions = range.state.sessions.map(([key, s]): (typeof end.sessions)[number] => {
    const was = handed.get(key);
    return was === undefined
      ? [key, s]
      : [key, { ...s, misc: s.misc || was.misc, entries: was.entries + s.entries - 1 }];
  });
  return {
    version: 1,
    sessions: [...end.sessions, ...sessions],
    miscPairs: [...pairs],
    prepared: end.prepared,
    finished: end.finished,
    counts: {
      capped: end.counts.capped + range.state.counts.capped,
      attempts: end.counts.attempts + range.state.counts.attempts,
    },
  };
}
