import {
  type AuditEntry,
  createCsvlogParser,
  type LogRecord,
  ParseErrorCode,
  parseAuditPayload,
  UNREAD_FIELDS,
  UNTALLIED_FIELDS,
} from "@auditpipe/parse";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, collectSamples, type Samples } from "./pg-samples.ts";

const enc = (s: string): Buffer => Buffer.from(s, "utf8");

/** A record as omitUnreadFields gives it: the fields of UNREAD_FIELDS null, the rest as read. */
function withoutUnread(record: LogRecord, fields: readonly (keyof LogRecord)[] = UNREAD_FIELDS): LogRecord {
  const lean: LogRecord = { ...record };
  for (const field of fields) (lean as unknown as Record<string, null>)[field] = null;
  return lean;
}

/** A record as omitUntalliedFields gives it: UNTALLIED_FIELDS null too. */
const withoutUntallied = (record: LogRecord): LogRecord =>
  withoutUnread(record, [...UNREAD_FIELDS, ...UNTALLIED_FIELDS]);

/** A PostgreSQL 14+ record (26 columns) with the given message (already csv-quoted by us). */
function line26(n: number, message: string): string {
  return `2024-05-01 12:00:00.${String(n).padStart(3, "0")} UTC,"alice","app",4242,"10.0.0.1:5432",6632.1,${n},"SELECT",2024-05-01 11:00:00 UTC,3/7,0,LOG,00000,"${message.replaceAll('"', '""')}",,,,,,,,,"psql","client backend",,-123456789012345678\n`;
}

