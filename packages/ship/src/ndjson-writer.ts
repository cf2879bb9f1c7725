/**
 * NDJSON in the shipped-record format, written by a WebAssembly encoder (wasm/ndjson.wat) instead
 * of JSON.stringify, which cost the sidecar ~1.7 µs an entry, more than parsing it. The writer
 * records each entry as ops (a key, a string, a number, null), its strings appended to one string
 * and its integers to a Float64Array; flush() copies them into the module's memory in one write,
 * the module writes the lines, and they are appended to the writer's output, which take() hands
 * over. The bytes are JSON.stringify's, line for line (tested).
 *
 * The strings go in as bytes when every character is ASCII (audit text nearly always is): one
 * UTF-8 write says so when it writes as many bytes as there are characters. Otherwise they go in
 * again as UTF-16 code units, which the module encodes as UTF-8 itself (lone surrogates as
 * JSON.stringify escapes them, where a UTF-8 write would replace them).
 *
 * The output grows in one buffer per take, sized from the last one: a new large Buffer per flush
 * cost more in page faults than the encoding (~1 ms for 2 MB), copying into a kept one ~0.1 ms.
 */
import { type AuditEntry, detached, type LogRecord } from "@auditpipe/parse";
import { isoTimestamp } from "./_iso-timestamp.ts";
import { NDJSON_WASM } from "./_ndjson-wasm.ts";
import type { ShippedAttempt, ShippedOutcome, ShippedOutcomeLine, ShippedRecord } from "./types.ts";

/** Op codes (see the .wat): the low 3 bits of an op, its argument above them. */
const LIT = 0;
const STR = 1;
const NUM = 2;
const RAW = 3;
const NULL = 4;
const MARK = 5;

/** Literals every writer has, by id; keys in the shipped-record order (types.ts). */
const FIXED_LITERALS = [
  '{"record":"entry","ts":',
  ',"user":',
  ',"database":',
  ',"pid":',
  ',"session_id":',
  ',"session_line":',
  ',"application_name":',
  ',"remote_host":',
  ',"audit_type":',
  ',"statement_id":',
  ',"substatement_id":',
  ',"class":',
  ',"command":',
  ',"object_type":',
  ',"object_name":',
  ',"statement":',
  ',"parameter":',
  ',"rows":',
  "[",
  ",",
  "]",
  "}}\n",
  '},"redacted":',
  "}\n",
  '},"invalid_utf8":true}\n',
  '},"invalid_utf8":true,"redacted":',
  ',"outcome":',
  ',"sqlstate":',
  '{"record":"outcome","ts":',
  '{"record":"attempt","ts":',
  ',"severity":',
  ',"message":',
  "}\n",
  '},"outcome":',
] as const;
/** Their ids. */
const L_TS = 0;
const L_USER = 1;
const L_DATABASE = 2;
const L_PID = 3;
const L_SESSION_ID = 4;
const L_SESSION_LINE = 5;
const L_APPLICATION_NAME = 6;
const L_REMOTE_HOST = 7;
const L_AUDIT_TYPE = 8;
const L_STATEMENT_ID = 9;
const L_SUBSTATEMENT_ID = 10;
const L_CLASS = 11;
const L_COMMAND = 12;
const L_OBJECT_TYPE = 13;
const L_OBJECT_NAME = 14;
const L_STATEMENT = 15;
const L_PARAMETER = 16;
const L_ROWS = 17;
const L_OPEN = 18;
const L_COMMA = 19;
const L_CLOSE = 20;
const L_END = 21;
const L_REDACTED = 22;
const L_END_REDACTED = 23;
const L_END_INVALID_UTF8 = 24;
const L_INVALID_UTF8_REDACTED = 25;
const L_OUTCOME = 26;
const L_SQLSTATE = 27;
const L_OUTCOME_LINE = 28;
const L_ATTEMPT_LINE = 29;
const L_SEVERITY = 30;
const L_MESSAGE = 31;
/** `}\n`: an outcome line ends after its sqlstate. */
const L_LINE_END = 32;
/** `},"outcome":`: an outcome line's source closes, its outcome follows. */
const L_SOURCE_THEN_OUTCOME = 33;

