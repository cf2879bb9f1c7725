/**
 * The outcome join: every pgAudit entry joined with what its backend logged after it. One join
 * follows one log stream (the records of one server in one format, in the order it wrote them)
 * and keeps, per session, the open transaction: its statements with their undecided entries, its
 * savepoints, whether an error aborted it. Records go in one at a time; decisions come out
 * through `decided` as soon as the log settles them, never from anything but records already
 * given (so a consumer that cuts the stream into batches decides the same way on a replay).
 *
 * How each decision is made, and where the log cannot tell: docs/architecture.md ("Outcomes").
 * Pure: no I/O, no clock.
 */
import { type AuditEntry, type AuditView, detached, type LogRecord } from "@auditpipe/parse";
import { crashedPid, MessageKind, messageKind, parameterChange } from "./_messages.ts";
import {
  Control,
  type ControlInfo,
  controlOf,
  isInternalQuery,
  isSettingCommand,
  settingOf,
  statementText,
  textKey,
} from "./_statement.ts";
import { type Outcome, type StreamEvent, UnknownReason } from "./types.ts";

/** Entries tracked undecided at most; beyond it a new entry is decided `unknown` (cap) at once. */
export const DEFAULT_MAX_PENDING = 200_000;
/** Sessions tracked at most; beyond it the oldest is let go, its undecided entries `unknown` (cap). */
export const DEFAULT_MAX_SESSIONS = 20_000;
/** Prepared transactions and (user, database) pairs remembered at most. */
const MAX_PREPARED = 10_000;
const MAX_MISC_PAIRS = 10_000;
/** Slots of the caches by process id (OutcomeJoin's sessions, RangeJoin's owned keys): a power of two. */
export const PID_SLOTS = 256;

export interface OutcomeJoinOptions<H> {
  /** An entry's outcome is decided. Called once per entry given to record(). */
  decided(handle: H, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null): void;
  /**
   * An ERROR or FATAL that belongs to no audited statement: a statement refused before pgAudit
   * logged it (permission denied, a missing relation, a syntax error, a command in a failed
   * transaction block), or a connection refused (a failed login).
   */
  attempt?(record: LogRecord): void;
  /** Server and audit-setting events (coverage). */
  event?(event: StreamEvent): void;
  /**
   * Every session's pgaudit.log includes `misc` (or `all`), so BEGIN, COMMIT and ROLLBACK are in
   * the log. Without it, the join infers it per session and per (user, database) from the MISC
   * entries it sees, and until then calls what raised no error `unknown`.
   */
  miscLogged?: boolean;
  maxPending?: number;
  maxSessions?: number;
  /**
   * Hash a statement's text (textKey) only where the join compares it: keep the text meanwhile, a
   * view of the parser's chunk, until releaseTexts() or snapshot(), which the owner then calls
   * once per chunk it parsed. Most statements leave their transaction before that and are never
   * hashed (hashing was about half of onEntry's own time in a profile of the sidecar). Without it,
   * every text is hashed when its statement begins.
   */
  holdTexts?: boolean;
}

/** One audited statement (a statement id of a session), while any of its entries is undecided. */
interface Stmt<H> {
  /** pgAudit's STATEMENT_ID: and the id of the last internal statement attached to it. */
  id: number;
  lastId: number;
  /** Order within the session (savepoints mark it). */
  seq: number;
  /**
   * textKey of its text, or null when pgAudit did not log the text; read through keyOf(), as it
   * may still be `text`'s to compute (OutcomeJoinOptions.holdTexts).
   */
  key: number | null;
  /** The text, while its key is not computed yet (holdTexts); null otherwise. */
  text: string | null;
  control: Control;
  name: string | null;
  chain: boolean;
  handles: H[];
  /** Decided (it left its transaction): later entries of its id start a statement of their own. */
  done: boolean;
}

interface Tx<H> {
  /** Virtual transaction id (`%v`, csvlog/jsonlog vxid), when the format carries it. */
  vxid: string | null;
  /** A BEGIN (or START TRANSACTION) was seen: an explicit block. */
  explicit: boolean;
  /** An error inside the block: it can only roll back, or go on after a ROLLBACK TO SAVEPOINT. */
  aborted: boolean;
  stmts: Stmt<H>[];
  savepoints: { name: string | null; seq: number }[];
  /** COMMIT, PREPARE TRANSACTION, COMMIT/ROLLBACK PREPARED, or an unclear ROLLBACK, awaiting its end. */
  ending: Stmt<H> | null;
}

/**
 * Strings the join keeps past the record they came from (a session's key, user and database, a
 * transaction's vxid, a savepoint's or prepared transaction's name) are detached copies: a
 * parser's fields are views of its whole chunk of text, and one kept for a session's life kept
 * that chunk, promoted to V8's old generation, for as long (see detached()).
 */
interface Session<H> {
  /** Its key in the sessions map (detached). */
  key: string | number;
  user: string | null;
  database: string | null;
  tx: Tx<H> | null;
  /** The latest statement: more entries of its id are its substatements or other relations. */
  cur: Stmt<H> | null;
  /** A MISC entry was seen: this session's transaction control is logged. */
  misc: boolean;
  /** Audit entries seen in the session (a FATAL before any is a refused connection). */
  entries: number;
  seq: number;
  /** Entries whose outcome holds if transaction control is logged: decided once that is known. */
  awaiting: { handle: H; outcome: Outcome }[];
  /** Let go (ended, or dropped by the cap): a record of its key is another session's. */
  ended: boolean;
}

/** What snapshot() writes: the join's state between two records, JSON-safe. */
export interface OutcomeJoinSnapshot<J> {
  version: 1;
  sessions: [string | number, SessionSnapshot<J>][];
  miscPairs: string[];
  prepared: [string, J[]][];
  finished: [string, Outcome][];
  counts: JoinCounts;
}