describe("csvlog on real pgaudit output", () => {
  let samples: Samples;
  let records: LogRecord[];
  let entries: { record: LogRecord; entry: AuditEntry }[];

  beforeAll(async () => {
    samples = await collectSamples();
    const out = collect(createCsvlogParser, [samples.csv]);
    expect(out.malformed).toEqual([]);
    records = out.records;
    entries = records.flatMap((record) => {
      const entry = parseAuditPayload(record.message);
      return entry ? [{ record, entry }] : [];
    });
  });

  it("with omitUnreadFields, leaves UNREAD_FIELDS null and reads every other field alike", () => {
    const lean = collect(createCsvlogParser, [samples.csv], { omitUnreadFields: true });
    expect(lean.malformed).toEqual([]);
    expect(lean.records).toEqual(records.map((r) => withoutUnread(r)));
    // Not vacuous: the sample's records fill fields the option leaves out.
    expect(records.some((r) => r.sessionStart !== null && r.backendType !== null)).toBe(true);
  });

  it("with omitUntalliedFields, leaves UNTALLIED_FIELDS null too and reads every other field alike", () => {
    const lean = collect(createCsvlogParser, [samples.csv], { omitUntalliedFields: true });
    expect(lean.malformed).toEqual([]);
    expect(lean.records).toEqual(records.map(withoutUntallied));
    expect(records.some((r) => r.sessionLine !== null && r.applicationName !== null)).toBe(true);
  });

  it("with decodeAuditEntries, gives the entries parseAuditPayload reads of the messages", () => {
    const given: { record: LogRecord; entry: AuditEntry | undefined }[] = [];
    const parser = createCsvlogParser(
      { record: (record, entry) => given.push({ record, entry }), malformed: () => expect.fail("malformed") },
      { omitUntalliedFields: true, decodeAuditEntries: true },
    );
    parser.push(samples.csv);
    parser.end();
    expect(given.map((g) => g.record)).toEqual(records.map(withoutUntallied));
    for (const { record, entry } of given)
      if (entry !== undefined) expect(entry).toEqual(parseAuditPayload(record.message));
    // Not vacuous: most entries are given, and some (escaped statements) are left to decode.
    const n = given.filter((g) => g.entry !== undefined).length;
    expect(n).toBeGreaterThan(entries.length / 2);
    expect(n).toBeLessThan(entries.length);
  });

  const find = (statement: string): AuditEntry[] =>
    entries.filter((e) => e.entry.statement === statement).map((e) => e.entry);

  it("covers the file byte for byte, one newline-terminated record after another", () => {
    let offset = 0;
    for (const r of records) {
      expect(r.offset).toBe(offset);
      expect(samples.csv[r.offset + r.size - 1]).toBe(0x0a);
      offset += r.size;
    }
    expect(offset).toBe(samples.csv.length);
  });

  it("fills the csvlog columns", () => {
    const r = entries.find((e) => e.entry.command === "DO")!.record;
    expect(r).toMatchObject({
      user: "postgres",
      database: "postgres",
      remoteHost: "[local]",
      commandTag: "DO",
      severity: "LOG",
      sqlState: "00000",
      applicationName: "auditpipe-test",
      backendType: "client backend",
      leaderPid: null,
      queryId: "0",
      detail: null,
    });
    expect(r.pid).toBeGreaterThan(0);
    expect(r.sessionLine).toBeGreaterThan(0);
    expect(r.timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/);
  });

  it("decodes CREATE TABLE with a serial key into one entry per object", () => {
    const create = find("CREATE TABLE t (id serial PRIMARY KEY, v text)");
    expect(create.map((e) => [e.command, e.objectType, e.objectName])).toEqual([
      ["CREATE SEQUENCE", "SEQUENCE", "public.t_id_seq"],
      ["CREATE TABLE", "TABLE", "public.t"],
      ["CREATE INDEX", "INDEX", "public.t_pkey"],
      ["ALTER SEQUENCE", "SEQUENCE", "public.t_id_seq"],
    ]);
    expect(new Set(create.map((e) => e.statementId)).size).toBe(1);
    expect(create.every((e) => e.class === "DDL" && e.parameter === "<none>" && e.rows === 0)).toBe(true);
  });

  it("keeps quotes, commas, newlines, tabs, backslashes and non-ASCII in the statement", () => {
    const [insert] = find(
      `INSERT INTO t (v) VALUES ('a,b'), ('x"y'), (E'line1\\nline2\\ttab\\\\bs'), ('héllo ✓ 😀')`,
    );
    expect(insert).toMatchObject({
      auditType: "SESSION",
      class: "WRITE",
      command: "INSERT",
      objectType: "",
      objectName: "",
      parameter: "<none>",
      rows: 4,
    });
  });

  it("decodes parameters: commas, quotes, NULL and '' (printed alike: null), numbers", () => {
    const [select] = find("SELECT $1::text, $2::text, $3::text, $4::text, $5::int");
    expect(select?.parameter).toEqual(["a,b", 'x"y', null, null, "7"]);
    expect(select?.rows).toBe(1);
    expect(find("SELECT $1::text")[0]?.parameter).toEqual(["plain"]);
    expect(find('SELECT $1::text AS "quoted, name"')[0]?.parameter).toEqual(['line\nbreak "q"']);
  });

  it("classifies DO blocks, their inner statements, roles (password redacted) and dollar quoting", () => {
    const doBlock = entries.filter((e) => e.record.commandTag === "DO").map((e) => e.entry);
    expect(doBlock.map((e) => [e.class, e.command, e.substatementId, e.statement])).toEqual([
      ["FUNCTION", "DO", 1, "DO $$BEGIN PERFORM 1; END$$"],
      ["READ", "SELECT", 2, "SELECT 1"],
    ]);
    expect(find("CREATE ROLE bob PASSWORD <REDACTED>")[0]).toMatchObject({
      class: "ROLE",
      command: "CREATE ROLE",
    });
    expect(find(`SELECT $q$it's, "dollar"$q$ AS x`)).toHaveLength(1);
    expect(find("UPDATE t SET v = v || '!' WHERE id <= 3")[0]?.rows).toBe(3);
  });

  it("logs the whole compound string once per statement (pgaudit 1.7)", () => {
    const compound = find("SELECT 1; SELECT 2");
    expect(compound).toHaveLength(2);
    expect(compound[1]!.statementId).toBe(compound[0]!.statementId + 1);
  });
});