/**
 * Bytes left after an entry's `rows` for its `,"outcome":…,"sqlstate":…`, filled when the batch is
 * taken (the outcome is rarely known when the entry is encoded): room for the longest.
 */
const OUTCOME_HOLE = ',"outcome":"rolled_back","sqlstate":"XXXXX"'.length;
/**
 * The texts that fill a hole, made once each and numbered from 1: by outcome without a SQLSTATE,
 * and failed ones by SQLSTATE. A writer notes a hole's text by its number (see NdjsonWriter.fills).
 */
const outcomeTexts = new Map<ShippedOutcome, number>();
const failedTexts = new Map<string, number>();
const textsById: Buffer[] = [Buffer.alloc(0)];
/** Texts numbered at most; past it (SQLSTATEs no PostgreSQL writes) a text is made for its hole alone. */
const MAX_TEXT_IDS = 8192;
/** The number of the text that fills a hole with this outcome, or 0 when it is not numbered (MAX_TEXT_IDS). */
function outcomeTextId(outcome: ShippedOutcome, sqlstate: string | null): number {
  const cache = sqlstate === null ? outcomeTexts : failedTexts;
  const key = sqlstate === null ? outcome : `${outcome} ${sqlstate}`;
  let id = (cache as Map<string, number>).get(key);
  if (id === undefined) {
    if (textsById.length > MAX_TEXT_IDS) return 0;
    const text = outcomeTextOf(outcome, sqlstate);
    id = textsById.length;
    textsById.push(text);
    (cache as Map<string, number>).set(key, id);
  }
  return id;
}
function outcomeTextOf(outcome: ShippedOutcome, sqlstate: string | null): Buffer {
  const text = Buffer.from(`,"outcome":${JSON.stringify(outcome)},"sqlstate":${JSON.stringify(sqlstate)}`);
  // A SQLSTATE is five characters; anything longer (not from PostgreSQL) would not fit.
  return text.length > OUTCOME_HOLE ? outcomeTextOf(outcome, null) : text;
}
/** Per-source literals (`,"source":{"file":"…","offset":`) kept at most; more start the table afresh. */
const MAX_SOURCE_LITERALS = 64;
/**
 * Values of the record fields that repeat from entry to entry (user, database, application name,
 * remote host, audit type) written as literals (their JSON text, made once) rather than as
 * strings: no string appended to the pending text, no escaping. At most this many a take.
 */
const MAX_VALUE_LITERALS = 64;
/** Values longer than this are written as strings (a literal is copied into memory at every encode). */
const MAX_VALUE_LITERAL_UNITS = 64;
/** The fields whose values become literals, by slot. */
const V_USER = 0;
const V_DATABASE = 1;
const V_APPLICATION_NAME = 2;
const V_REMOTE_HOST = 3;
const V_AUDIT_TYPE = 4;
const VALUE_FIELDS = 5;

/** Encode once this many UTF-16 units are pending, so one encode's memory stays a few MB. */
const FLUSH_UNITS = 1 << 20;
/** Ops one entry takes, parameters aside: reserved up front so the hot path checks once. */
const OPS_PER_ENTRY = 48;
/** Most bytes one pending UTF-16 unit can become (a control character as `\u00xx`). */
const WORST_BYTES_PER_UNIT = 6;
/** Where the module's own constants end (see the .wat). */
const RESERVED = 64;
/**
 * Bytes the module may write past the end of its output (it copies literals and numbers in 8-byte
 * words, ASCII strings in 16-byte ones: the last string's spill is at most 15 bytes).
 */
const OVERRUN_BYTES = 24;
const PAGE = 65536;
/** Memory above this is given back when a smaller encode comes (an oversized record has passed). */
const KEEP_BYTES = 16 << 20;

/** The little of the WebAssembly JS API used here (the project compiles without DOM types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface NdjsonExports {
  memory: WasmMemory;
  encode(
    ops: number,
    count: number,
    text: number,
    nums: number,
    lits: number,
    out: number,
    wide: 0 | 1,
  ): number;
}
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
  RuntimeError: new () => Error;
};

/**
 * One module instance for every writer: an encode is synchronous and leaves nothing behind in
 * its memory, so writers share it and its memory is that of the largest encode.
 */