interface StmtSnapshot<J> {
  id: number;
  lastId: number;
  seq: number;
  key: number | null;
  control: Control;
  name: string | null;
  chain: boolean;
  handles: J[];
}

interface SessionSnapshot<J> {
  user: string | null;
  database: string | null;
  misc: boolean;
  entries: number;
  seq: number;
  cur: StmtSnapshot<J> | null;
  tx: {
    vxid: string | null;
    explicit: boolean;
    aborted: boolean;
    stmts: StmtSnapshot<J>[];
    savepoints: { name: string | null; seq: number }[];
    ending: number | null;
  } | null;
  awaiting: [J, Outcome][];
}

/**
 * What a join did that a join of a later range, started without the state before it, could not
 * know to do the same way (range.ts): it then falls back to joining that range in order.
 */
export interface JoinWatch {
  /**
   * Entries waited for transaction control to be known: the (user, database) pairs and sessions
   * they waited in (whether they had to depends on the MISC entries seen before).
   */
  awaitedPairs: Set<string>;
  awaitedSessions: Set<string | number>;
  /** A prepared transaction was prepared or finished (they cross sessions). */
  twoPhase: boolean;
  /** The most entries undecided, and sessions tracked, at once (the caps are shared). */
  peakPending: number;
  peakSessions: number;
}

/** Counters for what the join did, for reports and metrics. */
export interface JoinCounts {
  /** Entries decided `unknown` because of the caps (memory bound). */
  capped: number;
  /** ERROR/FATAL records reported as attempts. */
  attempts: number;
}

const NO_XACT = /\/0$/;

/** A statement's key: computed from its held text the first time it is read. */
function keyOf<H>(st: Stmt<H>): number | null {
  const text = st.text;
  if (text !== null) {
    st.key = textKey(text);
    st.text = null;
  }
  return st.key;
}

/** The savepoints of a transaction that set none: one shared empty list, replaced on the first. */
const NO_SAVEPOINTS: { name: string | null; seq: number }[] = [];

/** What the join reads of an entry's record: a LogRecord, or an AuditView. */
type EntryRecord = Pick<LogRecord, "pid" | "user" | "database" | "virtualTransactionId">;
/** What the join reads of an entry: an AuditEntry, or an AuditView. */
type EntryFields = Pick<AuditEntry, "statementId" | "class" | "command" | "statement">;

function vxidOf(record: Pick<LogRecord, "virtualTransactionId">): string | null {
  const v = record.virtualTransactionId;
  return v === null || v === "" ? null : v;
}

export class OutcomeJoin<H> {
  private readonly sessions = new Map<string | number, Session<H>>();
  /** (user, database) pairs whose sessions showed MISC entries: their transaction control is logged. */
  private readonly miscPairs = new Set<string>();
  /** Prepared transactions by gid: their entries, decided by COMMIT/ROLLBACK PREPARED. */
  private readonly prepared = new Map<string, H[]>();
  /**
   * COMMIT/ROLLBACK PREPARED seen before the PREPARE they finish: syslog gives a process's last
   * message out only when it logs again, so the preparing session's PREPARE can come later.
   */
  private readonly finished = new Map<string, Outcome>();
  private pending = 0;
  readonly counts: JoinCounts = { capped: 0, attempts: 0 };
  /** What a range join (range.ts) checks before it takes this join's decisions for a serial pass's. */
  readonly watch: JoinWatch = {
    awaitedPairs: new Set(),
    awaitedSessions: new Set(),
    twoPhase: false,
    peakPending: 0,
    peakSessions: 0,
  };
  private readonly options: OutcomeJoinOptions<H>;
  private readonly maxPending: number;
  private readonly maxSessions: number;

  constructor(options: OutcomeJoinOptions<H>) {
    this.options = options;
    this.decided = options.decided;
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    this.holdTexts = options.holdTexts === true;
  }

  private readonly holdTexts: boolean;
  /** Statements holding their text (holdTexts), since the last releaseTexts(). */
  private held: Stmt<H>[] = [];

  /**
   * Lets go of the statement texts held since the last call (holdTexts): an open statement's
   * key is computed now, a decided one's is never read again. After it the join keeps no view of
   * the text it was given.
   */
  releaseTexts(): void {
    const held = this.held;
    const n = held.length;
    if (n === 0) return;
    for (let i = 0; i < n; i++) {
      const st = held[i]!;
      if (st.done) st.text = null;
      else keyOf(st);
    }
    this.held = [];
  }

  private readonly decided: OutcomeJoinOptions<H>["decided"];
  /** The session of the last record without a process id (consecutive records of one session are common). */
  private lastKey: string | number | null = null;
  private lastSession: Session<H> | undefined;
  /**
   * The session last found for a process id, by its low bits: sessions of many backends take
   * turns in a log, so the last record's session is often another's, and comparing its session id
   * with the record's cost a whole compare (ids of one second differ in their last characters);
   * here the one compare is with a session of the same backend, mostly the record's, which saves
   * hashing the id for the map too. Only a hint: a session found here is taken when its key is
   * the record's and it has not ended (an ended session is never found again, so a slot holds at
   * most one stale session: PID_SLOTS small objects).
   */
  private readonly byPid: (Session<H> | undefined)[] = new Array<Session<H> | undefined>(PID_SLOTS).fill(
    undefined,
  );

  /** Entries given and not yet decided. */
  get undecided(): number {
    return this.pending;
  }

