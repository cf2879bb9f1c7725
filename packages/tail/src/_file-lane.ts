import type { Outcome, OutcomeJoin, UnknownReason } from "@auditpipe/outcome";
import {
  type AuditEntry,
  createDivertedParser,
  createParser,
  decodeAuditEntry,
  detached,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
  type ParserOptions,
  type PrefixHistory,
} from "@auditpipe/parse";
import {
  type Batch,
  Batcher,
  type BatchLimits,
  type Delivery,
  type DeliveryQueue,
  type DeliverySource,
  encodeAttempt,
  encodeEntry,
  encodeOutcome,
  type RedactionMode,
} from "@auditpipe/ship";
import { type LaneHandle, type OutcomeLane, type OutcomeState, OutcomeStream } from "./_outcome-stream.ts";
import { ReplayBookkeeping } from "./_replay-bookkeeping.ts";
import type { Downstream, TrackedFile } from "./_tracked-file.ts";

/**
 * What a lane reports as records pass; every method optional. The sidecar wires these to its meter.
 * A csvlog record's fields in UNREAD_FIELDS (@auditpipe/parse) are null here: the lane does not make them.
 */
export interface LaneObserver {
  recordsRead?(source: string, count: number): void;
  /** The meter's tap: every audit entry, as decoded (before redaction). */
  entry?(entry: AuditEntry, record: LogRecord): void;
  malformed?(source: string, error: MalformedRecord): void;
  /** An entry's outcome was decided (each entry once; again for entries replayed after a restart). */
  outcome?(outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null): void;
  /** An ERROR or FATAL of no audited statement (a refused statement, a failed login), as read. */
  attempt?(record: LogRecord): void;
  /** A batch closed with `count` entries whose outcome was not known yet: they ship `pending`. */
  shippedPending?(count: number): void;
}

/** What the follower does when a lane's batches are handed over or acknowledged. */
export interface LaneCheckpoints {
  /** Batches are about to go to the sink: record their ends durably first (write-ahead). */
  handingOver(): Promise<void>;
  /** The acknowledged position moved: checkpoint it. */
  acknowledged(): void;
}

export interface FileLaneOptions {
  format: LogFormat;
  /** A stderr file beside a csvlog or jsonlog one: only the records diverted into it are read (createDivertedParser). */
  diverted?: boolean;
  /** log_line_prefix, for stderr and syslog files; a history follows reloads that change it. */
  prefix: string | PrefixHistory | undefined;
  /** The acknowledged position the lane starts at: its first batch starts here. */
  start: number;
  /**
   * Where the parser starts reading, at or before `start`: the oldest record still held when the
   * checkpoint was saved (syslog), otherwise `start`. Of the records read again before `start`,
   * only those at `held` go out (the others were acknowledged before the restart).
   */
  resume?: ResumePoint;
  /** Batch ends recorded before a crash: the replay cuts there. */
  replayEnds: readonly number[];
  limits: BatchLimits;
  observer: LaneObserver;
  /** Applied to each entry before it is encoded (`--redact`); the meter's tap sees the original. */
  redact: RedactionMode | undefined;
  delivery: Delivery;
  checkpoints: LaneCheckpoints;
  /** The stream's outcome stage, and the state the checkpoint kept at `start` (if any). */
  outcome: { stream: OutcomeStream; state: unknown; holdMs: number };
}

/** Where a restarted lane reads from, and which records before its start it gives out again. */
export interface ResumePoint {
  /** Where parsing starts: at or before the acknowledged position. */
  from: number;
  /** Offsets of the records before the acknowledged position that were not acknowledged (held). */
  held: number[];
}

/**
 * Bytes handed to the parser at a time, each followed by encoding what it held. Everything a
 * slice makes (the parser's text of it, records, the strings pending in the writer) then dies in
 * V8's young generation: parsed a megabyte at a time, the text alone went to the large-object
 * space, and under the sidecar's 128 MB heap cap the old generation was marked every few reads
 * (80 full collections over a 240 MB file).
 */