let compiled: object | undefined;
let wasm: NdjsonExports | undefined;

function memoryOf(minBytes: number): NdjsonExports {
  const have = wasm?.memory.buffer.byteLength ?? 0;
  if (!wasm || (have > KEEP_BYTES && minBytes <= KEEP_BYTES)) {
    compiled ??= new WebAssembly.Module(Buffer.from(NDJSON_WASM, "base64"));
    wasm = new WebAssembly.Instance(compiled, {}).exports as NdjsonExports;
  }
  const size = wasm.memory.buffer.byteLength;
  if (minBytes > size) wasm.memory.grow(Math.ceil((minBytes - size) / PAGE));
  return wasm;
}

const align = (n: number, to: number): number => Math.ceil(n / to) * to;

/** First output capacity, and the least one after a small take. */
const MIN_OUTPUT_BYTES = 64 << 10;
/**
 * Output buffers kept for reuse once the sink released them: the batches a source has in
 * flight, and the one filling. A new 5 MB buffer per batch counted toward V8's next full
 * collection (external memory is charged to the old generation's limit): under the sidecar's
 * 128 MB heap cap reuse took those from 48 to 19 over a 240 MB file.
 */
const MAX_SPARE_OUTPUTS = 4;
/** A spare this many times larger than the next take is likely to need is let go (the load fell). */
const SPARE_SLACK = 4;

/** What take() returns: the NDJSON of the entries added since the last take. */
export interface EncodedEntries {
  /** One line per entry (and outcome line and attempt), each ending in `\n`; empty when none was added. */
  ndjson: Buffer;
  /** Entry lines. */
  entries: number;
  /** Entry lines whose outcome was not set before the take: shipped `pending`. */
  pending: number;
  /** The `ts` of the first entry that has one, or null. */
  firstTs: string | null;
}

/** Collects shipped records and writes them as NDJSON (see the module comment). */
export class NdjsonWriter {
  private ops = new Int32Array(1 << 14);
  private opCount = 0;
  private nums = new Float64Array(1 << 12);
  private numCount = 0;
  private text = "";
  /** Output bytes the pending ops make, apart from the strings' contents. */
  private fixedBytes = 0;
  /** UTF-16 units in STR ops (up to WORST_BYTES_PER_UNIT bytes each). */
  private strUnits = 0;
  private entryCount = 0;
  private first: string | null = null;
  /** Encoded and not yet taken: `output[0, outputLength)`. */
  private output: Buffer | undefined;
  private outputLength = 0;
  /** The output capacity to start the next take with: a quarter over the last take's size. */
  private nextCapacity = MIN_OUTPUT_BYTES;
  /** Outputs handed out by take() and not yet given back, and those given back. */
  private readonly issued = new WeakSet<ArrayBufferLike>();
  private readonly spares: Buffer[] = [];
  /** Literal texts by id, their UTF-8 bytes, and the ids of per-source literals by source name. */
  private literals: Buffer[] = FIXED_LITERALS.map((l) => Buffer.from(l));
  /** Their lengths, by id: read for every literal added (a Buffer's length is a getter). */
  private readonly literalBytes: number[] = this.literals.map((l) => l.length);
  private readonly sourceLiterals = new Map<string, number>();
  private lastSource: string | undefined;
  private lastSourceId = -1;
  /**
   * Value literals (see MAX_VALUE_LITERALS) by value, and per field the last value written (its
   * own copy, compared before anything is hashed: in a log these repeat far more often than not)
   * and its literal's id. Cleared at every take, with the source literals.
   */
  private readonly valueLiterals = new Map<string, { id: number; own: string }>();
  private readonly lastValues: (string | undefined)[] = new Array<string | undefined>(VALUE_FIELDS).fill(
    undefined,
  );
  private readonly lastValueIds: number[] = new Array<number>(VALUE_FIELDS).fill(-1);
  /** Nums slots of the MARK ops not yet encoded. */
  private markSlots: number[] = [];
  /**
   * The output offsets of the holes encoded (`holes[0, holeCount)`), and each mark's text number
   * once its outcome is set (0: not set; by mark number: holes, then markSlots). Typed and kept
   * from take to take: a batch holds a hole per entry until it closes, long enough for plain
   * arrays of them (and each copy they grew through) to be promoted to V8's old generation —
   * ~0.5 MB a batch, which made the heap grow by tens of MB between full collections.
   */
  private holes = new Float64Array(1 << 10);
  private holeCount = 0;
  private fills = new Uint16Array(1 << 10);
  /** Units encoded from bytes (ASCII) and from UTF-16, for tests: `[bytes, utf16]`. */
  readonly encodedAs: [number, number] = [0, 0];
  /** Texts of marks whose text has no number (outcomeTextId 0), by mark: rare. */
  private unnumbered: Map<number, Buffer> | undefined;