  /**
   * The next record of the stream, and its audit entry (with the caller's handle for it) if it
   * carries one. Every entry given here is decided exactly once, through `decided`.
   */
  record(record: LogRecord, entry?: AuditEntry, handle?: H): void {
    const key = record.sessionId ?? record.pid;
    if (entry !== undefined) {
      if (key === null) {
        this.options.decided(handle as H, "unknown", null, UnknownReason.NO_SESSION);
        return;
      }
      this.onEntry(this.session(key, record), record, entry, handle as H);
      return;
    }
    switch (record.severity) {
      case "ERROR":
        this.onError(key, record);
        return;
      case "FATAL":
      case "PANIC":
        this.onFatal(key, record);
        return;
      case "LOG":
        if (this.onMessage(key, record)) return;
        break;
    }
    // Anything else a session logs in another transaction: the open one is over.
    if (key === null) return;
    const s = this.sessions.get(key);
    const vxid = vxidOf(record);
    if (s?.tx?.vxid && vxid !== null && vxid !== s.tx.vxid && !NO_XACT.test(vxid)) this.txOver(s, vxid);
  }

  /**
   * An entry read as an AuditView (ParserOptions.auditView), joined as record(record, entry,
   * handle) joins the record and entry it stands for; false, having done nothing, for an entry
   * that may make an event (a setting command, when `event` is set: the event carries a record).
   */
  entry(view: AuditView, handle: H): boolean {
    if (this.options.event !== undefined && isSettingCommand(view.command)) return false;
    this.onEntry(this.session(view.sessionId, view), view, view, handle);
    return true;
  }

  /**
   * The stream ends here (analyze read its last file): whatever is undecided is `unknown`
   * (log-ended, or two-phase for prepared transactions never finished).
   */
  end(): void {
    for (const [key, s] of this.sessions) this.endSession(key, s, "ended");
    for (const [gid, handles] of this.prepared) {
      this.prepared.delete(gid);
      for (const h of handles) this.decide(h, "unknown", null, UnknownReason.TWO_PHASE);
    }
  }

  // ---- entries ---------------------------------------------------------------------------

  private onEntry(s: Session<H>, record: EntryRecord, entry: EntryFields, handle: H): void {
    s.entries++;
    if (entry.class === "MISC" && !s.misc) this.learnMisc(s);
    // (A view is never a setting here while events are on: entry() gives it back.)
    const setting = this.options.event ? settingOf(entry) : undefined;
    if (setting) this.options.event!({ kind: "setting-changed", ...setting, record: record as LogRecord });
    if (this.pending >= this.maxPending) {
      this.counts.capped++;
      this.options.decided(handle, "unknown", null, UnknownReason.CAP);
      return;
    }
    if (++this.pending > this.watch.peakPending) this.watch.peakPending = this.pending;
    const vxid = vxidOf(record);
    const cur = s.cur;
    // More of the same statement: a substatement, another relation, a function body's statement.
    if (cur !== null && !cur.done && (entry.statementId === cur.id || entry.statementId === cur.lastId)) {
      cur.handles.push(handle);
      return;
    }
    const text = statementText(entry.statement);
    const tx = s.tx;
    // Work PostgreSQL does for a statement under a new id: deferred checks and triggers fired by a
    // COMMIT (same transaction), or a foreign-key check where no vxid tells.
    if (tx !== null && cur !== null && !cur.done) {
      const sameTx = vxid !== null && tx.vxid !== null ? vxid === tx.vxid : null;
      const internal = sameTx === null && isInternalQuery(text);
      // (An unclear ROLLBACK followed in the same transaction was a ROLLBACK TO: not its work.)
      const ending = tx.ending !== null && tx.ending.control !== Control.ROLLBACK_UNCLEAR;
      if ((ending && (sameTx === true || internal)) || (internal && tx.ending === null)) {
        const target = tx.ending ?? cur;
        target.lastId = entry.statementId;
        target.handles.push(handle);
        s.cur = target;
        return;
      }
    }
    const info = controlOf(entry);
    const hold = text !== null && this.holdTexts;
    const stmt: Stmt<H> = {
      id: entry.statementId,
      lastId: entry.statementId,
      seq: s.seq + 1,
      key: text === null || hold ? null : textKey(text),
      text: hold ? text : null,
      control: info.control,
      name: info.name === null ? null : detached(info.name),
      chain: info.chain,
      handles: [handle],
      done: false,
    };
    if (hold) this.held.push(stmt);
    this.beforeStatement(s, vxid, info, stmt);
    s.seq++;
    s.cur = stmt;
    this.statement(s, stmt, vxid);
  }