const PARSE_BYTES = 64 << 10;
/** Backends whose session id a lane keeps a copy of (see sessionIdOf): more than one server has. */
const MAX_SESSION_IDS = 4096;

/**
 * One followed file's lane of the pipeline, stage after stage:
 *
 *   bytes → parse (createParser) → decode (decodeAuditEntry) → meter (observer.entry, a tap)
 *         → redact → encode (encodeEntry) → batch (Batcher) → deliver (DeliveryQueue) → sink
 *
 * Acknowledgements come back through the DeliveryQueue in file order; the lane keeps the
 * acknowledged position and tells the follower, which checkpoints it.
 */
export class FileLane implements Downstream, DeliverySource, OutcomeLane {
  acked: number;
  ended = false;
  private readonly parser: LogParser;
  private readonly batcher: Batcher;
  private readonly queue: DeliveryQueue;
  /** Where the parser's input started: record offsets are relative to it. */
  private readonly base: number;
  /** Records read again after a restart, and those given out behind the batches' end: which a checkpoint keeps. */
  private readonly replay: ReplayBookkeeping;
  private readonly observer: LaneObserver;
  private readonly redact: RedactionMode | undefined;
  private readonly checkpoints: LaneCheckpoints;
  /** The file whose lane this is: its path names the records' source (it changes on a rename). */
  private readonly file: TrackedFile;
  private readonly outcome: FileLaneOptions["outcome"];
  /** The stream's join, from the first bytes on; and this lane's order among the stream's lanes. */
  private join: OutcomeJoin<LaneHandle> | undefined;
  private seq = 0;
  /** The join's state at the start and at each batch end not yet superseded by an acknowledgement. */
  private readonly states = new Map<number, OutcomeState>();
  /** Entries of the open batch whose outcome is not set yet (the batch is held while there are). */
  private undecided = 0;
  /** The record being read: an outcome line it settles carries its time. */
  private current: LogRecord | undefined;
  private currentOffset = 0;
  /** The last session id a handle took (detached). */
  /**
   * The last session id of each backend, a detached copy, by pid (-1 without one): under load
   * the sessions' records interleave, so the last id alone was a miss (and a copy) nearly every
   * entry, and a map by the id itself hashes a new string each entry. Cleared when full.
   */
  private readonly sessionIds = new Map<number, string>();

  constructor(file: TrackedFile, options: FileLaneOptions) {
    this.file = file;
    this.base = options.resume?.from ?? options.start;
    this.replay = new ReplayBookkeeping(options.start, options.resume?.held);
    this.acked = options.start;
    this.observer = options.observer;
    this.redact = options.redact;
    this.checkpoints = options.checkpoints;
    this.outcome = options.outcome;
    this.batcher = new Batcher(file, options.start, options.replayEnds, options.limits, Date.now());
    this.batcher.hold = () => this.undecided > 0;
    this.batcher.holdMs = options.outcome.holdMs;
    this.batcher.onClose = (batch, pending) => this.closed(batch, pending);
    this.queue = options.delivery.queue(this);
    const sink = {
      record: (record: LogRecord) => this.onRecord(record),
      malformed: (error: MalformedRecord) => this.onMalformed(error),
      skipped: (offset: number, size: number) => this.batcher.extend(this.base + offset + size),
    };
    // Nothing the lane hands records to (meter, join, advisor, encoder: see UNREAD_FIELDS) reads
    // the fields omitted.
    const parserOptions: ParserOptions =
      options.prefix === undefined
        ? { omitUnreadFields: true }
        : typeof options.prefix === "string"
          ? { prefix: options.prefix, omitUnreadFields: true }
          : { prefixHistory: options.prefix, omitUnreadFields: true };
    this.parser = options.diverted
      ? createDivertedParser(sink, parserOptions)
      : createParser(options.format, sink, parserOptions);
  }