  /**
   * Adds one audit entry: the line `JSON.stringify(toShippedRecord(entry, record, sourceName,
   * offset, outcome, sqlstate))` once setOutcome(mark) gave them, with `pending` if it did not by
   * the take. Returns the entry's mark.
   */
  addEntry(entry: AuditEntry, record: LogRecord, sourceName: string, offset: number): number {
    this.reserve();
    const ts = isoTimestamp(record.timestamp);
    if (this.first === null) this.first = ts;
    this.lit(L_TS);
    this.str(ts);
    this.lit(L_USER);
    this.value(V_USER, record.user);
    this.lit(L_DATABASE);
    this.value(V_DATABASE, record.database);
    this.lit(L_PID);
    this.int(record.pid);
    this.lit(L_SESSION_ID);
    this.str(record.sessionId);
    this.lit(L_SESSION_LINE);
    this.int(record.sessionLine);
    this.lit(L_APPLICATION_NAME);
    this.value(V_APPLICATION_NAME, record.applicationName);
    this.lit(L_REMOTE_HOST);
    this.value(V_REMOTE_HOST, record.remoteHost);
    this.lit(L_AUDIT_TYPE);
    this.value(V_AUDIT_TYPE, entry.auditType);
    this.lit(L_STATEMENT_ID);
    this.int(entry.statementId);
    this.lit(L_SUBSTATEMENT_ID);
    this.int(entry.substatementId);
    this.lit(L_CLASS);
    this.str(entry.class);
    this.lit(L_COMMAND);
    this.str(entry.command);
    this.lit(L_OBJECT_TYPE);
    this.str(entry.objectType);
    this.lit(L_OBJECT_NAME);
    this.str(entry.objectName);
    this.lit(L_STATEMENT);
    this.str(entry.statement);
    this.lit(L_PARAMETER);
    this.parameter(entry.parameter);
    this.lit(L_ROWS);
    this.int(entry.rows);
    const mark = this.mark();
    this.lit(this.sourceLiteral(sourceName));
    this.int(offset);
    this.lit(record.invalidUtf8 ? L_END_INVALID_UTF8 : L_END);
    this.entryDone();
    return mark;
  }

  /**
   * Adds a record built elsewhere (redacted, from tests): the line `JSON.stringify(record)` of a
   * record in the shipped-record key order. With `hole`, its outcome is left to setOutcome (as
   * addEntry does) and the mark returned; otherwise the record's own is written and -1 returned.
   */
  addRecord(r: ShippedRecord, hole = false): number {
    this.reserve();
    if (this.first === null) this.first = r.ts;
    this.lit(L_TS);
    this.str(r.ts);
    this.lit(L_USER);
    this.str(r.user);
    this.lit(L_DATABASE);
    this.str(r.database);
    this.lit(L_PID);
    this.int(r.pid);
    this.lit(L_SESSION_ID);
    this.str(r.session_id);
    this.lit(L_SESSION_LINE);
    this.int(r.session_line);
    this.lit(L_APPLICATION_NAME);
    this.str(r.application_name);
    this.lit(L_REMOTE_HOST);
    this.str(r.remote_host);
    this.audit(r.audit_type, r.statement_id, r.substatement_id, r.class, r.command);
    this.lit(L_OBJECT_TYPE);
    this.str(r.object_type);
    this.lit(L_OBJECT_NAME);
    this.str(r.object_name);
    this.lit(L_STATEMENT);
    this.str(r.statement);
    this.lit(L_PARAMETER);
    this.parameter(r.parameter);
    this.lit(L_ROWS);
    this.int(r.rows);
    let mark = -1;
    if (hole) mark = this.mark();
    else {
      this.lit(L_OUTCOME);
      this.str(r.outcome);
      this.lit(L_SQLSTATE);
      this.str(r.sqlstate);
    }
    this.lit(this.sourceLiteral(r.source.file));
    this.int(r.source.offset);
    if (r.redacted === undefined) {
      this.lit(r.invalid_utf8 ? L_END_INVALID_UTF8 : L_END);
    } else {
      this.lit(r.invalid_utf8 ? L_INVALID_UTF8_REDACTED : L_REDACTED);
      this.parameter(r.redacted);
      this.lit(L_END_REDACTED);
    }
    this.entryDone();
    return mark;
  }