  /** A new statement begins: what that says about the transaction open so far. */
  private beforeStatement(s: Session<H>, vxid: string | null, info: ControlInfo, next: Stmt<H> | null): void {
    const tx = s.tx;
    if (tx === null) return;
    let sameTx = vxid !== null && tx.vxid !== null ? vxid === tx.vxid : null;
    if (tx.ending !== null) {
      // The ending statement completed without an error (an unclear ROLLBACK: the same
      // transaction going on means it was a ROLLBACK TO SAVEPOINT).
      if (tx.ending.control === Control.ROLLBACK_UNCLEAR && sameTx === true) {
        const ending = tx.ending;
        tx.ending = null;
        tx.stmts = tx.stmts.filter((st) => st !== ending);
        this.rollbackTo(tx, tx.savepoints.at(-1) ?? null);
        tx.stmts.push(ending);
        return;
      }
      this.endConfirmed(s, tx);
      return;
    }
    if (tx.explicit) {
      if (!tx.aborted) {
        if (sameTx === false) this.closeTx(s, tx, "unknown", UnknownReason.END_NOT_LOGGED);
        return;
      }
      // An error aborted the block. The same transaction going on means a ROLLBACK TO SAVEPOINT,
      // which pgAudit does not log in a failed block; another means it ended (nor are COMMIT and
      // ROLLBACK logged there: both roll back).
      if (sameTx === true) {
        this.recoverUnlogged(tx);
      } else if (sameTx === false || tx.savepoints.length === 0) {
        this.closeTx(s, tx, "rolled_back", null);
      } else {
        // No vxid: a ROLLBACK TO SAVEPOINT or the block's end? What followed the innermost
        // savepoint is rolled back either way; what came before it cannot be told.
        this.rollbackTo(tx, tx.savepoints.at(-1)!);
        this.closeTx(s, tx, "unknown", UnknownReason.SAVEPOINT_AMBIGUOUS);
      }
      return;
    }
    // An implicit transaction: the same vxid is the same transaction (a multi-statement query
    // string, or a pipeline); otherwise it committed when its statement ended. Without a vxid,
    // the same text as the statement before is taken for the next statement of one query
    // string (pgAudit logs the whole string for each), any other text for a new transaction.
    if (sameTx === null && next !== null && (next.text !== null || next.key !== null)) {
      const last = tx.stmts.at(-1);
      sameTx = last !== undefined && keyOf(last) === keyOf(next);
    }
    if (sameTx === true && info.control !== Control.BEGIN) return;
    if (sameTx === true) {
      tx.explicit = true; // `BEGIN; …; COMMIT` in one string: the block starts here
      return;
    }
    this.closeTx(s, tx, "succeeded", null);
  }

  /** Adds a new statement to the session's transaction (opening one), by what it is. */
  private statement(s: Session<H>, stmt: Stmt<H>, vxid: string | null): void {
    let tx = s.tx;
    switch (stmt.control) {
      case Control.BEGIN:
        tx ??= this.open(s, vxid, true);
        tx.explicit = true;
        break;
      case Control.COMMIT:
      case Control.PREPARE:
      case Control.ROLLBACK_UNCLEAR:
        if (stmt.control === Control.PREPARE) this.watch.twoPhase = true;
        tx ??= this.open(s, vxid, false);
        tx.ending = stmt;
        break;
      case Control.COMMIT_PREPARED:
      case Control.ROLLBACK_PREPARED:
        this.watch.twoPhase = true;
        // Runs outside any block, in a transaction of its own (inside one it fails).
        tx ??= this.open(s, vxid, false);
        tx.ending = stmt;
        break;
      case Control.ROLLBACK: {
        if (tx !== null) this.closeTx(s, tx, "rolled_back", null);
        this.decideStmt(stmt, "succeeded", null, null);
        if (stmt.chain) this.open(s, null, true);
        return;
      }
      case Control.ROLLBACK_TO: {
        if (tx === null) tx = this.open(s, vxid, false);
        else {
          const named =
            stmt.name === null ? tx.savepoints.at(-1) : tx.savepoints.findLast((sp) => sp.name === stmt.name);
          // In a block whose BEGIN the join saw, an unknown savepoint is an error (which follows);
          // otherwise it was set before what the join saw: everything it saw is after it.
          if (named !== undefined) this.rollbackTo(tx, named);
          else if (!tx.explicit) this.rollbackTo(tx, { name: stmt.name, seq: 0 });
        }
        break;
      }
      default:
        tx ??= this.open(s, vxid, false);
    }
    if (tx.vxid === null && vxid !== null) tx.vxid = detached(vxid);
    if (stmt.control === Control.SAVEPOINT) {
      if (tx.savepoints === NO_SAVEPOINTS) tx.savepoints = [];
      tx.savepoints.push({ name: stmt.name, seq: stmt.seq });
    }
    if (stmt.control === Control.RELEASE) {
      const at =
        stmt.name === null
          ? tx.savepoints.length - 1
          : tx.savepoints.findLastIndex((sp) => sp.name === stmt.name);
      if (at >= 0) tx.savepoints.length = at;
    }
    tx.stmts.push(stmt);
  }

  /** A new transaction of the session. */
  private open(s: Session<H>, vxid: string | null, explicit: boolean): Tx<H> {
    const tx: Tx<H> = {
      vxid: vxid === null ? null : detached(vxid),
      explicit,
      aborted: false,
      stmts: [],
      savepoints: NO_SAVEPOINTS,
      ending: null,
    };
    s.tx = tx;
    return tx;
  }

  // ---- errors ------------------------------------------------------------------------------

  private onError(key: string | number | null, record: LogRecord): void {
    const s = key === null ? undefined : this.sessions.get(key);
    const tx = s?.tx ?? null;
    if (s === undefined || tx === null) {
      this.attempt(record);
      return;
    }
    const vxid = vxidOf(record);
    if (vxid !== null && tx.vxid !== null && vxid !== tx.vxid && !NO_XACT.test(vxid)) {
      // Another transaction: the open one ended before this error's statement began.
      this.txOver(s, vxid);
      this.attempt(record);
      return;
    }
    const target = tx.aborted ? null : this.target(tx, record.query);
    if (target !== null) {
      this.fail(s, tx, target, record.sqlState);
      return;
    }
    // A statement pgAudit never logged failed (refused before execution): an attempt.
    if (tx.ending !== null) this.endConfirmed(s, tx);
    else if (tx.explicit) tx.aborted = true;
    else if (vxid !== null && vxid === tx.vxid) this.closeTx(s, tx, "rolled_back", null);
    else this.closeTx(s, tx, "succeeded", null);
    this.attempt(record);
  }