describe("csvlog column sets and layout", () => {
  const pg12 =
    '2024-05-01 12:00:00.000 UTC,"u","d",1,"h:1",s.1,1,"SELECT",2024-05-01 11:00:00 UTC,3/7,0,LOG,00000,"m",,,,,,,,,"app"\n';
  const pg13 = `${pg12.slice(0, -1)},"client backend"\n`;

  it("reads 23 (≤12), 24 (13) and 26 (14–17) columns", () => {
    const { records, malformed } = collect(createCsvlogParser, [enc(pg12 + pg13 + line26(1, "x"))]);
    expect(malformed).toEqual([]);
    expect(records.map((r) => [r.applicationName, r.backendType, r.queryId])).toEqual([
      ["app", null, null],
      ["app", "client backend", null],
      ["psql", "client backend", "-123456789012345678"],
    ]);
  });

  it("reads every column set alike with omitUnreadFields, split anywhere, non-UTF-8 records too", () => {
    const sqlAscii = Buffer.concat([
      enc('2024-05-01 12:00:00.000 UTC,"u\\'),
      Buffer.from([0xe9]),
      enc(pg13.slice(30)),
    ]);
    const input = Buffer.concat([enc(pg12 + pg13 + line26(1, 'say "hi",\n\ud800 ok')), sqlAscii]);
    for (const step of [input.length, 13, 1]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < input.length; i += step) chunks.push(input.subarray(i, i + step));
      const all = collect(createCsvlogParser, chunks);
      const lean = collect(createCsvlogParser, chunks, { omitUnreadFields: true });
      const leaner = collect(createCsvlogParser, chunks, { omitUntalliedFields: true });
      expect(all.malformed).toEqual([]);
      expect(all.records).toHaveLength(4);
      expect(all.records[3]).toMatchObject({ user: "u\\\\\\xe9", invalidUtf8: true });
      expect(lean).toEqual({ records: all.records.map((r) => withoutUnread(r)), malformed: [] });
      expect(leaner).toEqual({ records: all.records.map(withoutUntallied), malformed: [] });
    }
  });

  it("tolerates CRLF and keeps newlines inside quoted fields", () => {
    const text = `${line26(1, "a\r\nb").replace(/\n$/, "\r\n")}${line26(2, "c")}`;
    const { records, malformed } = collect(createCsvlogParser, [enc(text)]);
    expect(malformed).toEqual([]);
    expect(records.map((r) => r.message)).toEqual(["a\r\nb", "c"]);
    expect(records[0]!.size + records[1]!.size).toBe(Buffer.byteLength(text));
    expect(records[0]!.queryId).toBe("-123456789012345678");
  });

  it("distinguishes an empty quoted field from an empty unquoted one", () => {
    const { records } = collect(createCsvlogParser, [enc(line26(1, "").replace(',"psql",', ',"",'))]);
    expect(records[0]!.applicationName).toBe("");
    expect(records[0]!.detail).toBeNull();
    expect(records[0]!.message).toBe("");
  });
});