  /** Sets the outcome of the entry with `mark` (from addEntry, or addRecord with a hole) before the take. */
  setOutcome(mark: number, outcome: ShippedOutcome, sqlstate: string | null): void {
    const id = outcomeTextId(outcome, sqlstate);
    this.fills[mark] = id;
    if (id === 0) {
      this.unnumbered ??= new Map();
      this.unnumbered.set(mark, outcomeTextOf(outcome, sqlstate));
    }
  }

  /** Adds the line `JSON.stringify(line)` of an outcome line (ShippedOutcomeLine key order). */
  addOutcomeLine(line: ShippedOutcomeLine): void {
    this.reserve();
    if (this.first === null) this.first = line.ts;
    this.lit(L_OUTCOME_LINE);
    this.str(line.ts);
    this.lit(L_SESSION_ID);
    this.str(line.session_id);
    this.lit(L_SESSION_LINE);
    this.int(line.session_line);
    this.lit(this.sourceLiteral(line.source.file));
    this.int(line.source.offset);
    this.lit(L_SOURCE_THEN_OUTCOME);
    this.str(line.outcome);
    this.lit(L_SQLSTATE);
    this.str(line.sqlstate);
    this.lit(L_LINE_END);
    this.lineDone();
  }

  /** Adds the line `JSON.stringify(attempt)` (ShippedAttempt key order). */
  addAttempt(a: ShippedAttempt): void {
    this.reserve();
    if (this.first === null) this.first = a.ts;
    this.lit(L_ATTEMPT_LINE);
    this.str(a.ts);
    this.lit(L_USER);
    this.str(a.user);
    this.lit(L_DATABASE);
    this.str(a.database);
    this.lit(L_PID);
    this.int(a.pid);
    this.lit(L_SESSION_ID);
    this.str(a.session_id);
    this.lit(L_SESSION_LINE);
    this.int(a.session_line);
    this.lit(L_APPLICATION_NAME);
    this.str(a.application_name);
    this.lit(L_REMOTE_HOST);
    this.str(a.remote_host);
    this.lit(L_SEVERITY);
    this.str(a.severity);
    this.lit(L_SQLSTATE);
    this.str(a.sqlstate);
    this.lit(L_MESSAGE);
    this.str(a.message);
    this.lit(L_STATEMENT);
    this.str(a.statement);
    this.lit(this.sourceLiteral(a.source.file));
    this.int(a.source.offset);
    if (a.redacted === undefined) this.lit(a.invalid_utf8 ? L_END_INVALID_UTF8 : L_END);
    else {
      this.lit(a.invalid_utf8 ? L_INVALID_UTF8_REDACTED : L_REDACTED);
      this.parameter(a.redacted);
      this.lit(L_END_REDACTED);
    }
    this.lineDone();
  }

  /** Entries added since the last take. */
  get entries(): number {
    return this.entryCount;
  }

  /** Marks given since the last take (entries whose outcome may be set). */
  get marks(): number {
    return this.holeCount + this.markSlots.length;
  }

  /** The `ts` of the first entry since the last take that has one, or null. */
  get firstTs(): string | null {
    return this.first;
  }

  /**
   * Encodes what was added since the last flush into the output. Callers that add entries over
   * a long time (a batch filling) flush often, so the strings they added die young.
   */
  flush(): void {
    if (this.opCount > 0) this.encode();
  }