  /**
   * The statement of the open transaction an error belongs to: the latest whose text is the
   * error's STATEMENT (scanning back over statements of the same transaction: a deferred check or
   * trigger logged after the statement that fired it). Where either text is not logged, the
   * latest statement (documented: an error of a statement pgAudit did not log is then pinned on it).
   */
  private target(tx: Tx<H>, query: string | null): Stmt<H> | null {
    const stmts = tx.stmts;
    const key = query === null ? null : textKey(query);
    for (let i = stmts.length - 1; i >= 0; i--) {
      const st = stmts[i]!;
      const own = keyOf(st);
      if (key !== null && own === key) return st;
      if (key === null || own === null) {
        // Nothing to compare: the latest statement that can fail (not BEGIN, SAVEPOINT, RELEASE).
        if (
          st.control === Control.BEGIN ||
          st.control === Control.SAVEPOINT ||
          st.control === Control.RELEASE
        )
          continue;
        return st;
      }
    }
    return null;
  }

  /** `target` raised an error: it and what followed it in its transaction failed. */
  private fail(s: Session<H>, tx: Tx<H>, target: Stmt<H>, sqlstate: string | null): void {
    const at = tx.stmts.indexOf(target);
    for (const st of tx.stmts.splice(at)) this.decideStmt(st, "failed", sqlstate, null);
    if (tx.ending === target) {
      // A failed COMMIT (a deferred constraint) or PREPARE: the transaction rolled back. (A
      // failed COMMIT/ROLLBACK PREPARED leaves the prepared transaction as it was.)
      tx.ending = null;
      this.closeTx(s, tx, "rolled_back", null);
      return;
    }
    tx.ending = null;
    if (tx.explicit) {
      tx.aborted = true;
      // Savepoints set after the failed statement are gone with it.
      while ((tx.savepoints.at(-1)?.seq ?? -1) >= target.seq) tx.savepoints.pop();
      return;
    }
    this.closeTx(s, tx, "rolled_back", null);
  }

  private onFatal(key: string | number | null, record: LogRecord): void {
    const s = key === null ? undefined : this.sessions.get(key);
    if (s === undefined) {
      if (isConnectionRefusal(record)) this.attempt(record);
      return;
    }
    const tx = s.tx;
    if (tx !== null && record.query !== null && !tx.aborted) {
      const target = this.target(tx, record.query);
      if (target !== null) this.fail(s, tx, target, record.sqlState);
    } else if (s.entries === 0 && isConnectionRefusal(record)) {
      this.attempt(record);
    }
    this.endSession(key!, s, "fatal");
  }

  // ---- session and server messages -----------------------------------------------------------

  /** True when the record was a message the join acted on. */
  private onMessage(key: string | number | null, record: LogRecord): boolean {
    const kind = messageKind(record);
    switch (kind) {
      case MessageKind.OTHER:
        return false;
      case MessageKind.CONNECTION: {
        // A new backend: a session tracked under its key (a pid reused, without %c) is over.
        const old = key === null ? undefined : this.sessions.get(key);
        if (old !== undefined) this.endSession(key!, old, "disconnected");
        return true;
      }
      case MessageKind.DISCONNECTION: {
        const s = key === null ? undefined : this.sessions.get(key);
        if (s !== undefined) this.endSession(key!, s, "disconnected");
        return true;
      }
      case MessageKind.CRASH:
        this.serverGone("crashed");
        // One event per crash: the message naming the process, not the one that follows it.
        if (crashedPid(record.message) !== null) this.options.event?.({ kind: "server-crash", record });
        return true;
      case MessageKind.SERVER_STOP:
        this.serverGone("stopped");
        this.options.event?.({ kind: "server-stop", record });
        return true;
      case MessageKind.SERVER_START:
        this.serverGone("stopped");
        this.options.event?.({ kind: "server-start", record });
        return true;
      case MessageKind.STOP_REQUESTED:
        this.options.event?.({ kind: "server-stop-requested", record });
        return true;
      case MessageKind.RECOVERY:
        this.serverGone("crashed");
        this.options.event?.({ kind: "crash-recovery", record });
        return true;
      case MessageKind.RELOAD:
        this.options.event?.({ kind: "config-reload", record });
        return true;
      case MessageKind.PARAMETER: {
        const change = parameterChange(record.message);
        if (change) this.options.event?.({ kind: "setting-changed", ...change, via: "reload", record });
        return true;
      }
    }
  }

  /** Every backend is gone (a crash, or a stop that left sessions without a word). */
  private serverGone(how: "crashed" | "stopped"): void {
    for (const [key, s] of this.sessions) this.endSession(key, s, how);
  }

  /**
   * A session ends. Its open block rolls back (PostgreSQL aborts it); a COMMIT it sent completed
   * if the session said goodbye, and an implicit transaction's statement completed too (a
   * statement still running ends in an ERROR or a FATAL first). After a crash neither is known.
   */
  private endSession(
    key: string | number,
    s: Session<H>,
    how: "disconnected" | "fatal" | "crashed" | "stopped" | "ended",
  ): void {
    this.sessions.delete(key);
    s.ended = true;
    const tx = s.tx;
    if (tx !== null) {
      if (how === "ended") this.closeTx(s, tx, "unknown", UnknownReason.LOG_ENDED);
      else if (how === "crashed" || how === "stopped") {
        if (tx.explicit && tx.ending === null) this.closeTx(s, tx, "rolled_back", null);
        else this.closeTx(s, tx, "unknown", UnknownReason.SERVER_STOPPED);
      } else if (tx.ending !== null) {
        if (how === "disconnected") this.endConfirmed(s, tx);
        else this.closeTx(s, tx, "unknown", UnknownReason.SERVER_STOPPED);
      } else if (tx.explicit) this.closeTx(s, tx, "rolled_back", null);
      else this.closeTx(s, tx, "succeeded", null);
    }
    for (const a of s.awaiting.splice(0))
      this.decide(a.handle, "unknown", null, UnknownReason.BOUNDARIES_NOT_LOGGED);
  }

