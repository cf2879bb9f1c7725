/**
 * The csvlog field splitter (wasm/csv-fields.wat), wrapped: load the input once per parse call,
 * then scan record by record and read each record's field boundaries from the table it fills.
 * One instance per parser, so parsers never share a field table.
 */
import { CSV_FIELDS_WASM } from "./_csv-fields-wasm.ts";

/** Field positions the table keeps; a record with more is counted, not stored (it is malformed). */
export const MAX_TABLE_FIELDS = 27;
/** scan(): the input ended before the record did. */
export const SCAN_INCOMPLETE = -1;
/** scan(): the input ended inside a quoted field. */
export const SCAN_INCOMPLETE_QUOTED = -2;
/** scan(): a quote where csvlog has none (inside an unquoted field, or after a closing quote). */
export const SCAN_BAD_QUOTE = -3;
/** Field kinds in the table. */
export const FIELD_UNQUOTED = 0;
export const FIELD_QUOTED = 1;
/** Quoted, with doubled quotes inside. */
export const FIELD_ESCAPED = 2;

/** Where the module's memory layout puts things (see the .wat). */
const TABLE_WORDS = 82;
const DATA = 1024;
const PAGE = 65536;
/** Memory above this is given back when a smaller input comes (an oversized record has passed). */
const KEEP_BYTES = 4 * 1024 * 1024;

/**
 * The little of the WebAssembly JS API used here: the project compiles against ES2023 without DOM
 * types, which is where TypeScript declares it. Node has the global.
 */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface ScannerExports {
  memory: WasmMemory;
  scan(pos: number, len: number): number;
}
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
};

let compiled: object | undefined;

export class CsvFieldScanner {
  /** Field i spans [starts[i], ends[i]) of the loaded input; kinds[i] is a FIELD_* kind. */
  starts!: Int32Array;
  ends!: Int32Array;
  kinds!: Int32Array;
  private table!: Int32Array;
  private bytes!: Uint8Array;
  private exports!: ScannerExports;
  /**
   * The instance's scan, held here: each instance's exports object has a map of its own, so a
   * call through it made the parser's compiled code fail its map check on every new scanner
   * (parallel `analyze` makes one per range). Memory grows in place, so a scanner keeps its instance.
   */
  private scanRecord!: (pos: number, len: number) => number;

  constructor() {
    this.instantiate(2 * PAGE);
  }

  /** Copies `input` into the scanner's memory; scan() positions index into it. */
  load(input: Uint8Array): void {
    const need = DATA + input.length;
    if (this.bytes.length > KEEP_BYTES && need <= KEEP_BYTES) this.instantiate(need);
    else if (need > this.bytes.length) this.grow(need);
    this.bytes.set(input, DATA);
  }

  /** Reads the record at `pos` of the first `len` loaded bytes: see the SCAN_* results. */
  scan(pos: number, len: number): number {
    return this.scanRecord(pos, len);
  }

  /** Bytes of memory the scanner holds. */
  get memoryBytes(): number {
    return this.bytes.length;
  }

  /** Fields in the record scan() last completed (may exceed MAX_TABLE_FIELDS). */
  get count(): number {
    return this.table[TABLE_WORDS - 1]!;
  }

  private instantiate(minBytes: number): void {
    compiled ??= new WebAssembly.Module(Buffer.from(CSV_FIELDS_WASM, "base64"));
    const instance = new WebAssembly.Instance(compiled, {});
    this.exports = instance.exports as unknown as ScannerExports;
    this.scanRecord = this.exports.scan;
    this.grow(minBytes);
  }

  /** At least `minBytes` of memory, the views made again over it (growing detaches the old buffer). */
  private grow(minBytes: number): void {
    const memory = this.exports.memory;
    const have = memory.buffer.byteLength;
    if (minBytes > have) memory.grow(Math.ceil((minBytes - have) / PAGE));
    const buffer = memory.buffer;
    this.bytes = new Uint8Array(buffer);
    this.table = new Int32Array(buffer, 0, TABLE_WORDS);
    this.starts = this.table.subarray(0, MAX_TABLE_FIELDS);
    this.ends = this.table.subarray(MAX_TABLE_FIELDS, 2 * MAX_TABLE_FIELDS);
    this.kinds = this.table.subarray(2 * MAX_TABLE_FIELDS, 3 * MAX_TABLE_FIELDS);
  }
}