describe("csvlog bad input", () => {
  const good = [line26(1, "one"), line26(2, "two"), line26(3, "three")];

  it("skips a record with the wrong column count and resumes at the next record", () => {
    const bad = "2024-05-01 12:00:00.000 UTC,only,three\n";
    const { records, malformed } = collect(createCsvlogParser, [enc(good[0] + bad + good[1])]);
    expect(records.map((r) => r.message)).toEqual(["one", "two"]);
    expect(malformed).toEqual([
      {
        code: ParseErrorCode.BAD_FIELD_COUNT,
        reason: expect.any(String),
        offset: Buffer.byteLength(good[0]!),
        size: bad.length,
      },
    ]);
  });

  it("reports a quote inside an unquoted field as BAD_CSV and resumes at the next record", () => {
    const bad = '2024-05-01 12:00:00.000 UTC,ali"ce,app\n';
    const { records, malformed } = collect(createCsvlogParser, [enc(good[0] + bad + good[1])]);
    expect(records.map((r) => r.message)).toEqual(["one", "two"]);
    expect(malformed).toEqual([
      {
        code: ParseErrorCode.BAD_CSV,
        reason: expect.any(String),
        offset: Buffer.byteLength(good[0]!),
        size: bad.length,
      },
    ]);
  });

  it("resyncs after an unterminated quote at the next line that starts with a timestamp", () => {
    const broken = `2024-05-01 12:00:00.000 UTC,"alice,"app\nmore text\n`;
    const input = enc(good[0] + broken + good[1] + good[2]);
    const { records, malformed } = collect(createCsvlogParser, [input]);
    expect(records.map((r) => r.message)).toEqual(["one", "two", "three"]);
    expect(malformed).toHaveLength(1);
    expect(malformed[0]).toMatchObject({
      offset: Buffer.byteLength(good[0]!),
      size: Buffer.byteLength(broken),
    });
  });

  it("reports an unterminated quote at end of input and still finds the records it swallowed", () => {
    const broken = `2024-05-01 12:00:00.000 UTC,"alice\n`;
    // The quote never closes: every later quote pairs up wrongly until the end of input.
    const { records, malformed } = collect(createCsvlogParser, [enc(good[0] + broken + good[1])]);
    expect(records.map((r) => r.message)).toEqual(["one", "two"]);
    expect(malformed.map((m) => m.size)).toEqual([broken.length]);
  });

  it("reports a truncated last record", () => {
    const { records, malformed } = collect(createCsvlogParser, [enc(good[0] + good[1]!.slice(0, 40))]);
    expect(records).toHaveLength(1);
    expect(malformed).toEqual([
      {
        code: ParseErrorCode.TRUNCATED_RECORD,
        reason: expect.any(String),
        offset: Buffer.byteLength(good[0]!),
        size: 40,
      },
    ]);
  });

  it("keeps a record that is not UTF-8 (SQL_ASCII), its bytes escaped and the record flagged", () => {
    // Hand-made: a Latin-1 "é" (0xe9) where UTF-8 is expected, beside valid UTF-8 and a backslash.
    const [head, tail] = line26(1, "café ü \\ ok").split("é");
    const bad = Buffer.concat([enc(head!), Buffer.from([0xe9]), enc(tail!)]);
    for (const step of [bad.length, 7, 1]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bad.length; i += step) chunks.push(bad.subarray(i, i + step));
      const { records, malformed } = collect(createCsvlogParser, [...chunks, enc(good[1]!)]);
      expect(malformed).toEqual([]);
      expect(records.map((r) => [r.message, r.invalidUtf8, r.user, r.size])).toEqual([
        ["caf\\xe9 ü \\\\ ok", true, "alice", bad.length],
        ["two", undefined, "alice", enc(good[1]!).length],
      ]);
    }
  });

  it("skips a record larger than maxRecordBytes, also when it arrives in pieces", () => {
    const big = line26(9, "x".repeat(5000));
    const input = enc(good[0] + big + good[1]);
    for (const step of [input.length, 100]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < input.length; i += step) chunks.push(input.subarray(i, i + step));
      const { records, malformed } = collect(createCsvlogParser, chunks, { maxRecordBytes: 1000 });
      expect(records.map((r) => r.message)).toEqual(["one", "two"]);
      expect(malformed).toEqual([
        {
          code: ParseErrorCode.RECORD_TOO_LARGE,
          reason: expect.any(String),
          offset: Buffer.byteLength(good[0]!),
          size: big.length,
        },
      ]);
    }
  });

  it("never puts record text in a reason", () => {
    const secret = "hunter2-secret";
    const { malformed } = collect(createCsvlogParser, [enc(`${secret},"${secret}\n${secret}"x\n`)]);
    expect(malformed.length).toBeGreaterThan(0);
    for (const m of malformed) expect(m.reason).not.toContain(secret);
  });
});
