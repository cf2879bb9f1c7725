/**
 * NdjsonWriter (the WebAssembly encoder behind every shipped object) against JSON.stringify, line
 * for line, wherever flushes and takes fall; plus what only the writer has: its committed module,
 * output that outgrows the first memory estimate, encodes in parts, reused output memory. Random
 * records are in encode.test.ts, which runs through the same writer.
 */
import { readFileSync } from "node:fs";
import { NdjsonWriter, redactRecord, type ShippedRecord, toShippedRecord } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { assemble, wasmModules } from "../../../scripts/assemble-wasm.mjs";
import { fixtureAuditEntries } from "./_fixture-entries.ts";
import { record as sinkRecord } from "./_sink-suite.ts";

const lines = (records: ShippedRecord[]): string => records.map((r) => `${JSON.stringify(r)}\n`).join("");

/** A record with the given statement, source file and offset (an array PARAMETER with a NULL in it). */
function record(statement: string, file = "/var/log/postgresql/postgresql.csv", offset = 0): ShippedRecord {
  return { ...sinkRecord(1, undefined, statement), parameter: ["a", null, "c"], source: { file, offset } };
}

describe("NdjsonWriter", () => {
  it("is what wasm/ndjson.wat assembles to", async () => {
    const modules = wasmModules("ship") as { wat: string; ts: string; constName: string }[];
    expect(modules.map((m) => m.constName)).toEqual(["NDJSON_WASM"]);
    for (const m of modules) expect(readFileSync(m.ts, "utf8")).toBe(await assemble(m.wat, m.constName));
  });

  it("writes each fixture entry as JSON.stringify(toShippedRecord(...)), however flushes and takes fall", () => {
    const all = fixtureAuditEntries();
    expect(all.length).toBeGreaterThan(1000);
    const expected = lines(
      all.map(({ entry, record, source }) => toShippedRecord(entry, record, source, record.offset)),
    );
    for (const [flushEvery, takeEvery] of [
      [1, 1],
      [7, 50],
      [1000, 333],
      [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY],
    ] as const) {
      const writer = new NdjsonWriter();
      const taken: Buffer[] = [];
      let entries = 0;
      for (const [i, { entry, record, source }] of all.entries()) {
        writer.addEntry(entry, record, source, record.offset);
        if ((i + 1) % flushEvery === 0) writer.flush();
        if ((i + 1) % takeEvery === 0) {
          const t = writer.take();
          entries += t.entries;
          taken.push(Buffer.from(t.ndjson)); // a copy: recycled memory is not used here, but be safe
        }
      }
      const last = writer.take();
      entries += last.entries;
      taken.push(last.ndjson);
      expect(entries).toBe(all.length);
      expect(Buffer.concat(taken).toString("utf8")).toBe(expected);
      // One entry a flush: the ASCII ones went in as bytes, those with other characters as UTF-16.
      if (flushEvery === 1) expect(writer.encodedAs.map((units) => units > 0)).toEqual([true, true]);
    }
  });

  it("writes every ASCII character and every kind of other one alike as bytes and as UTF-16", () => {
    const ascii = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join("");
    const statements = [
      ascii,
      ascii.repeat(3).slice(5), // the 16-byte steps fall elsewhere
      `${"x".repeat(31)}"${"y".repeat(15)}\\`,
      `é${ascii}`,
      "\u00ff\u0100\u07ff\u0800\uffff😀",
      "lone \ud800 and \udfff surrogates, a pair split \ud83d",
      "",
    ];
    for (const together of [false, true]) {
      const records = statements.map((s, i) => record(s, `/log/${i}.csv`, i));
      const writer = new NdjsonWriter();
      for (const r of records) {
        writer.addRecord(r);
        if (!together) writer.flush();
      }
      expect(writer.take().ndjson.toString("utf8")).toBe(lines(records));
      // Flushed one by one, the ASCII statements (and the empty one) go as bytes; together, as UTF-16.
      expect(writer.encodedAs.map((units) => units > 0)).toEqual(together ? [false, true] : [true, true]);
    }
  });

  it("writes the invalid_utf8 flag of a record that was not UTF-8, with and without redaction", () => {
    const { entry, record: logged, source } = fixtureAuditEntries()[0]!;
    const flagged = { ...logged, invalidUtf8: true as const };
    const shipped = toShippedRecord(entry, flagged, source, 7);
    expect(shipped.invalid_utf8).toBe(true);
    const redacted = redactRecord(shipped, { literals: true, parameters: false });
    const writer = new NdjsonWriter();
    writer.addEntry(entry, flagged, source, 7);
    writer.addRecord(shipped);
    writer.addRecord(redacted);
    writer.addEntry(entry, logged, source, 7);
    const text = writer.take().ndjson.toString("utf8");
    expect(text).toBe(lines([shipped, shipped, redacted, toShippedRecord(entry, logged, source, 7)]));
    expect(text.split("\n").map((l) => l.includes('"invalid_utf8":true'))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  it("writes the fields it keeps as literals (user, database, application, host, audit type) as JSON.stringify would, whatever their values", () => {
    const ascii = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join("");
    const values = [
      "postgres",
      "",
      ascii,
      'quo"te\\',
      "é\u00ff\u0100\u07ff\u0800\uffff😀",
      "lone \ud800 and \udfff",
      "x".repeat(64),
      "y".repeat(65),
      ...Array.from({ length: 80 }, (_, i) => `role_${i}`), // more values than the writer keeps as literals
    ];
    const base = fixtureAuditEntries()[0]!;
    const all = Array.from({ length: 600 }, (_, i) => {
      const pick = (k: number): string => values[(i * k + (i >> 3)) % values.length]!;
      // Runs of repeats (the usual case) and changes at every entry.
      const v = (k: number): string => (i % 5 < 3 ? values[(i >> 4) % 8]! : pick(k));
      return {
        entry: { ...base.entry, auditType: v(3) },
        record: {
          ...base.record,
          user: i % 97 === 0 ? null : v(1),
          database: v(2),
          applicationName: i % 89 === 0 ? null : v(5),
          remoteHost: v(7),
        },
        source: base.source,
      };
    });
    const expected = lines(
      all.map(({ entry, record, source }, i) => toShippedRecord(entry, record, source, i)),
    );
    for (const [flushEvery, takeEvery] of [
      [1, 1],
      [3, 40],
      [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY],
    ] as const) {
      const writer = new NdjsonWriter();
      const taken: Buffer[] = [];
      for (const [i, { entry, record, source }] of all.entries()) {
        writer.addEntry(entry, record, source, i);
        if ((i + 1) % flushEvery === 0) writer.flush();
        if ((i + 1) % takeEvery === 0) taken.push(Buffer.from(writer.take().ndjson));
      }
      taken.push(writer.take().ndjson);
      expect(Buffer.concat(taken).toString("utf8")).toBe(expected);
    }
  });

  it("counts entries and keeps the first ts that is not null, per take", () => {
    const writer = new NdjsonWriter();
    expect(writer.take()).toEqual({ ndjson: Buffer.alloc(0), entries: 0, pending: 0, firstTs: null });
    writer.addRecord({ ...record("SELECT 1"), ts: null });
    writer.addRecord({ ...record("SELECT 2"), ts: "2026-01-02T03:04:05.006Z" });
    writer.addRecord({ ...record("SELECT 3"), ts: "2026-01-02T03:04:06.000Z" });
    expect(writer.entries).toBe(3);
    const t = writer.take();
    expect([t.entries, t.firstTs]).toEqual([3, "2026-01-02T03:04:05.006Z"]);
    expect(writer.entries).toBe(0);
    expect(writer.firstTs).toBeNull();
  });

  it("fills each entry's outcome when it is set before the take, and `pending` otherwise, however flushes fall", () => {
    const all = fixtureAuditEntries().slice(0, 400);
    const decisions = [
      ["succeeded", null],
      ["failed", "23505"],
      ["rolled_back", null],
      ["unknown", null],
      ["failed", null],
      ["pending", null],
    ] as const;
    const expected = lines(
      all.map(({ entry, record, source }, i) =>
        toShippedRecord(
          entry,
          record,
          source,
          record.offset,
          ...(decisions[i % decisions.length]! as readonly [ShippedRecord["outcome"], string | null]),
        ),
      ),
    );
    for (const flushEvery of [1, 3, 50, Number.POSITIVE_INFINITY]) {
      const writer = new NdjsonWriter();
      const marks: number[] = [];
      for (const [i, { entry, record, source }] of all.entries()) {
        marks.push(writer.addEntry(entry, record, source, record.offset));
        if ((i + 1) % flushEvery === 0) writer.flush();
        // Decided a few entries later, as the log settles them: before or after their flush.
        if (i >= 2) {
          const [outcome, sqlstate] = decisions[(i - 2) % decisions.length]!;
          if (outcome !== "pending") writer.setOutcome(marks[i - 2]!, outcome, sqlstate);
        }
      }
      for (const i of [all.length - 2, all.length - 1]) {
        const [outcome, sqlstate] = decisions[i % decisions.length]!;
        if (outcome !== "pending") writer.setOutcome(marks[i]!, outcome, sqlstate);
      }
      const taken = writer.take();
      expect(taken.ndjson.toString("utf8")).toBe(expected);
      expect(taken.pending).toBe(all.filter((_, i) => i % decisions.length === 5).length);
    }
  });

  it("writes outcome lines and attempts as JSON.stringify would, between entries", () => {
    const writer = new NdjsonWriter();
    const outcomeLine = {
      record: "outcome",
      ts: "2026-01-02T03:04:05.006Z",
      session_id: "6b098e1f.3d77",
      session_line: 12,
      source: { file: "/log/postgresql.csv", offset: 4096 },
      outcome: "rolled_back",
      sqlstate: null,
    } as const;
    const attempt = {
      record: "attempt",
      ts: null,
      user: "mallory",
      database: "postgres",
      pid: 4242,
      session_id: null,
      session_line: null,
      application_name: "psql",
      remote_host: "127.0.0.1:5000",
      severity: "ERROR",
      sqlstate: "42501",
      message: 'permission denied for table "salaries"',
      statement: "SELECT * FROM salaries",
      source: { file: "/log/postgresql.log", offset: 77 },
    } as const;
    const entry = record("SELECT 1");
    writer.addOutcomeLine(outcomeLine);
    writer.addRecord(entry);
    writer.addAttempt(attempt);
    writer.addAttempt({ ...attempt, invalid_utf8: true, redacted: ["statement", "message"] });
    const taken = writer.take();
    expect(taken.ndjson.toString("utf8")).toBe(
      [outcomeLine, entry, attempt, { ...attempt, invalid_utf8: true, redacted: ["statement", "message"] }]
        .map((l) => `${JSON.stringify(l)}\n`)
        .join(""),
    );
    expect([taken.entries, taken.firstTs]).toEqual([1, "2026-01-02T03:04:05.006Z"]);
  });

  it("writes output past its first memory estimate: every character escaped as \\u00xx", () => {
    // 200k control characters: 6 bytes each out, against ~1.25 the estimate assumes.
    const records = [record("\u0001".repeat(200_000)), record('\u001f\u0000"'.repeat(50_000))];
    const writer = new NdjsonWriter();
    for (const r of records) writer.addRecord(r);
    expect(writer.take().ndjson.toString("utf8")).toBe(lines(records));
  });

  it("encodes a large take in parts (more than a million characters pending)", () => {
    const records = Array.from({ length: 5 }, (_, i) => record(`SELECT '${"é".repeat(400_000)}${i}'`));
    const writer = new NdjsonWriter();
    for (const r of records) writer.addRecord(r);
    expect(writer.take().ndjson.toString("utf8")).toBe(lines(records));
  });

  it("reuses an acknowledged output's memory, and ignores memory it did not hand out", () => {
    const writer = new NdjsonWriter();
    const batch = Array.from({ length: 500 }, (_, i) => record(`SELECT ${i}`, "/log/a.csv", i * 100));
    for (const r of batch) writer.addRecord(r);
    const first = writer.take().ndjson;
    expect(first.toString("utf8")).toBe(lines(batch));
    writer.recycle(first);
    writer.recycle(Buffer.alloc(1 << 20)); // not the writer's: ignored
    const next = batch.map((r) => ({ ...r, statement: r.statement.toLowerCase() })); // as long: fits
    for (const r of next) writer.addRecord(r);
    const second = writer.take().ndjson;
    expect(second.buffer).toBe(first.buffer);
    expect(second.toString("utf8")).toBe(lines(next));
    writer.recycle(second);
    writer.recycle(second); // given back twice: kept once
    for (const r of batch) writer.addRecord(r);
    const third = writer.take().ndjson;
    for (const r of next) writer.addRecord(r);
    const fourth = writer.take().ndjson;
    expect(third.buffer).toBe(first.buffer);
    expect(fourth.buffer).not.toBe(first.buffer);
    expect(third.toString("utf8")).toBe(lines(batch));
    expect(fourth.toString("utf8")).toBe(lines(next));
  });

  it("names every source right when sources come and go by the hundred", () => {
    const writer = new NdjsonWriter();
    for (let round = 0; round < 3; round++) {
      const records = Array.from({ length: 300 }, (_, i) =>
        record("SELECT 1", `/var/log/postgresql/postgresql-${round}-${i % 150}.csv`, i),
      );
      for (const r of records) writer.addRecord(r);
      expect(writer.take().ndjson.toString("utf8")).toBe(lines(records));
    }
  });
});