  // ---- transactions ------------------------------------------------------------------------------

  /** A record of another transaction: the open one is over (as a new statement would say). */
  private txOver(s: Session<H>, vxid: string): void {
    this.beforeStatement(s, vxid, { control: Control.NONE, name: null, chain: false }, null);
  }

  /** The transaction's ending statement completed: commit, prepare, or a prepared one finished. */
  private endConfirmed(s: Session<H>, tx: Tx<H>): void {
    const ending = tx.ending!;
    tx.ending = null;
    switch (ending.control) {
      case Control.PREPARE: {
        s.tx = null;
        const handles: H[] = [];
        for (const st of tx.stmts) for (const h of st.handles.splice(0)) handles.push(h);
        const fate = ending.name === null ? undefined : this.finished.get(ending.name);
        if (fate !== undefined) {
          this.finished.delete(ending.name!);
          for (const h of handles) this.decide(h, fate, null, null);
        } else if (ending.name === null || this.prepared.size >= MAX_PREPARED) {
          for (const h of handles) this.decide(h, "unknown", null, UnknownReason.TWO_PHASE);
          if (ending.name !== null) this.counts.capped += handles.length;
        } else this.prepared.set(ending.name, [...(this.prepared.get(ending.name) ?? []), ...handles]);
        return;
      }
      case Control.COMMIT_PREPARED:
      case Control.ROLLBACK_PREPARED: {
        // The session that prepared it may not have logged anything since: its PREPARE succeeded.
        if (ending.name !== null && !this.prepared.has(ending.name)) this.confirmPrepare(ending.name);
        const handles = ending.name === null ? undefined : this.prepared.get(ending.name);
        const outcome = ending.control === Control.COMMIT_PREPARED ? "succeeded" : "rolled_back";
        if (handles !== undefined) {
          this.prepared.delete(ending.name!);
          for (const h of handles) this.decide(h, outcome, null, null);
        } else if (ending.name !== null) {
          if (this.finished.size >= MAX_PREPARED) this.finished.delete(this.finished.keys().next().value!);
          this.finished.set(ending.name, outcome);
        }
        this.closeTx(s, tx, "succeeded", null, true);
        return;
      }
      case Control.ROLLBACK_UNCLEAR:
        tx.stmts = tx.stmts.filter((st) => st !== ending);
        this.closeTx(s, tx, "rolled_back", null);
        this.decideStmt(ending, "succeeded", null, null);
        return;
      default: {
        // COMMIT: the block committed (in a failed block a COMMIT rolls back, but pgAudit does not
        // log it there).
        this.closeTx(s, tx, tx.aborted ? "rolled_back" : "succeeded", null, true);
        if (ending.chain) this.open(s, null, true);
      }
    }
  }

  /** The session whose PREPARE TRANSACTION `gid` awaits confirmation: it is confirmed. */
  private confirmPrepare(gid: string): void {
    for (const s of this.sessions.values()) {
      const ending = s.tx?.ending;
      if (ending?.control === Control.PREPARE && ending.name === gid) {
        this.endConfirmed(s, s.tx!);
        return;
      }
    }
  }

  /**
   * Decides every statement of the transaction and closes it. `succeeded` of a transaction whose
   * end the log shows (`certain`) holds as is; inferred from a new statement, it holds only where
   * transaction control is logged — otherwise a ROLLBACK may have left no trace, and the entries
   * wait for that to be known (or are `unknown` when the session ends). `rolled_back` inferred
   * from an error holds only where no savepoint can hide from the log, for the same reason.
   */
  private closeTx(
    s: Session<H>,
    tx: Tx<H>,
    outcome: Outcome,
    reason: UnknownReason | null,
    certain = false,
  ): void {
    if (s.tx === tx) s.tx = null;
    const known = certain || tx.explicit || this.miscKnown(s);
    for (const st of tx.stmts) {
      if (outcome === "unknown" || known) this.decideStmt(st, outcome, null, reason);
      else {
        st.done = true;
        this.watch.awaitedPairs.add(pairOf(s));
        this.watch.awaitedSessions.add(s.key);
        for (const h of st.handles.splice(0)) s.awaiting.push({ handle: h, outcome });
      }
    }
    tx.stmts.length = 0;
  }

  /** ROLLBACK TO `sp` (null: before everything the join saw of the block): what followed it is undone. */
  private rollbackTo(tx: Tx<H>, sp: { name: string | null; seq: number } | null): void {
    const seq = sp?.seq ?? -1;
    const keep = tx.stmts.filter((st) => st.seq <= seq);
    for (const st of tx.stmts) if (st.seq > seq) this.decideStmt(st, "rolled_back", null, null);
    tx.stmts = keep;
    if (sp !== null) {
      const at = tx.savepoints.indexOf(sp as { name: string | null; seq: number });
      if (at >= 0) tx.savepoints.length = at + 1;
    } else tx.savepoints.length = 0;
    tx.aborted = false;
  }

  /**
   * A failed block went on: a ROLLBACK TO SAVEPOINT pgAudit did not log. With one savepoint it is
   * that one; with several, what followed the innermost is undone for sure and what lies between
   * the outermost and the innermost cannot be told.
   */
  private recoverUnlogged(tx: Tx<H>): void {
    const sps = tx.savepoints;
    if (sps.length <= 1) {
      this.rollbackTo(tx, sps[0] ?? null);
      return;
    }
    const inner = sps.at(-1)!;
    const outer = sps[0]!;
    for (const st of tx.stmts)
      if (st.seq > inner.seq) this.decideStmt(st, "rolled_back", null, null);
      else if (st.seq > outer.seq) this.decideStmt(st, "unknown", null, UnknownReason.SAVEPOINT_AMBIGUOUS);
    tx.stmts = tx.stmts.filter((st) => st.seq <= outer.seq);
    sps.length = 1;
    tx.aborted = false;
  }