  /** Everything added since the last take, encoded; the writer starts afresh. */
  take(): EncodedEntries {
    this.flush();
    const pending = this.fillHoles();
    const ndjson = this.output ? this.output.subarray(0, this.outputLength) : Buffer.alloc(0);
    if (this.output) this.issued.add(this.output.buffer);
    const taken = { ndjson, entries: this.entryCount, pending, firstTs: this.first };
    this.nextCapacity = Math.max(MIN_OUTPUT_BYTES, Math.ceil(this.outputLength * 1.25));
    this.output = undefined;
    this.outputLength = 0;
    this.entryCount = 0;
    this.first = null;
    if (this.sourceLiterals.size > MAX_SOURCE_LITERALS || this.valueLiterals.size > 0) {
      this.literals.length = FIXED_LITERALS.length;
      this.literalBytes.length = FIXED_LITERALS.length;
      this.sourceLiterals.clear();
      this.lastSource = undefined;
      this.valueLiterals.clear();
      this.lastValues.fill(undefined);
      this.lastValueIds.fill(-1);
    }
    return taken;
  }

  /**
   * Gives back the memory of an `ndjson` this writer's take() returned, once nothing reads it any
   * more (the sink compressed or stored it): a later take may fill it. Anything else is ignored.
   */
  recycle(ndjson: Buffer): void {
    const memory = ndjson.buffer;
    if (!this.issued.has(memory)) return;
    this.issued.delete(memory);
    const spare = Buffer.from(memory);
    if (this.spares.length < MAX_SPARE_OUTPUTS && spare.length <= SPARE_SLACK * this.nextCapacity)
      this.spares.push(spare);
  }

  private audit(
    auditType: string,
    statementId: number,
    substatementId: number,
    klass: string,
    command: string,
  ): void {
    this.lit(L_AUDIT_TYPE);
    this.str(auditType);
    this.lit(L_STATEMENT_ID);
    this.int(statementId);
    this.lit(L_SUBSTATEMENT_ID);
    this.int(substatementId);
    this.lit(L_CLASS);
    this.str(klass);
    this.lit(L_COMMAND);
    this.str(command);
  }

  private reserve(): void {
    if (this.opCount + OPS_PER_ENTRY > this.ops.length) this.growOps(OPS_PER_ENTRY);
    if (this.numCount + 8 > this.nums.length) {
      const nums = new Float64Array(this.nums.length * 2);
      nums.set(this.nums.subarray(0, this.numCount));
      this.nums = nums;
    }
  }

  private growOps(more: number): void {
    const ops = new Int32Array(Math.max(this.ops.length * 2, this.opCount + more));
    ops.set(this.ops.subarray(0, this.opCount));
    this.ops = ops;
  }

  private entryDone(): void {
    this.entryCount++;
    if (this.text.length >= FLUSH_UNITS) this.encode();
  }

  /** An outcome line or attempt was added (not an entry). */
  private lineDone(): void {
    if (this.text.length >= FLUSH_UNITS) this.encode();
  }

  /** A hole for an outcome; returns its mark. */
  private mark(): number {
    this.ops[this.opCount++] = MARK | (OUTCOME_HOLE << 3);
    this.markSlots.push(this.numCount++);
    this.fixedBytes += OUTCOME_HOLE;
    const mark = this.holeCount + this.markSlots.length - 1;
    if (mark >= this.fills.length) {
      const fills = new Uint16Array(this.fills.length * 2);
      fills.set(this.fills);
      this.fills = fills;
    }
    return mark;
  }

  /**
   * Writes each hole's outcome (`pending` where none was set) and closes the gaps the shorter
   * ones leave, in place, front to back: every text fits its hole, so nothing is overwritten
   * before it is moved. Returns how many were left pending.
   */
  private fillHoles(): number {
    const count = this.holeCount;
    if (count === 0) return 0;
    const holes = this.holes;
    const fills = this.fills;
    const out = this.output!;
    const end = this.outputLength;
    const fallback = textsById[outcomeTextId("pending", null)]!;
    let pending = 0;
    let write = holes[0]!;
    for (let i = 0; i < count; i++) {
      const id = fills[i]!;
      let text: Buffer;
      if (id !== 0) text = textsById[id]!;
      else {
        const own = this.unnumbered?.get(i);
        if (own === undefined) pending++;
        text = own ?? fallback;
      }
      write += text.copy(out, write);
      const from = holes[i]! + OUTCOME_HOLE;
      const to = i + 1 < count ? holes[i + 1]! : end;
      if (write !== from) out.copyWithin(write, from, to);
      write += to - from;
    }
    this.outputLength = write;
    this.holeCount = 0;
    fills.fill(0, 0, count);
    this.unnumbered = undefined;
    return pending;
  }

