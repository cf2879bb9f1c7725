import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { assemble, wasmModules } from "../../../scripts/assemble-wasm.mjs";
import {
  CsvFieldScanner,
  FIELD_ESCAPED,
  FIELD_QUOTED,
  FIELD_UNQUOTED,
  SCAN_BAD_QUOTE,
  SCAN_INCOMPLETE,
  SCAN_INCOMPLETE_QUOTED,
} from "../src/_csv-fields.ts";

/** [start, end, kind] of each field of the record scan() just read. */
function fieldsOf(s: CsvFieldScanner): [number, number, number][] {
  return Array.from({ length: Math.min(s.count, 27) }, (_, i) => [s.starts[i]!, s.ends[i]!, s.kinds[i]!]);
}

describe("CsvFieldScanner (wasm/csv-fields.wat)", () => {
  test("the committed module is what the .wat assembles to", async () => {
    const modules = wasmModules("parse") as { wat: string; ts: string; constName: string }[];
    expect(modules.length).toBeGreaterThan(0);
    for (const m of modules) expect(readFileSync(m.ts, "utf8")).toBe(await assemble(m.wat, m.constName));
  });

  test("splits quoted, escaped, empty and CRLF-terminated fields", () => {
    const s = new CsvFieldScanner();
    const input = Buffer.from('a,"b,c","d""e",,x\r\nnext');
    s.load(input);
    expect(s.scan(0, input.length)).toBe(19);
    expect(s.count).toBe(5);
    expect(fieldsOf(s)).toEqual([
      [0, 1, FIELD_UNQUOTED],
      [3, 6, FIELD_QUOTED],
      [9, 13, FIELD_ESCAPED],
      [15, 15, FIELD_UNQUOTED],
      [16, 17, FIELD_UNQUOTED],
    ]);
  });

  test("says why a record cannot be read yet, or at all (hand-made inputs)", () => {
    const s = new CsvFieldScanner();
    const cases: [string, number][] = [
      ["a,b", SCAN_INCOMPLETE],
      ['a,"b', SCAN_INCOMPLETE_QUOTED],
      ['a,"b"', SCAN_INCOMPLETE],
      ['a,b"c\n', SCAN_BAD_QUOTE],
      ['a,"b"c\n', SCAN_BAD_QUOTE],
    ];
    for (const [text, expected] of cases) {
      const input = Buffer.from(text);
      s.load(input);
      expect(s.scan(0, input.length), text).toBe(expected);
    }
  });

  test("finds a quote at every position of the 16-byte search, and past it", () => {
    const s = new CsvFieldScanner();
    for (let n = 0; n < 40; n++) {
      const input = Buffer.from(`"${"x".repeat(n)}",y\n`);
      s.load(input);
      expect(s.scan(0, input.length)).toBe(input.length);
      expect(fieldsOf(s)[0]).toEqual([1, 1 + n, FIELD_QUOTED]);
      // Bytes after the input's end (left from a longer load) are never read as input.
      const cut = input.subarray(0, 1 + n);
      s.load(cut);
      expect(s.scan(0, cut.length)).toBe(SCAN_INCOMPLETE_QUOTED);
    }
  });

  test("grows for a large input and gives the memory back after it", () => {
    const s = new CsvFieldScanner();
    const big = Buffer.from(`"${"y".repeat(5 * 1024 * 1024)}",z\n`);
    const initial = s.memoryBytes;
    s.load(big);
    expect(s.memoryBytes).toBeGreaterThan(big.length);
    expect(s.scan(0, big.length)).toBe(big.length);
    expect(fieldsOf(s)[1]).toEqual([big.length - 2, big.length - 1, FIELD_UNQUOTED]);
    const small = Buffer.from("p,q\n");
    s.load(small);
    expect(s.memoryBytes).toBe(initial);
    expect(s.scan(0, small.length)).toBe(4);
    expect(fieldsOf(s)).toEqual([
      [0, 1, FIELD_UNQUOTED],
      [2, 3, FIELD_UNQUOTED],
    ]);
  });

  test("counts fields beyond the table without storing them", () => {
    const s = new CsvFieldScanner();
    const input = Buffer.from(`${Array.from({ length: 30 }, (_, i) => i).join(",")}\n`);
    s.load(input);
    expect(s.scan(0, input.length)).toBe(input.length);
    expect(s.count).toBe(30);
    expect(fieldsOf(s)).toHaveLength(27);
  });
});