  private onRecord(record: LogRecord): void {
    const offset = this.base + record.offset;
    if (offset < this.batcher.covered && this.shippedBefore(offset)) return;
    this.observer.recordsRead?.(this.file.path, 1);
    const entry = decodeAuditEntry(record, this.badPayload);
    const join = this.join ?? this.begin();
    this.current = record;
    this.currentOffset = offset;
    if (entry !== undefined) {
      this.observer.entry?.(entry, record);
      const mark = encodeEntry(this.batcher.writer, entry, record, this.file.path, offset, this.redact);
      this.batcher.entry(record.size);
      this.undecided++;
      join.record(record, entry, {
        lane: this,
        generation: this.batcher.generation,
        mark,
        sessionId: this.sessionIdOf(record),
        sessionLine: record.sessionLine,
        file: this.file.path,
        offset,
      });
    } else join.record(record);
    this.current = undefined;
    this.batcher.extend(offset + record.size);
  }

  /**
   * The record's session id, detached from the parser's text (see detached()): a handle lives
   * until its entry's outcome is decided, and in the snapshots taken meanwhile; a view would keep
   * the parser's whole chunk alive with it. The entries of one session share one copy.
   */
  private sessionIdOf(record: LogRecord): string | null {
    const id = record.sessionId;
    if (id === null) return null;
    const pid = record.pid ?? -1;
    const own = this.sessionIds.get(pid);
    if (own === id) return own;
    if (this.sessionIds.size >= MAX_SESSION_IDS) this.sessionIds.clear();
    const copy = detached(id);
    this.sessionIds.set(pid, copy);
    return copy;
  }

  /** The first record: the lane takes the stream's join (or restores its own) and notes the state at its start. */
  private begin(): OutcomeJoin<LaneHandle> {
    const { join, seq } = this.outcome.stream.begin(this, this.file.path, this.outcome.state);
    this.join = join;
    this.seq = seq;
    this.states.set(this.batcher.openStart, OutcomeStream.state(join, seq));
    return join;
  }

  // OutcomeLane: what the join says about this stream's entries while this lane reads.

  decided(h: LaneHandle, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null): void {
    this.observer.outcome?.(outcome, sqlstate, reason);
    if (h.lane === this && h.generation === this.batcher.generation) {
      this.batcher.writer.setOutcome(h.mark, outcome, sqlstate);
      this.undecided--;
      return;
    }
    // Shipped `pending` in an earlier batch: the outcome follows in this one.
    encodeOutcome(this.batcher.writer, h, this.current, outcome, sqlstate);
  }

  attempt(record: LogRecord): void {
    this.observer.attempt?.(record);
    encodeAttempt(this.batcher.writer, record, this.file.path, this.currentOffset, this.redact);
  }

  /** A batch closed: its undecided entries ship pending; the join's state now is its state at the batch's end. */
  private closed(batch: Batch, pending: number): void {
    this.undecided = 0;
    if (pending > 0) this.observer.shippedPending?.(pending);
    if (this.join) this.states.set(batch.range.end, OutcomeStream.state(this.join, this.seq));
  }

  /** The outcome stage's state at `position` (an acknowledged batch end, or the start), for the checkpoint. */
  outcomeState(position: number): OutcomeState | undefined {
    return this.states.get(position);
  }

  /**
   * A record given out behind the batches' end: true when it was acknowledged before a restart
   * (read again only to rebuild what was held); otherwise it is noted as late.
   */
  private shippedBefore(offset: number): boolean {
    if (this.replay.shippedBefore(offset)) return true;
    this.replay.noteLate(offset, this.batcher.openStart);
    return false;
  }

  /** A record whose pgAudit payload is not pgAudit's CSV: reported at its place in the file (the batch extends over it in onRecord). */
  private readonly badPayload = (error: MalformedRecord): void => {
    this.observer.malformed?.(this.file.path, { ...error, offset: this.base + error.offset });
  };

  private onMalformed(error: MalformedRecord): void {
    const offset = this.base + error.offset;
    // Reported before the restart, unless it was held then.
    if (this.replay.shippedBefore(offset)) return;
    this.observer.malformed?.(this.file.path, { ...error, offset });
    this.batcher.extend(offset + error.size);
  }