  // ---- decisions --------------------------------------------------------------------------------

  private decideStmt(
    st: Stmt<H>,
    outcome: Outcome,
    sqlstate: string | null,
    reason: UnknownReason | null,
  ): void {
    st.done = true;
    const handles = st.handles;
    const n = handles.length;
    if (n === 0) return;
    this.pending -= n;
    const code = outcome === "failed" ? sqlstate : null;
    for (let i = 0; i < n; i++) this.decided(handles[i]!, outcome, code, reason);
    handles.length = 0;
  }

  private decide(h: H, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null): void {
    this.pending--;
    this.decided(h, outcome, outcome === "failed" ? sqlstate : null, reason);
  }

  private attempt(record: LogRecord): void {
    this.counts.attempts++;
    this.options.attempt?.(record);
  }

  // ---- what is known about transaction control ---------------------------------------------

  private miscKnown(s: Session<H>): boolean {
    return this.options.miscLogged === true || s.misc || this.miscPairs.has(pairOf(s));
  }

  /** A MISC entry: this session's (and its user's and database's) transaction control is logged. */
  private learnMisc(s: Session<H>): void {
    s.misc = true;
    this.settle(s);
    const pair = pairOf(s);
    if (this.miscPairs.has(pair) || this.miscPairs.size >= MAX_MISC_PAIRS) return;
    this.miscPairs.add(pair);
    for (const other of this.sessions.values()) if (pairOf(other) === pair) this.settle(other);
  }

  private settle(s: Session<H>): void {
    for (const a of s.awaiting.splice(0)) this.decide(a.handle, a.outcome, null, null);
  }

  private session(key: string | number, record: EntryRecord): Session<H> {
    const pid = record.pid;
    const slot = pid === null ? -1 : pid & (PID_SLOTS - 1);
    if (slot >= 0) {
      const seen = this.byPid[slot];
      if (seen !== undefined && seen.key === key && !seen.ended) return seen;
    } else {
      const last = this.lastSession;
      if (key === this.lastKey && last !== undefined && !last.ended) return last;
    }
    let s = this.sessions.get(key);
    if (s === undefined) {
      if (this.sessions.size >= this.maxSessions) {
        const [oldKey, oldest] = this.sessions.entries().next().value!;
        this.sessions.delete(oldKey);
        oldest.ended = true;
        this.dropSession(oldest);
      }
      const own = typeof key === "string" ? detached(key) : key;
      s = {
        key: own,
        user: record.user === null ? null : detached(record.user),
        database: record.database === null ? null : detached(record.database),
        tx: null,
        cur: null,
        misc: false,
        entries: 0,
        seq: 0,
        awaiting: [],
        ended: false,
      };
      this.sessions.set(own, s);
      if (this.sessions.size > this.watch.peakSessions) this.watch.peakSessions = this.sessions.size;
      this.started?.(own);
    }
    if (slot >= 0) this.byPid[slot] = s;
    else {
      this.lastKey = s.key;
      this.lastSession = s;
    }
    return s;
  }

  /** A session let go by the cap: its undecided entries are `unknown`. */
  private dropSession(s: Session<H>): void {
    const handles: H[] = s.awaiting.splice(0).map((a) => a.handle);
    for (const st of s.tx?.stmts ?? []) handles.push(...st.handles.splice(0));
    this.counts.capped += handles.length;
    for (const h of handles) this.decide(h, "unknown", null, UnknownReason.CAP);
    s.tx = null;
  }

  // ---- ranges (range.ts) ----------------------------------------------------------------------

  /** Told of every session it starts tracking (range.ts: where each begins, for the order of a merged state). */
  onSessionStart(started: (key: string | number) => void): void {
    this.started = started;
  }

  private started: ((key: string | number) => void) | undefined;

  /** (user, database) pairs known, before any record, to show MISC entries (see RangeJoin). */
  knowMisc(pairs: Iterable<string>): void {
    for (const pair of pairs) if (this.miscPairs.size < MAX_MISC_PAIRS) this.miscPairs.add(pair);
  }

  /**
   * Session `key` as it stands right after a new transaction's first statement, written so that
   * two joins' sessions compare equal exactly when they decide the rest of the session alike
   * (statement order numbers relative to that statement); undefined when it is not so (the
   * statement joined an open transaction, or others wait in it or in the session).
   */
  shapeOf(key: string | number): string | undefined {
    const s = this.sessions.get(key);
    const tx = s?.tx;
    if (s === undefined || tx == null || s.awaiting.length > 0 || tx.aborted || tx.ending !== null)
      return undefined;
    const st = tx.stmts[0];
    if (tx.stmts.length !== 1 || st !== s.cur || st.handles.length !== 1 || st.done) return undefined;
    const sps = tx.savepoints.map((sp) => [sp.name, sp.seq - st.seq]);
    return JSON.stringify([
      s.user,
      s.database,
      tx.vxid,
      tx.explicit,
      sps,
      st.id,
      st.lastId,
      keyOf(st),
      st.control,
      st.name,
      st.chain,
    ]);
  }

  /**
   * Session `key` goes on in another join (range.ts): let go here, its one undecided entry (see
   * shapeOf) with it. Returns its shape and what the other join cannot know of it.
   */
  handOver(key: string | number): { shape: string | undefined; misc: boolean; entries: number } | undefined {
    const s = this.sessions.get(key);
    if (s === undefined) return undefined;
    const shape = this.shapeOf(key);
    this.sessions.delete(key);
    s.ended = true;
    if (shape !== undefined) this.pending--;
    return { shape, misc: s.misc, entries: s.entries };
  }

