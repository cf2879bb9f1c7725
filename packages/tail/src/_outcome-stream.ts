/**
 * The outcome stage of one followed log stream: one OutcomeJoin (@auditpipe/outcome) that the
 * files' lanes hand on as the stream rotates. A session's transaction can end in the next file,
 * so the join of a file that ended passes, with what it still holds undecided, to the lane of the
 * file that follows — which the follower starts reading only once every older file of the stream
 * ended (so records reach the join in the order PostgreSQL wrote them).
 *
 * What a replay needs: each lane snapshots the join at every batch end, and the checkpoint keeps
 * the snapshot at its acknowledged position (FileCheckpoint.outcome). A restarted lane restores
 * its own (as its file ends, if it read nothing: FileLane.end); a lane with none takes the join
 * over from the file before it (live, or from that file's finished checkpoint). Decisions are made from the records a batch covers, so a replay
 * writes the same bytes.
 */
import {
  type Outcome,
  OutcomeJoin,
  type OutcomeJoinSnapshot,
  type StreamEvent,
  type UnknownReason,
} from "@auditpipe/outcome";
import type { LogRecord } from "@auditpipe/parse";

/** Where an entry went: the lane and batch generation it was encoded in, its mark, and who it is. */
export interface LaneHandle {
  /** The lane whose open batch holds the entry; null once restored from a snapshot (shipped). */
  lane: OutcomeLane | null;
  generation: number;
  mark: number;
  sessionId: string | null;
  sessionLine: number | null;
  file: string;
  offset: number;
}

/** A handle in a snapshot: the entry's identity in the archive. */
type HandleJson = [sessionId: string | null, sessionLine: number | null, file: string, offset: number];

/** What a checkpoint keeps of the outcome stage: the join at the checkpoint's position. */
export interface OutcomeState {
  version: 1;
  /** Order of the lane that wrote it among the stream's lanes (the latest finished file's is inherited). */
  seq: number;
  join: OutcomeJoinSnapshot<HandleJson>;
}

/** What a lane does with what the join says. */
export interface OutcomeLane {
  decided(handle: LaneHandle, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null): void;
  attempt(record: LogRecord): void;
}

export interface OutcomeStreamOptions {
  /** Every session's pgaudit.log has misc (from the server's settings): see OutcomeJoinOptions. */
  miscLogged?: boolean;
  /** A server or audit-setting event, with the file whose record showed it. */
  event?: (event: StreamEvent, file: string) => void;
  /** A lane began reading while an older file was still open: its join starts empty. */
  unordered?: (file: string) => void;
}

const toJson = (h: LaneHandle): HandleJson => [h.sessionId, h.sessionLine, h.file, h.offset];
const fromJson = ([sessionId, sessionLine, file, offset]: HandleJson): LaneHandle => ({
  lane: null,
  generation: -1,
  mark: -1,
  sessionId,
  sessionLine,
  file,
  offset,
});

export function isOutcomeState(value: unknown): value is OutcomeState {
  const v = value as Partial<OutcomeState> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    v.version === 1 &&
    typeof v.seq === "number" &&
    typeof v.join === "object"
  );
}

export class OutcomeStream {
  /** The stream's join: the active lane's, or the last one's as its file ended. */
  private join: OutcomeJoin<LaneHandle> | undefined;
  /** The lane reading now, to which the join's decisions go. */
  private active: OutcomeLane | undefined;
  private seq = 0;
  /** Each running lane's file, to name where an event was seen. */
  private readonly files = new Map<OutcomeLane, string>();
  /** At a start: the state at the end of the latest finished file (if its lane does not run). */
  private finished: OutcomeState | undefined;
  private readonly options: OutcomeStreamOptions;

  constructor(options: OutcomeStreamOptions = {}) {
    this.options = options;
  }

  /** A file finished before this start (its checkpoint says so): its end state, a candidate to inherit. */
  finishedFile(state: unknown): void {
    if (!isOutcomeState(state)) return;
    if (this.finished === undefined || state.seq > this.finished.seq) this.finished = state;
    this.seq = Math.max(this.seq, state.seq);
  }

  /**
   * A lane starts reading (from `own`, its checkpoint's state, if any): the join it feeds, and
   * the order it has among the stream's lanes.
   */
  begin(lane: OutcomeLane, file: string, own: unknown): { join: OutcomeJoin<LaneHandle>; seq: number } {
    const state = isOutcomeState(own) ? own : undefined;
    if (state) this.seq = Math.max(this.seq, state.seq);
    const seq = state?.seq ?? ++this.seq;
    this.files.set(lane, file);
    if (this.active !== undefined && this.active !== lane) {
      // Another file of the stream is still being read (two files growing at once): this one is
      // joined on its own, with what it restored or nothing.
      this.options.unordered?.(file);
      return { join: this.newJoin(lane, state), seq };
    }
    this.active = lane;
    if (state) this.join = this.newJoin(null, state);
    else if (this.join === undefined) this.join = this.newJoin(null, this.finished);
    this.finished = undefined;
    return { join: this.join, seq };
  }

  /** The lane's file ended: its join stays for the next file's lane. */
  end(lane: OutcomeLane): void {
    if (this.active === lane) this.active = undefined;
    this.files.delete(lane);
  }

  /** Reports an event with the file of the lane that read it (a lane's file is known from begin()). */
  private eventOf(lane: OutcomeLane | undefined, event: StreamEvent): void {
    const file = lane ? this.files.get(lane) : undefined;
    if (file !== undefined) this.options.event?.(event, file);
  }

  /** The join's state as a checkpoint keeps it. */
  static state(join: OutcomeJoin<LaneHandle>, seq: number): OutcomeState {
    return { version: 1, seq, join: join.snapshot(toJson) };
  }

  /** A join whose decisions go to `owner`, or (null) to whichever lane is active. */
  private newJoin(owner: OutcomeLane | null, state: OutcomeState | undefined): OutcomeJoin<LaneHandle> {
    const lane = (): OutcomeLane | undefined => owner ?? this.active;
    const options = {
      ...(this.options.miscLogged === undefined ? {} : { miscLogged: this.options.miscLogged }),
      // Each lane lets go of them after every slice it parses (FileLane.encodePending).
      holdTexts: true,
      decided: (h: LaneHandle, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null) =>
        lane()?.decided(h, outcome, sqlstate, reason),
      attempt: (record: LogRecord) => lane()?.attempt(record),
      ...(this.options.event ? { event: (e: StreamEvent) => this.eventOf(lane(), e) } : {}),
    };
    return state ? OutcomeJoin.restore(state.join, options, fromJson) : new OutcomeJoin<LaneHandle>(options);
  }
}