  push(bytes: Buffer, now: number): void {
    this.join ??= this.begin();
    for (let at = 0; at < bytes.length; at += PARSE_BYTES) {
      this.parser.push(bytes.subarray(at, Math.min(at + PARSE_BYTES, bytes.length)));
      this.encodePending();
    }
    // Under steady load the file is never quiet: the age limit must hold while it grows too.
    this.batcher.closeIfOld(now);
  }

  /**
   * Encodes the entries read since the last call. Called after every slice: what an entry holds
   * lives for one slice instead of until its batch closes, so it dies in V8's young generation.
   * Kept until the batch closed, 10k records survived scavenges, were promoted and made the old
   * generation grow by their size every batch; marking it then cost more than the encoding (a
   * full mark every ~0.5 s at 17k entries/s). The join's held statement texts likewise.
   */
  private encodePending(): void {
    this.batcher.writer.flush();
    // The statement texts the join held for the slice (OutcomeJoinOptions.holdTexts) are views of it.
    this.join?.releaseTexts();
  }

  idle(): void {
    this.parser.idle?.();
    this.encodePending();
    this.closeBehind(Date.now());
  }

  /**
   * Records released behind the batches' end (read again after a restart, or the last ones when
   * every byte was cut already) would wait in an open batch that covers no bytes for bytes that
   * may never come: once the parser holds nothing, they go out in a batch of their own.
   */
  private closeBehind(now: number): void {
    if (!this.replay.hasLate || (this.parser.held?.().length ?? 0) > 0) return;
    const start = this.batcher.openStart;
    if (this.batcher.covered > start || this.batcher.replayEnds.length > 0) return; // it closes as any other
    // Its end is its start, as the previous batch's is: recycle(), not the end, says it is shipped.
    this.replay.closedBehind(start, this.batcher.closeBehind(now));
  }

  closeIfOld(now: number): void {
    this.batcher.closeIfOld(now);
  }

  end(now: number): void {
    if (!this.ended) {
      this.ended = true;
      // A file that ends without a byte read (restarted at its end, the stream rotated past it)
      // still hands its checkpoint's state on: the next file's lane takes it over from here, and
      // its finished checkpoint keeps it.
      this.join ??= this.begin();
      this.parser.end();
      this.encodePending();
      this.closeBehind(now);
    }
    this.batcher.close(now);
    this.outcome.stream.end(this);
  }

  closeForStop(now: number): void {
    this.batcher.closeForStop(now);
  }

  deliver(drain = false): Promise<void> {
    return this.queue.deliver(drain);
  }

  get covered(): number {
    return this.batcher.covered;
  }

  get settled(): boolean {
    return (
      this.ended &&
      this.batcher.ready.length === 0 &&
      this.queue.inflight.length === 0 &&
      this.acked >= this.batcher.openStart
    );
  }

  pendingEnds(): number[] {
    return [
      ...this.queue.inflight.map((f) => f.batch.range.end),
      ...this.batcher.ready.map((b) => b.range.end),
      ...this.batcher.replayEnds,
    ];
  }

  resumePoint(position: number): ResumePoint {
    // A record held before the restart and held again by the parser now is listed once.
    const offsets = this.replay.heldOffsets();
    for (const offset of this.parser.held?.() ?? []) offsets.add(this.base + offset);
    const held = [...offsets].filter((offset) => offset < position).sort((a, b) => a - b);
    return { from: held[0] ?? position, held };
  }

  // DeliverySource: what the deliver stage asks of this lane.

  get name(): string {
    return this.file.path;
  }

  get ready(): Batch[] {
    return this.batcher.ready;
  }

  handingOver(): Promise<void> {
    return this.checkpoints.handingOver();
  }

  acknowledged(end: number): void {
    this.acked = end;
    // The state at the acknowledged end is the checkpoint's from now on; those before it are not needed.
    for (const at of this.states.keys()) if (at < end) this.states.delete(at);
    this.replay.acknowledged(end);
    this.checkpoints.acknowledged();
  }

  recycle(batch: Batch): void {
    const { start, end } = batch.range;
    if (start === end) this.replay.recycledEmpty(start);
    this.batcher.recycle(batch);
  }
}