  // ---- snapshots ----------------------------------------------------------------------------

  /**
   * The join's state as JSON-safe data, handles converted by `toJson`. Statement texts are kept
   * as keys only. A join restored from it decides the rest of the stream as this one would.
   */
  snapshot<J>(toJson: (handle: H) => J): OutcomeJoinSnapshot<J> {
    this.releaseTexts();
    const stmt = (st: Stmt<H>): StmtSnapshot<J> => ({
      id: st.id,
      lastId: st.lastId,
      seq: st.seq,
      // A decided statement's key is never read again (it left its transaction; holdTexts
      // drops its text unhashed): null, whichever way the join ran.
      key: st.done ? null : st.key,
      control: st.control,
      name: st.name,
      chain: st.chain,
      handles: st.handles.map(toJson),
    });
    const sessions: [string | number, SessionSnapshot<J>][] = [];
    for (const [key, s] of this.sessions) {
      const tx = s.tx;
      sessions.push([
        key,
        {
          user: s.user,
          database: s.database,
          misc: s.misc,
          entries: s.entries,
          seq: s.seq,
          cur: s.cur === null ? null : { ...stmt(s.cur), handles: [] },
          tx:
            tx === null
              ? null
              : {
                  vxid: tx.vxid,
                  explicit: tx.explicit,
                  aborted: tx.aborted,
                  stmts: tx.stmts.map(stmt),
                  savepoints: tx.savepoints.map((sp) => ({ ...sp })),
                  ending: tx.ending === null ? null : tx.ending.seq,
                },
          awaiting: s.awaiting.map((a) => [toJson(a.handle), a.outcome]),
        },
      ]);
    }
    return {
      version: 1,
      sessions,
      miscPairs: [...this.miscPairs],
      prepared: [...this.prepared].map(([gid, hs]) => [gid, hs.map(toJson)]),
      finished: [...this.finished],
      counts: { ...this.counts },
    };
  }

  /** A join that continues from `snapshot` (see snapshot()). */
  static restore<H, J>(
    snapshot: OutcomeJoinSnapshot<J>,
    options: OutcomeJoinOptions<H>,
    fromJson: (json: J) => H,
  ): OutcomeJoin<H> {
    const join = new OutcomeJoin<H>(options);
    if (snapshot.version !== 1) return join;
    let pending = 0;
    // Built as the join builds its own (same properties, same order), not spread from the
    // snapshot: objects of one shape keep the join's compiled code to one map (parallel
    // `analyze` restores a join per range).
    const stmt = (st: StmtSnapshot<J>, done = false): Stmt<H> => {
      pending += st.handles.length;
      return {
        id: st.id,
        lastId: st.lastId,
        seq: st.seq,
        key: st.key,
        text: null,
        control: st.control,
        name: st.name,
        chain: st.chain,
        handles: done ? [] : st.handles.map(fromJson),
        done,
      };
    };
    for (const [key, ss] of snapshot.sessions) {
      const stmts = ss.tx?.stmts.map((st) => stmt(st)) ?? [];
      const bySeq = new Map(stmts.map((st) => [st.seq, st]));
      // The latest statement, when it has left its transaction, only says which id came last.
      let cur: Stmt<H> | null = null;
      if (ss.cur !== null) cur = bySeq.get(ss.cur.seq) ?? stmt(ss.cur, true);
      const tx: Tx<H> | null =
        ss.tx === null
          ? null
          : {
              vxid: ss.tx.vxid,
              explicit: ss.tx.explicit,
              aborted: ss.tx.aborted,
              stmts,
              savepoints: ss.tx.savepoints.map((sp) => ({ name: sp.name, seq: sp.seq })),
              ending: ss.tx.ending === null ? null : (bySeq.get(ss.tx.ending) ?? null),
            };
      const awaiting = ss.awaiting.map(([j, outcome]) => ({ handle: fromJson(j), outcome }));
      pending += awaiting.length;
      join.sessions.set(key, {
        key,
        user: ss.user,
        database: ss.database,
        tx,
        cur,
        misc: ss.misc,
        entries: ss.entries,
        seq: ss.seq,
        awaiting,
        ended: false,
      });
    }
    for (const pair of snapshot.miscPairs) join.miscPairs.add(pair);
    for (const [gid, outcome] of snapshot.finished ?? []) join.finished.set(gid, outcome);
    for (const [gid, hs] of snapshot.prepared) {
      join.prepared.set(gid, hs.map(fromJson));
      pending += hs.length;
    }
    join.pending = pending;
    join.watch.peakPending = pending;
    join.watch.peakSessions = join.sessions.size;
    Object.assign(join.counts, snapshot.counts);
    return join;
  }
}

/**
 * A FATAL that refused a connection (a failed login, no such role or database, too many
 * clients): by SQLSTATE class where the format carries it, else by PostgreSQL's English message.
 */
function isConnectionRefusal(record: LogRecord): boolean {
  const code = record.sqlState;
  if (code !== null && code !== "00000") {
    const cls = code.slice(0, 2);
    return cls === "28" || cls === "3D" || cls === "53" || code === "42501" || code === "55000";
  }
  return /^(?:password authentication failed|no pg_hba\.conf entry|role "[^"]*" does not exist|database "[^"]*" does not exist|permission denied for database|sorry, too many clients|[A-Za-z]+ authentication failed)/.test(
    record.message,
  );
}

function pairOf(s: { user: string | null; database: string | null }): string {
  return `${s.user ?? ""}\u0000${s.database ?? ""}`;
}