  private lit(id: number): void {
    this.ops[this.opCount++] = LIT | (id << 3);
    this.fixedBytes += this.literalBytes[id]!;
  }

  private str(s: string | null): void {
    if (s === null) {
      this.ops[this.opCount++] = NULL;
      this.fixedBytes += 4;
      return;
    }
    const n = s.length;
    this.ops[this.opCount++] = STR | (n << 3);
    this.fixedBytes += 2;
    if (n > 0) {
      this.text += s;
      this.strUnits += n;
    }
  }

  /**
   * A field's value as str() writes it, as a literal when it is the field's last value or has one
   * (see valueLiterals); JSON.stringify's text of the value, so the bytes are str()'s.
   */
  private value(field: number, s: string | null): void {
    if (s === null || s.length > MAX_VALUE_LITERAL_UNITS) {
      this.str(s);
      return;
    }
    if (s === this.lastValues[field]) {
      this.lit(this.lastValueIds[field]!);
      return;
    }
    let known = this.valueLiterals.get(s);
    if (known === undefined) {
      if (this.valueLiterals.size >= MAX_VALUE_LITERALS) {
        this.str(s);
        return;
      }
      // Its own copy: the value may be a view of the parser's whole chunk.
      const own = detached(s);
      const literal = Buffer.from(JSON.stringify(own));
      known = { id: this.literals.length, own };
      this.literals.push(literal);
      this.literalBytes.push(literal.length);
      this.valueLiterals.set(own, known);
    }
    this.lastValues[field] = known.own;
    this.lastValueIds[field] = known.id;
    this.lit(known.id);
  }

  private int(x: number | null): void {
    if (x === null) {
      this.ops[this.opCount++] = NULL;
      this.fixedBytes += 4;
    } else if (Number.isSafeInteger(x) && x >= 0) {
      this.ops[this.opCount++] = NUM;
      this.nums[this.numCount++] = x;
      this.fixedBytes += 16;
    } else {
      // What JSON.stringify prints for the rest: -1, 1.5, 1e+21, null for NaN and Infinity.
      const raw = JSON.stringify(x);
      this.ops[this.opCount++] = RAW | (raw.length << 3);
      this.text += raw;
      this.fixedBytes += raw.length;
    }
  }

  private parameter(p: string | readonly (string | null)[]): void {
    if (typeof p === "string") {
      this.str(p);
      return;
    }
    if (this.opCount + 2 * p.length + OPS_PER_ENTRY > this.ops.length)
      this.growOps(2 * p.length + OPS_PER_ENTRY);
    this.lit(L_OPEN);
    for (let i = 0; i < p.length; i++) {
      if (i > 0) this.lit(L_COMMA);
      this.str(p[i] ?? null);
    }
    this.lit(L_CLOSE);
  }

  /** The literal `,"source":{"file":<name>,"offset":` for a source. */
  private sourceLiteral(name: string): number {
    if (name === this.lastSource) return this.lastSourceId;
    let id = this.sourceLiterals.get(name);
    if (id === undefined) {
      id = this.literals.length;
      const literal = Buffer.from(`,"source":{"file":${JSON.stringify(name)},"offset":`);
      this.literals.push(literal);
      this.literalBytes.push(literal.length);
      this.sourceLiterals.set(name, id);
    }
    this.lastSource = name;
    this.lastSourceId = id;
    return id;
  }

