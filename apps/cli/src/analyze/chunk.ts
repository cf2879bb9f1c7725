/**
 * One piece of a parallel `analyze` (parallel.ts): a byte range of a log file, read, parsed,
 * decoded, tallied and joined on its own: the outcome join starts without the state at the
 * range's start (RangeJoin, @auditpipe/outcome), keeping only the range's edge (what each session
 * logged before its first new transaction, reduced to what the join reads) until that state is
 * known; then the edge is replayed on it and the state at the range's end handed on (mergeRange).
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
  mergeRange,
  type Outcome,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
  RangeJoin,
  type RangeJoinResult,
  Route,
  type StreamEvent,
  type UnknownReason,
} from "@auditpipe/outcome";
import {
  type AuditEntry,
  type AuditView,
  blankRecord,
  createParser,
  decodeAuditEntry,
  detached,
  type LogFormat,
  type LogParser,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import { type LoggingSigns, noSigns, noteSigns } from "./outcomes.ts";

/** Bytes per read. */
const READ_BYTES = 1 << 20;
/**
 * Bytes given to the parser at a time (a read is sliced), the join's held statement texts released
 * after each. The parser reads each push as one latin1 string, and its fields are views of it: a
 * string of 1 MiB is a large object of its own (mmapped, so page faults, and outliving its young
 * generation), one of 64 KiB is not, and stays in the caches (the sidecar's lane slices alike).
 */
const PARSE_BYTES = 64 << 10;
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
  /** (user, database) pairs the join knew to show MISC entries when the range was handed out (RangeJoin). */
  miscPairs?: string[];
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

/** A range read and waiting for the join's state at its start: what its own join gave, and its edge. */
export interface HeldChunk {
  index: number;
  result: RangeJoinResult<EntryHandle>;
  tally: VolumeTallyState;
  events: StreamEvent[];
  edge: HeldRecords;
}

/**
 * A range's records as it is read: joined on their own (RangeJoin), the edge held; or, when the
 * join's state at its start is known before it is read (`joinFrom`), joined from that state.
 */
export class RangeRecords {
  readonly index: number;
  private readonly join: Joiner;
  private readonly edge: HeldRecords | undefined;
  private readonly range: RangeJoin<EntryHandle> | undefined;

  /**
   * `from`: the join's state at the range's start, when known (none: the stream's first range);
   * `miscPairs`: see ChunkTask.
   */
  constructor(
    index: number,
    format: LogFormat,
    miscLogged: boolean | undefined,
    from?: { state: JoinState | undefined },
    miscPairs?: string[],
  ) {
    this.index = index;
    if (from !== undefined) {
      this.join = new Joiner((options) => restoreJoin(from.state, options), miscLogged);
      return;
    }
    let range: RangeJoin<EntryHandle> | undefined;
    this.join = new Joiner((options) => {
      range = new RangeJoin(options, miscPairs);
      return range.join;
    }, miscLogged);
    this.range = range;
    this.edge = new HeldRecords(index, format);
  }

  /** `offset`: the record's in the file. */
  add(record: LogRecord, entry: AuditEntry | undefined, offset: number): void {
    const range = this.range;
    if (range === undefined) {
      this.join.record(record, entry, offset);
      return;
    }
    this.join.at = offset;
    const route =
      entry === undefined
        ? range.record(record)
        : range.record(record, entry, [entry.command, record.user, record.size]);
    if (route !== Route.JOIN) this.edge!.add(record, entry, offset, route);
  }

  /**
   * An entry read as an AuditView (the parser's auditView), where add() would join it at once:
   * false, having done nothing, where it would not (the edge, or an entry that may make an event):
   * the caller then gives the record and entry to add().
   */
  entry(view: AuditView, offset: number): boolean {
    const range = this.range;
    if (range === undefined) return this.join.entry(view, offset);
    this.join.at = offset;
    return range.entry(view, [view.command, view.user, view.size]);
  }

  /**
   * The parser's text read so far is let go: the join hashes the open statements' texts it held
   * (OutcomeJoinOptions.holdTexts). Called after each slice the parser was given.
   */
  releaseTexts(): void {
    this.join.join.releaseTexts();
  }

  /** Joined from a known state: what it gave (once the range is read). */
  joined(): ChunkJoined | undefined {
    return this.range === undefined ? this.join.result(this.index) : undefined;
  }

