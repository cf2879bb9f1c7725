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
import type { AuditEntry, AuditView, LogRecord } from "@auditpipe/parse";
import { detached } from "@auditpipe/parse";
import { MessageKind, messageKind } from "./_messages.ts";
import { Control, controlOf } from "./_statement.ts";
import {
  DEFAULT_MAX_PENDING,
  DEFAULT_MAX_SESSIONS,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
  PID_SLOTS,
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
  /**
   * Where things happened, by record number in the range: each edge record's, each hand-over's,
   * and where each session of its state began (the order of a merged state's sessions).
   */
  edgeAt: number[];
  handedAt: [string | number, number][];
  bornAt: [string | number, number][];
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
  /** An owned key per process id's low bits (isOwned), kept as a copy (see detached()). */
  private readonly ownedByPid: (string | number | undefined)[] = new Array<string | number | undefined>(
    PID_SLOTS,
  ).fill(undefined);
  private readonly shapes = new Map<string | number, string | null>();
  /** A session's last transaction id in its head (a new one starts a transaction). */
  private readonly lastVxid = new Map<string | number, string>();
  /** Records given so far, and the numbers of those on the edge, of hand-overs and of session starts. */
  private n = 0;
  private readonly edgeAt: number[] = [];
  private readonly handedAt = new Map<string | number, number>();
  private readonly bornAt = new Map<string | number, number>();

  /**
   * `miscPairs`: (user, database) pairs known to show MISC entries before the range (those of
   * an earlier range's merged state: they only grow), so that its join need not wait on them.
   */
  constructor(options: OutcomeJoinOptions<H>, miscPairs: readonly string[] = []) {
    this.join = new OutcomeJoin<H>(options);
    this.join.knowMisc(miscPairs);
    this.join.onSessionStart((key) => this.bornAt.set(key, this.n));
    this.assumed = miscPairs;
  }

  private readonly assumed: readonly string[];

  /** The next record: joined here, or to be kept for the merge (see Route). */
  record(record: LogRecord, entry?: AuditEntry, handle?: H): Route {
    const key = record.sessionId ?? record.pid;
    const route = this.route(key, record, entry);
    if (route !== Route.EDGE) this.join.record(record, entry, handle);
    if (route !== Route.JOIN) this.edgeAt.push(this.n);
    if (route === Route.HAND_OVER) {
      this.shapes.set(key!, this.join.shapeOf(key!) ?? null);
      this.handedAt.set(key!, this.n);
    }
    this.n++;
    return route;
  }

  /**
   * An entry read as an AuditView (OutcomeJoin.entry): joined here when its session is this
   * range's (Route.JOIN, as record() would route it); false, having done nothing, otherwise (the
   * caller gives the record and entry to record()).
   */
  entry(view: AuditView, handle: H): boolean {
    if (!this.isOwned(view.sessionId, view.pid) || !this.join.entry(view, handle)) return false;
    this.n++;
    return true;
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
      return key === null || this.isOwned(key, record.pid) ? Route.JOIN : Route.EDGE;
    }
    if (key === null || this.isOwned(key, record.pid)) return Route.JOIN;
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

  /**
   * owned.has(key), asked first of the key last found owned for the record's process id (by its
   * low bits): one compare with a session id of the same backend instead of hashing the record's
   * for the set (OutcomeJoin's session cache, for the same reason). Keys are never disowned.
   */
  private isOwned(key: string | number, pid: number | null): boolean {
    const slot = pid === null ? -1 : pid & (PID_SLOTS - 1);
    if (slot >= 0 && this.ownedByPid[slot] === key) return true;
    if (!this.owned.has(key)) return false;
    if (slot >= 0) this.ownedByPid[slot] = typeof key === "string" ? detached(key) : key;
    return true;
  }

  private handOver(key: string | number): Route {
    this.owned.add(key);
    this.lastVxid.delete(key);
    return Route.HAND_OVER;
  }

  /** The range is read: what its join gives the merge. */
  result<J>(toJson: (handle: H) => J): RangeJoinResult<J> {
    const w = this.join.watch;
    const state = this.join.snapshot(toJson);
    return {
      state,
      shapes: [...this.shapes],
      edgeAt: this.edgeAt,
      handedAt: [...this.handedAt],
      bornAt: state.sessions.map(([key]) => [key, this.bornAt.get(key)!]),
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
  const handed = new Map<string | number, { misc: boolean; entries: number; place: number }>();
  // Where each session stands in one join's order (its sessions map's: the order each began):
  // those of the state at the start first, as they were, then by the record that began them.
  const place = new Map<string | number, number>();
  const n = start?.sessions.length ?? 0;
  start?.sessions.forEach(([key], i) => {
    place.set(key, i - n);
  });
  let at = 0;
  join.onSessionStart((key) => place.set(key, at));
  let same = true;
  let i = 0;
  edge((route, record, entry, handle) => {
    at = range.edgeAt[i++]!;
    both = route !== Route.EDGE;
    join.record(record, entry, handle);
    both = false;
    if (route !== Route.HAND_OVER) return;
    const key = (record.sessionId ?? record.pid)!;
    const was = join.handOver(key);
    if (was === undefined || was.shape === undefined || was.shape !== shapes.get(key)) same = false;
    else handed.set(key, { ...was, place: place.get(key)! });
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
  const handedAt = new Map(range.handedAt);
  const bornAt = new Map(range.bornAt);
  const sessions: [number, (typeof end.sessions)[number]][] = end.sessions.map((s) => [place.get(s[0])!, s]);
  for (const [key, s] of range.state.sessions) {
    const was = handed.get(key);
    const born = bornAt.get(key)!;
    // Taken over: the session goes on where it stood (unless it ended and began again since).
    if (was === undefined || born !== handedAt.get(key)) sessions.push([born, [key, s]]);
    else
      sessions.push([
        was.place,
        [key, { ...s, misc: s.misc || was.misc, entries: was.entries + s.entries - 1 }],
      ]);
  }
  sessions.sort((a, b) => a[0] - b[0]);
  return {
    version: 1,
    sessions: sessions.map(([, s]) => s),
    miscPairs: [...pairs],
    prepared: end.prepared,
    finished: end.finished,
    counts: {
      capped: end.counts.capped + range.state.counts.capped,
      attempts: end.counts.attempts + range.state.counts.attempts,
    },
  };
}