  /** Encodes the pending ops onto the output. */
  private encode(): void {
    const units = this.text.length;
    // Memory: literals, their table, ops, nums, text, then the output, which runs to the end of
    // memory: sized for ASCII first, and if the module writes past the end, again for the worst.
    let litBytes = 0;
    for (const l of this.literals) litBytes += l.length;
    const litAt = RESERVED;
    const tableAt = align(litAt + litBytes, 8);
    const opsAt = tableAt + 8 * this.literals.length;
    const numsAt = align(opsAt + 4 * this.opCount, 8);
    const textAt = align(numsAt + 8 * this.numCount, 16);
    // Room for the UTF-16 units, and at least 4 bytes more than one byte a unit: a UTF-8 write
    // that stops short (a character that does not fit, at most 4 bytes) has then still written
    // more bytes than there are units, so it cannot pass for ASCII.
    const outAt = align(textAt + Math.max(2 * units, units + 4), 16);
    const likely = this.fixedBytes + this.strUnits + (this.strUnits >> 2) + 64 + OVERRUN_BYTES;
    try {
      this.encodeAt(litAt, tableAt, opsAt, numsAt, textAt, outAt, likely);
    } catch (error) {
      if (!(error instanceof WebAssembly.RuntimeError)) throw error;
      this.encodeAt(
        litAt,
        tableAt,
        opsAt,
        numsAt,
        textAt,
        outAt,
        this.fixedBytes + WORST_BYTES_PER_UNIT * this.strUnits + OVERRUN_BYTES,
      );
    }
    this.opCount = 0;
    this.numCount = 0;
    this.text = "";
    this.fixedBytes = 0;
    this.strUnits = 0;
  }

  private encodeAt(
    litAt: number,
    tableAt: number,
    opsAt: number,
    numsAt: number,
    textAt: number,
    outAt: number,
    outBytes: number,
  ): void {
    const w = memoryOf(outAt + outBytes);
    const buffer = w.memory.buffer;
    const bytes = Buffer.from(buffer);
    const table = new Int32Array(buffer, tableAt, 2 * this.literals.length);
    let at = litAt;
    for (const [i, l] of this.literals.entries()) {
      bytes.set(l, at);
      table[2 * i] = at;
      table[2 * i + 1] = l.length;
      at += l.length;
    }
    new Int32Array(buffer, opsAt, this.opCount).set(this.ops.subarray(0, this.opCount));
    new Float64Array(buffer, numsAt, this.numCount).set(this.nums.subarray(0, this.numCount));
    const units = this.text.length;
    let wide: 0 | 1 = 0;
    if (units > 0 && bytes.write(this.text, textAt, outAt - textAt, "utf8") !== units) {
      bytes.write(this.text, textAt, 2 * units, "utf16le");
      wide = 1;
    }
    this.encodedAs[wide] += units;
    const end = w.encode(opsAt, this.opCount, textAt, numsAt, tableAt, outAt, wide);
    if (this.markSlots.length > 0) {
      // Each MARK wrote the address of its hole into its nums slot.
      const nums = new Float64Array(buffer, numsAt, this.numCount);
      const need = this.holeCount + this.markSlots.length;
      if (need > this.holes.length) {
        const holes = new Float64Array(Math.max(need, this.holes.length * 2));
        holes.set(this.holes.subarray(0, this.holeCount));
        this.holes = holes;
      }
      for (const slot of this.markSlots)
        this.holes[this.holeCount++] = this.outputLength + (nums[slot]! - outAt);
      this.markSlots = [];
    }
    this.append(bytes.subarray(outAt, end));
  }

  private append(encoded: Uint8Array): void {
    const need = this.outputLength + encoded.length;
    if (!this.output || need > this.output.length) {
      const output =
        this.spare(need) ??
        Buffer.allocUnsafeSlow(Math.max(need, this.output ? this.output.length * 2 : this.nextCapacity));
      if (this.output) output.set(this.output.subarray(0, this.outputLength));
      this.output = output;
    }
    this.output.set(encoded, this.outputLength);
    this.outputLength = need;
  }

  /** The largest spare output (the likeliest to hold the whole take) if it holds `bytes`, taken off the list. */
  private spare(bytes: number): Buffer | undefined {
    let best = -1;
    for (let i = 0; i < this.spares.length; i++) {
      const length = this.spares[i]!.length;
      if (length >= bytes && (best < 0 || length > this.spares[best]!.length)) best = i;
    }
    return best < 0 ? undefined : this.spares.splice(best, 1)[0];
  }
}