  /** Joined on its own: what the merge needs (once the range is read). */
  heldRecords(): HeldChunk | undefined {
    if (this.range === undefined) return undefined;
    return {
      index: this.index,
      result: this.range.result(identity),
      tally: this.join.tally.state(),
      events: this.join.events,
      edge: this.edge!,
    };
  }
}

/** A join and what its decisions and events add up to. */
class Joiner {
  readonly tally = new VolumeTally();
  readonly events: StreamEvent[] = [];
  readonly join: OutcomeJoin<EntryHandle>;
  /** The file offset of the record being joined (undefined while replaying: the record has it). */
  at: number | undefined;

  constructor(
    make: (options: OutcomeJoinOptions<EntryHandle>) => OutcomeJoin<EntryHandle>,
    miscLogged?: boolean,
  ) {
    this.join = make({
      ...joinOptions(this.tally, miscLogged, (event) => {
        // The record may be reused for the next one: its place and time are copied now.
        const { offset, timestamp } = event.record;
        this.events.push({ ...event, record: { ...blankRecord(this.at ?? offset, 0), timestamp } });
      }),
      // A statement's text is hashed only where the join compares it; the reader releases the
      // texts after each slice it parses (RangeRecords.releaseTexts), as the sidecar's lane does.
      holdTexts: true,
    });
  }

  record(record: LogRecord, entry: AuditEntry | undefined, offset: number): void {
    this.at = offset;
    if (entry === undefined) this.join.record(record);
    else this.join.record(record, entry, [entry.command, record.user, record.size]);
  }

