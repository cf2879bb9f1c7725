/**
 * One piece of a parallel `analyze` (parallel.ts): a byte range of a log file, read, parsed,
 * decoded and tallied on its own, its records kept (reduced to what the outcome join reads) until
 * the join's state at the range's start is known; then joined, handing the state at its end on.
 *
 * Where a range starts: the first record (or malformed stretch) at or after its nominal start, as
 * a parser started up to PROBE_BYTES earlier sees it; where it ends: the first record at or after
 * its nominal end, as its own parser sees it (reading on past the end until one begins). The
 * coordinator accepts a range only when its start is where the range before it ended: then the
 * range was read exactly as one parser reading the whole file reads it (a csvlog quoted field can
 * hold lines that look like records; stderr's STATEMENT lines start like records). Otherwise it
 * reads the range again from there.
 *
 * No clock and no thread here: the worker (_worker.ts) and the tests drive it.
 */
import { closeSync, createReadStream, openSync, readSync } from "node:fs";
import { createGunzip } from "node:zlib";
import { VolumeTally, type VolumeTallyState } from "@auditpipe/meter/volume";
import {
  mayMakeEvent,
  type Outcome,
  OutcomeJoin,
  type OutcomeJoinSnapshot,
  type StreamEvent,
  type UnknownReason,
} from "@auditpipe/outcome";
import {
  type AuditEntry,
  blankRecord,
  createParser,
  decodeAuditEntry,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import { type LoggingSigns, noSigns, noteSigns } from "./outcomes.ts";

/** Bytes per read. */
const READ_BYTES = 1 << 20;
/** How far before its nominal start a range's first record is looked for. */
export const PROBE_BYTES: number = 32 << 10;
/** Bytes read past the nominal end at a time, looking for the next record's start. */
const OVERRUN_BYTES = 64 << 10;

/** What to read: a range of a file (or a whole .gz file), in the format and prefix found for the file. */
export interface ChunkTask {
  /** Position in the stream's order of chunks (files in order, ranges in order). */
  index: number;
  file: string;
  /** The file's size in bytes (on disk). */
  size: number;
  /** A .gz file: read whole, through gunzip (start 0, end `size`). */
  gzip: boolean;
  format: LogFormat;
  prefix: string | undefined;
  /** Nominal range [start, end) of the file's bytes. */
  start: number;
  end: number;
  /** `start` is a record boundary already (a file's first range, or a range read again). */
  exactStart: boolean;
  /** Malformed stretches kept one by one (for the command to print); the rest are only counted. */
  keepMalformed: number;
  /** How far before `start` its first record is looked for (PROBE_BYTES; tests set less). */
  probeBytes: number;
}

/** What reading a range gave. */
export interface ChunkRead {
  index: number;
  /** Where it started and where it ended (see the module comment); `end` is the next range's start. */
  start: number;
  end: number;
  tally: VolumeTallyState;
  /** Records and malformed stretches the parser found (the file's summary counts; bad payloads aside). */
  records: number;
  malformed: number;
  /** The first `keepMalformed` malformed stretches (parser's and bad payloads), in file order, and how many more. */
  shown: MalformedRecord[];
  hidden: number;
  signs: LoggingSigns;
}

/** An entry as the join hands it back: what the report counts of it (command, user, bytes). */
export type EntryHandle = [command: string, user: string | null, bytes: number];

export type JoinState = OutcomeJoinSnapshot<EntryHandle>;

/** A range read and waiting for the join: its records (HeldRecords). */
export type HeldChunk = HeldRecords;

/**
 * A range's records as it is read: held (HeldRecords) until the join's state at its start is
 * known, then joined as they come (`joinFrom`: what was held is replayed first and let go). A
 * range whose state is known before it is read is never held: holding is what a worker costs
 * beyond one thread (the columns survive the young generation; replaying them is a second pass).
 */
export class RangeRecords {
  readonly index: number;
  private held: HeldRecords | undefined;
  private live: LiveJoin | undefined;
  private readonly miscLogged: boolean | undefined;

  constructor(index: number, format: LogFormat, miscLogged: boolean | undefined) {
    this.index = index;
    this.miscLogged = miscLogged;
    this.held = new HeldRecords(index, format);
  }

  /** `offset`: the record's in the file. */
  add(record: LogRecord, entry: AuditEntry | undefined, offset: number): void {
    if (this.live === undefined) this.held!.add(record, entry, offset);
    else this.live.record(record, entry, offset);
  }

  /** The join's state at the range's start is `state` (none for the stream's first range): join from here on. */
  joinFrom(state: JoinState | undefined): void {
    if (this.live !== undefined) throw new Error(`range ${this.index} is joined already`);
    this.live = new LiveJoin(state, this.miscLogged);
    this.held!.replay(this.live.join);
    this.held = undefined;
  }

  /** Joining: what it gave (once the range is read). */
  joined(): ChunkJoined | undefined {
    return this.live?.result(this.index);
  }

  /** Not joined yet: the records held. */
  heldRecords(): HeldChunk | undefined {
    return this.held;
  }
}

/** The join restored from a state, and what its decisions and events add up to. */
class LiveJoin {
  readonly tally = new VolumeTally();
  readonly events: StreamEvent[] = [];
  readonly join: OutcomeJoin<EntryHandle>;
  /** The file offset of the record being joined live (undefined while replaying: the record has it). */
  private at: number | undefined;

  constructor(state: JoinState | undefined, miscLogged: boolean | undefined) {
    this.join = restoreJoin(state, this.tally, miscLogged, (event) => {
      // The record may be reused for the next one: its place and time are copied now.
      const { offset, timestamp } = event.record;
      this.events.push({ ...event, record: { ...blankRecord(this.at ?? offset, 0), timestamp } });
    });
  }

  record(record: LogRecord, entry: AuditEntry | undefined, offset: number): void {
    this.at = offset;
    if (entry === undefined) this.join.record(record);
    else this.join.record(record, entry, [entry.command, record.user, record.size]);
  }

  result(index: number): ChunkJoined {
    return { index, state: this.join.snapshot(identity), tally: this.tally.state(), events: this.events };
  }
}

/**
 * What joining a range gave: the join's state at its end, what its decisions add to the report,
 * and the events (server starts, setting changes…) its records made, in order.
 */
export interface ChunkJoined {
  index: number;
  state: JoinState;
  tally: VolumeTallyState;
  /** Their records hold only the place and time (what coverage reads); the rest is blank. */
  events: StreamEvent[];
}

/**
 * Reads a range (see the module comment). `progress` gets on-disk bytes as they are read;
 * `pause` is awaited between reads (a worker lets the messages that came in meanwhile run).
 */
export async function readChunk(
  task: ChunkTask,
  progress: (bytes: number) => void = () => {},
  pause?: () => Promise<void>,
  held: RangeRecords = new RangeRecords(task.index, task.format, undefined),
  started?: (start: number) => void,
): Promise<ChunkRead> {
  const tally = new VolumeTally();
  const signs = noSigns();
  const shown: MalformedRecord[] = [];
  let hidden = 0;
  let records = 0;
  let malformed = 0;
  const report = (error: MalformedRecord): void => {
    if (shown.length < task.keepMalformed) shown.push(error);
    else hidden++;
  };

  const start = task.gzip || task.exactStart ? task.start : firstEventAt(task, task.start);
  started?.(start);
  /** The nominal end, and the first record or stretch at or after it (found while reading on). */
  const end = task.gzip ? Number.POSITIVE_INFINITY : task.end;
  let next = -1;
  let base = start;
  const badPayload = (error: MalformedRecord): void => {
    tally.addMalformed();
    report({ ...error, offset: base + error.offset });
  };
  const parser = createParser(
    task.format,
    {
      record(record: LogRecord): void {
        const offset = base + record.offset;
        if (offset >= end) {
          if (next < 0) next = offset;
          return;
        }
        tally.addRecord();
        records++;
        const entry = decodeAuditEntry(record, badPayload);
        noteSigns(signs, record, entry);
        held.add(record, entry, offset);
        if (entry !== undefined) tally.addEntry(entry, record);
      },
      malformed(error: MalformedRecord): void {
        const offset = base + error.offset;
        if (offset >= end) {
          if (next < 0) next = offset;
          return;
        }
        tally.addMalformed();
        malformed++;
        report({ ...error, offset });
      },
    },
    task.prefix === undefined ? {} : { prefix: task.prefix },
  );

  if (task.gzip) {
    base = 0;
    await readGzip(task.file, parser, progress);
    next = task.size;
  } else if (start >= task.end) {
    next = start; // a record that began before this range covers all of it
  } else {
    const fd = openSync(task.file, "r");
    try {
      const buf = Buffer.allocUnsafe(READ_BYTES);
      let at = start;
      while (at < task.end) {
        const n = readSync(fd, buf, 0, Math.min(READ_BYTES, task.end - at), at);
        if (n === 0) break;
        parser.push(buf.subarray(0, n));
        at += n;
        progress(n);
        if (pause) await pause();
      }
      // Past the end: until the parser shows where the next record starts (or the file ends).
      while (next < 0 && at < task.size) {
        const n = readSync(fd, buf, 0, Math.min(OVERRUN_BYTES, task.size - at), at);
        if (n === 0) break;
        parser.push(buf.subarray(0, n));
        at += n;
      }
      if (next < 0) {
        parser.end();
        if (next < 0) next = at;
      }
    } finally {
      closeSync(fd);
    }
  }
  return {
    index: task.index,
    start,
    end: next,
    tally: tally.state(),
    records,
    malformed,
    shown,
    hidden,
    signs,
  };
}

async function readGzip(file: string, parser: LogParser, progress: (bytes: number) => void): Promise<void> {
  const raw = createReadStream(file, { highWaterMark: READ_BYTES });
  raw.on("data", (chunk) => progress(chunk.length));
  const input = raw.pipe(createGunzip({ chunkSize: READ_BYTES }));
  raw.on("error", (error) => input.destroy(error));
  for await (const chunk of input as AsyncIterable<Buffer>) parser.push(chunk);
  parser.end();
}

/**
 * The offset of the first record or malformed stretch at or after `at`, as a parser that starts
 * reading at a line start up to `probeBytes` before sees it; the file's size when none starts
 * before its end.
 */
export function firstEventAt(
  task: Pick<ChunkTask, "file" | "size" | "format" | "prefix" | "probeBytes">,
  at: number,
): number {
  if (at <= 0) return 0;
  const fd = openSync(task.file, "r");
  try {
    const buf = Buffer.allocUnsafe(OVERRUN_BYTES);
    let from = Math.max(0, at - task.probeBytes);
    if (from > 0) {
      // From the start of a line: anything else is surely not a record.
      const n = readSync(fd, buf, 0, Math.min(OVERRUN_BYTES, at - from), from);
      const nl = buf.subarray(0, n).indexOf(0x0a);
      if (nl >= 0) from += nl + 1;
    }
    let found = -1;
    const base = from;
    const seen = (offset: number): void => {
      if (found < 0 && base + offset >= at) found = base + offset;
    };
    const parser = createParser(
      task.format,
      { record: (r) => seen(r.offset), malformed: (e) => seen(e.offset) },
      task.prefix === undefined ? {} : { prefix: task.prefix },
    );
    let pos = from;
    while (found < 0 && pos < task.size) {
      const n = readSync(fd, buf, 0, Math.min(OVERRUN_BYTES, task.size - pos), pos);
      if (n === 0) break;
      parser.push(buf.subarray(0, n));
      pos += n;
    }
    if (found < 0) parser.end();
    return found < 0 ? task.size : found;
  } finally {
    closeSync(fd);
  }
}

/**
 * A range's records as the outcome join reads them, kept in columns rather than as objects: held
 * until the join's state is known, records as objects survived V8's young generation and cost
 * more to collect (and to copy) than to read. Strings are kept as the parser made them (views of
 * the text it decoded a read at a time, which they keep alive: about the range's size); a value
 * equal to the record before's is kept once.
 */
export class HeldRecords {
  readonly index: number;
  readonly format: LogFormat;
  count = 0;
  private flags = new Uint8Array(1024);
  /** Per record: size, pid (NaN for none), the entry's statement id. */
  private nums = new Float64Array(3 * 1024);
  /** Per record: session id, virtual transaction id, user, database, severity, SQLSTATE. */
  private readonly strs: (string | null)[] = [];
  /** Per entry: class, command, statement. */
  private readonly entryStrs: string[] = [];
  /** Per record without an entry: message, query. */
  private readonly plainStrs: (string | null)[] = [];
  private last: (string | null)[] = [null, null, null, null, null, null, "", ""];
  /** Offset and time of the few records that may make an event (mayMakeEvent), by record number. */
  private readonly places = new Map<number, [offset: number, timestamp: string | null]>();

  constructor(index: number, format: LogFormat) {
    this.index = index;
    this.format = format;
  }

  /** `s`, or the equal string kept for the record before (slot `k`), so that one is kept once. */
  private same<T extends string | null>(k: number, s: T): T {
    const last = this.last[k];
    if (s === last) return last as T;
    this.last[k] = s;
    return s;
  }

  /** `offset`: the record's in the file (the parser's is the range's). */
  add(r: LogRecord, entry: AuditEntry | undefined, offset: number): void {
    const i = this.count++;
    if (i === this.flags.length) this.grow();
    const n = 3 * i;
    if (mayMakeEvent(r, entry)) this.places.set(i, [offset, r.timestamp]);
    this.nums[n] = r.size;
    this.nums[n + 1] = r.pid ?? Number.NaN;
    this.strs.push(
      r.sessionId,
      r.virtualTransactionId,
      this.same(2, r.user),
      this.same(3, r.database),
      this.same(4, r.severity),
      r.sqlState,
    );
    if (entry === undefined) {
      this.flags[i] = 0;
      this.plainStrs.push(r.message, r.query);
      return;
    }
    this.flags[i] = 1;
    this.nums[n + 2] = entry.statementId;
    this.entryStrs.push(this.same(6, entry.class), this.same(7, entry.command), entry.statement);
  }

  private grow(): void {
    const flags = new Uint8Array(this.flags.length * 2);
    flags.set(this.flags);
    this.flags = flags;
    const nums = new Float64Array(this.nums.length * 2);
    nums.set(this.nums);
    this.nums = nums;
  }

  /**
   * Gives every record to `join`, in order, as a record and entry that hold what it reads (the
   * same two objects each time: the join keeps nothing of them but their values).
   */
  replay(join: OutcomeJoin<EntryHandle>): void {
    const record = blankRecord(0, 0);
    const entry: AuditEntry = {
      auditType: "",
      statementId: 0,
      substatementId: 0,
      class: "",
      command: "",
      objectType: "",
      objectName: "",
      statement: "",
      parameter: "<none>",
      rows: null,
    };
    const { nums, strs, entryStrs, plainStrs } = this;
    let e = 0;
    let p = 0;
    for (let i = 0; i < this.count; i++) {
      const n = 3 * i;
      const k = 6 * i;
      const pid = nums[n + 1]!;
      record.size = nums[n]!;
      record.pid = Number.isNaN(pid) ? null : pid;
      record.sessionId = strs[k]!;
      record.virtualTransactionId = strs[k + 1]!;
      record.user = strs[k + 2]!;
      record.database = strs[k + 3]!;
      record.severity = strs[k + 4]!;
      record.sqlState = strs[k + 5]!;
      const place = this.places.get(i);
      record.offset = place?.[0] ?? 0;
      record.timestamp = place?.[1] ?? null;
      if (this.flags[i] === 0) {
        record.message = plainStrs[p++]!;
        record.query = plainStrs[p++]!;
        join.record(record);
        continue;
      }
      record.message = "";
      record.query = null;
      entry.class = entryStrs[e++]!;
      entry.command = entryStrs[e++]!;
      entry.statement = entryStrs[e++]!;
      entry.statementId = nums[n + 2]!;
      join.record(record, entry, [entry.command, record.user, record.size]);
    }
  }
}

/**
 * Joins a held range: the join restored from `state` (the state at the range's start; none for
 * the stream's first range) reads its records; returns the state at its end and what the
 * decisions made add to the report.
 */
export function joinChunk(held: HeldChunk, state: JoinState | undefined, miscLogged?: boolean): ChunkJoined {
  const live = new LiveJoin(state, miscLogged);
  held.replay(live.join);
  return live.result(held.index);
}

/** The stream ended: what the join still holds is decided (log-ended, two-phase); returns what that adds. */
export function endJoin(state: JoinState, miscLogged?: boolean): VolumeTallyState {
  const tally = new VolumeTally();
  restoreJoin(state, tally, miscLogged).end();
  return tally.state();
}

const identity = (h: EntryHandle): EntryHandle => h;

function restoreJoin(
  state: JoinState | undefined,
  tally: VolumeTally,
  miscLogged: boolean | undefined,
  event?: (event: StreamEvent) => void,
): OutcomeJoin<EntryHandle> {
  const options = {
    ...(miscLogged === undefined ? {} : { miscLogged }),
    ...(event === undefined ? {} : { event }),
    decided: (h: EntryHandle, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null) =>
      tally.addOutcomeOf(h[0], h[1], h[2], outcome, sqlstate, reason),
    attempt: (record: LogRecord) => tally.addAttempt(record),
  };
  return state === undefined
    ? new OutcomeJoin<EntryHandle>(options)
    : OutcomeJoin.restore(state, options, identity);
}