  entry(view: AuditView, offset: number): boolean {
    this.at = offset;
    return this.join.entry(view, [view.command, view.user, view.size]);
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
 * Not split: its sinks (records, views, malformed stretches) share the counts and the range's
 * end they update, which would otherwise cross calls as one more object.
 */
export async function readChunk(
  task: ChunkTask,
  progress: (bytes: number) => void = () => {},
  pause?: () => Promise<void>,
  held: RangeRecords = new RangeRecords(task.index, task.format, undefined),
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
  /** The nominal end, and the first record or stretch at or after it (found while reading on). */
  const end = task.gzip ? Number.POSITIVE_INFINITY : task.end;
  let next = -1;
  let base = start;
  const badPayload = (error: MalformedRecord): void => {
    tally.addMalformed();
    report({ ...error, offset: base + error.offset });
  };
  // An ordinary csvlog entry is read as an AuditView: no record or entry made (what the join and
  // the tally read of it is the view's); the rest as records.
  const auditView = {
    entry(view: AuditView): boolean {
      const offset = base + view.offset;
      if (offset >= end) {
        if (next < 0) next = offset;
        return true;
      }
      if (!held.entry(view, offset)) return false;
      tally.addRecord();
      records++;
      tally.addEntry(view, view);
      return true;
    },
  };
  const parse = createParser(
    task.format,
    {
      record(record: LogRecord, decoded?: AuditEntry): void {
        const offset = base + record.offset;
        if (offset >= end) {
          if (next < 0) next = offset;
          return;
        }
        tally.addRecord();
        records++;
        const entry = decoded ?? decodeAuditEntry(record, badPayload);
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
    // No record leaves this reader but as what the tally, the join and its events read (their
    // places and times): none reads UNREAD_FIELDS or UNTALLIED_FIELDS. The tests check the report
    // against the serial reader's, which keeps them when a caller takes records. csvlog decodes
    // the entries where its text lies (the same entries, read in place).
    task.prefix === undefined
      ? { omitUntalliedFields: true, decodeAuditEntries: true, auditView }
      : { prefix: task.prefix, omitUntalliedFields: true, decodeAuditEntries: true, auditView },
  );
  // A read goes to the parser PARSE_BYTES at a time; the join holds the statement texts of a
  // slice (holdTexts) until it is parsed.
  const parser: LogParser = {
    push(chunk: Uint8Array): void {
      for (let at = 0; at < chunk.length; at += PARSE_BYTES) {
        parse.push(chunk.subarray(at, at + PARSE_BYTES));
        held.releaseTexts();
      }
    },
    end(): void {
      parse.end();
      held.releaseTexts();
    },
  };

  if (task.gzip) {
    base = 0;
    await readGzip(task.file, parser, progress);
    next = task.size;
  } else if (start >= task.end) {
    next = start; // a record that began before this range covers all of it
  } else {
    const at = await readPlain(task, start, parser, () => next >= 0, progress, pause);
    if (next < 0) next = at;
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

/**
 * Reads [start, end) of a plain file into `parser`, then on past the end until `found` (the parser
 * gave the next record's start) or the file ends (the parser is then ended). Returns where it stopped.
 */
async function readPlain(
  task: ChunkTask,
  start: number,
  parser: LogParser,
  found: () => boolean,
  progress: (bytes: number) => void,
  pause: (() => Promise<void>) | undefined,
): Promise<number> {
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
    while (!found() && at < task.size) {
      const n = readSync(fd, buf, 0, Math.min(OVERRUN_BYTES, task.size - at), at);
      if (n === 0) break;
      parser.push(buf.subarray(0, n));
      at += n;
    }
    if (!found()) parser.end();
    return at;
  } finally {
    closeSync(fd);
  }
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
 * A range's edge (RangeJoin's records that wait for the join's state at the range's start), as
 * the outcome join reads them, in columns with the route each was given. Strings are copies
 * (detached()): a parser's are views of the text it decoded a read at a time, and a few kept
 * would keep much of the range's text alive; a value equal to the record before's is kept once.
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
    const kept = own(s);
    this.last[k] = kept;
    return kept;
  }

  /** `offset`: the record's in the file (the parser's is the range's); `route`: RangeJoin's for it. */
  add(r: LogRecord, entry: AuditEntry | undefined, offset: number, route: Route): void {
    const i = this.count++;
    if (i === this.flags.length) this.grow();
    const n = 3 * i;
    if (mayMakeEvent(r, entry)) this.places.set(i, [offset, r.timestamp]);
    this.nums[n] = r.size;
    this.nums[n + 1] = r.pid ?? Number.NaN;
    this.strs.push(
      own(r.sessionId),
      own(r.virtualTransactionId),
      this.same(2, r.user),
      this.same(3, r.database),
      this.same(4, r.severity),
      own(r.sqlState),
    );
    if (entry === undefined) {
      this.flags[i] = route << 1;
      this.plainStrs.push(own(r.message), own(r.query));
      return;
    }
    this.flags[i] = 1 | (route << 1);
    this.nums[n + 2] = entry.statementId;
    this.entryStrs.push(this.same(6, entry.class), this.same(7, entry.command), own(entry.statement));
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
   * Gives every record to `visit`, in order, as a record and entry that hold what the join reads.
   * Each is a new object built whole, in the parser's shape: writing the fields of one object
   * over and over would make V8 take those fields for mutable in that shape, the parser's own
   * records', and drop the compiled code that relied on them (parse, decode, tally, join).
   */
  replay(visit: (route: Route, record: LogRecord, entry?: AuditEntry, handle?: EntryHandle) => void): void {
    const { nums, strs, entryStrs, plainStrs } = this;
    let e = 0;
    let p = 0;
    for (let i = 0; i < this.count; i++) {
      const n = 3 * i;
      const k = 6 * i;
      const pid = nums[n + 1]!;
      const place = this.places.get(i);
      const flags = this.flags[i]!;
      const route = (flags >> 1) as Route;
      const plain = (flags & 1) === 0;
      const record = replayedRecord(
        place?.[0] ?? 0,
        small(nums[n]!),
        place?.[1] ?? null,
        Number.isNaN(pid) ? null : small(pid),
        strs,
        k,
        plain ? plainStrs[p++]! : "",
        plain ? plainStrs[p++]! : null,
      );
      if (plain) {
        visit(route, record);
        continue;
      }
      const entry: AuditEntry = {
        auditType: "",
        statementId: small(nums[n + 2]!),
        substatementId: 0,
        class: entryStrs[e++]!,
        command: entryStrs[e++]!,
        objectType: "",
        objectName: "",
        statement: entryStrs[e++]!,
        parameter: "<none>",
        rows: null,
      };
      visit(route, record, entry, [entry.command, record.user, record.size]);
    }
  }
}

/**
 * A held record as the join reads it: the fields in the order the parsers build them (blankRecord's).
 * Written whole rather than blankRecord() then assigned: assigning into a blank record made V8 take
 * the parser's record fields for mutable and drop the code compiled on them (constness deopts).
 */
function replayedRecord(
  offset: number,
  size: number,
  timestamp: string | null,
  pid: number | null,
  strs: (string | null)[],
  k: number,
  message: string,
  query: string | null,
): LogRecord {
  return {
    offset,
    size,
    timestamp,
    user: strs[k + 2]!,
    database: strs[k + 3]!,
    pid,
    remoteHost: null,
    sessionId: strs[k]!,
    sessionLine: null,
    commandTag: null,
    sessionStart: null,
    virtualTransactionId: strs[k + 1]!,
    transactionId: null,
    severity: strs[k + 4] ?? "",
    sqlState: strs[k + 5]!,
    message,
    detail: null,
    hint: null,
    internalQuery: null,
    internalPosition: null,
    context: null,
    query,
    queryPosition: null,
    location: null,
    applicationName: null,
    backendType: null,
    leaderPid: null,
    queryId: null,
  };
}

/**
 * A number read back from a Float64Array, as the parser makes it: a small integer (a Smi) where
 * it is one. A double put where the parser's records hold small integers changes the objects'
 * field representation (a new map), and the join's compiled code fails its map checks on both.
 */
function small(n: number): number {
  return n >= 0 && n <= 0x3fffffff ? n | 0 : n;
}

/** A string the edge keeps, copied off the parser's text (which it would keep alive: see detached()). */
function own<T extends string | null>(s: T): T {
  return (s === null ? null : detached(s)) as T;
}

/**
 * Joins a range read on its own, now that the join's state at its start is known (none for the
 * stream's first range): its edge replayed on that state and merged with what its own join gave
 * (mergeRange). Undefined when the merge cannot tell: the range is then joined in order.
 */
export function joinChunk(
  held: HeldChunk,
  state: JoinState | undefined,
  miscLogged?: boolean,
): ChunkJoined | undefined {
  const tally = new VolumeTally();
  const events: StreamEvent[] = [];
  // The replayed record is reused for the next one: the event keeps its place and time.
  const options = joinOptions(tally, miscLogged, (event) => {
    const { offset, timestamp } = event.record;
    events.push({ ...event, record: { ...blankRecord(offset, 0), timestamp } });
  });
  const merged = mergeRange(
    state,
    held.result,
    (visit) => held.edge.replay(visit),
    options,
    identity,
    fromState,
  );
  if (merged === undefined) return undefined;
  tally.merge(held.tally);
  return { index: held.index, state: merged, tally: tally.state(), events: inOrder(held.events, events) };
}

/** Two lists of events, each in file order, as one (stable: the range's own first at one place). */
function inOrder(a: StreamEvent[], b: StreamEvent[]): StreamEvent[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: StreamEvent[] = [];
  let j = 0;
  for (const e of a) {
    while (j < b.length && b[j]!.record.offset < e.record.offset) out.push(b[j++]!);
    out.push(e);
  }
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/** The stream ended: what the join still holds is decided (log-ended, two-phase); returns what that adds. */
export function endJoin(state: JoinState, miscLogged?: boolean): VolumeTallyState {
  const tally = new VolumeTally();
  restoreJoin(state, joinOptions(tally, miscLogged)).end();
  return tally.state();
}

const identity = (h: EntryHandle): EntryHandle => h;
/**
 * A handle from a state that came from another thread, made again as the reader makes its own:
 * an array the structured clone made has another map, which the join's compiled code would fail on.
 */
const fromState = (h: EntryHandle): EntryHandle => [h[0], h[1], h[2]];

/** A join's decisions and attempts added to `tally`, its events to `event`. */
function joinOptions(
  tally: VolumeTally,
  miscLogged: boolean | undefined,
  event?: (event: StreamEvent) => void,
): OutcomeJoinOptions<EntryHandle> {
  return {
    ...(miscLogged === undefined ? {} : { miscLogged }),
    ...(event === undefined ? {} : { event }),
    decided: (h: EntryHandle, outcome: Outcome, sqlstate: string | null, reason: UnknownReason | null) =>
      tally.addOutcomeOf(h[0], h[1], h[2], outcome, sqlstate, reason),
    attempt: (record: LogRecord) => tally.addAttempt(record),
  };
}

function restoreJoin(
  state: JoinState | undefined,
  options: OutcomeJoinOptions<EntryHandle>,
): OutcomeJoin<EntryHandle> {
  return state === undefined
    ? new OutcomeJoin<EntryHandle>(options)
    : OutcomeJoin.restore(state, options, fromState);
}
