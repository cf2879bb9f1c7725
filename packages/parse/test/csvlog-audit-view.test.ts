/**
 * ParserOptions.auditView: csvlog offers an ordinary pgAudit entry to the view sink as an
 * AuditView, without making a LogRecord or an AuditEntry. What it offers must be what the record
 * and decodeAuditEntry give of it (field for field), what it does not offer — or the sink declines
 * — must reach `record` exactly as without the option, at every chunking. The records below are
 * hand-made lines: some of the kinds a real log has (test/csvlog.test.ts reads a real server's),
 * and each kind the view must hand to the slow path.
 */
import {
  type AuditEntry,
  type AuditView,
  createCsvlogParser,
  decodeAuditEntry,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

interface Line {
  message: string;
  /** Offered as a view. */
  viewed: boolean;
  /** The message's field as is (not csv-quoted). */
  raw?: boolean;
  user?: string;
  session?: string;
  vxid?: string;
  why?: string;
}

/** A PostgreSQL 14+ record (26 columns). */
function line26(n: number, l: Line): string {
  const message = l.raw ? l.message : `"${l.message.replaceAll('"', '""')}"`;
  const user = l.user ?? '"alice"';
  const session = l.session ?? "6632a1b2.1092";
  const vxid = l.vxid ?? "3/7";
  return `2024-05-01 12:00:00.${String(n % 1000).padStart(3, "0")} UTC,${user},"app",4242,"10.0.0.1:5432",${session},${n},"SELECT",2024-05-01 11:00:00 UTC,${vxid},0,LOG,00000,${message},,,,,,,,,"psql","client backend",,-123456789012345678\n`;
}

const LINES: Line[] = [
  { message: "AUDIT: SESSION,1,1,READ,SELECT,,,select 1,<not logged>", viewed: true },
  { message: "AUDIT: SESSION,2,1,READ,SELECT,TABLE,public.t,select * from t,<none>", viewed: true },
  {
    message: "AUDIT: OBJECT,3,2,WRITE,UPDATE,TABLE,public.t,update t set v = 1,<previously logged>",
    viewed: true,
  },
  { message: "AUDIT: SESSION,123456789012345,1,MISC,BEGIN,,,BEGIN,<not logged>", viewed: true },
  { message: "AUDIT: SESSION,4,1,MISC,COMMIT,,,END,<not logged>", viewed: true, vxid: "" },
  { message: "AUDIT: SESSION,5,1,READ,SELECT,,,select 2,<not logged>", viewed: true, user: "" },
  { message: "AUDIT: SESSION,6,1,READ,SELECT,,,select 3,<not logged>", viewed: true, user: '""' },
  { message: "AUDIT: SESSION,7,1,READ,SELECT,,,select 4,<not logged>", viewed: true, user: "bob" },
  // Each of these is for the slow path.
  { message: "AUDIT: SESSION,8,1,READ,SELECT,,,select 5,<not logged>,5", viewed: false, why: "ROWS" },
  {
    message: "AUDIT: OBJECT,9,2,WRITE,INSERT,TABLE,public.t,insert into t values ($1),",
    viewed: false,
    why: "values",
  },
  { message: "AUDIT: SESSION,10,1,READ,SELECT,,,select $1,a,b,7", viewed: false, why: "values" },
  {
    message: "AUDIT: SESSION,1234567890123456,1,READ,SELECT,,,select 1,<not logged>",
    viewed: false,
    why: "16 digits",
  },
  { message: "AUDIT: SESSION,x,1,READ,SELECT,,,select 1,<not logged>", viewed: false, why: "bad counter" },
  { message: "AUDIT: SESSION,11", viewed: false, why: "too few fields" },
  { message: "AUDIT: ", viewed: false, why: "empty payload" },
  {
    message: 'AUDIT: "SESSION",12,1,READ,SELECT,,,select 1,<not logged>',
    viewed: false,
    why: "quoted field",
  },
  {
    message: 'AUDIT: SESSION,13,1,READ,SELECT,,,"select 1, 2",<not logged>',
    viewed: true,
    why: "doubled quotes: the statement's, without quotes in it",
  },
  {
    message: 'AUDIT: SESSION,13,2,READ,SELECT,,,"select "" 1, 2",<not logged>',
    viewed: false,
    why: "a quote inside",
  },
  {
    message: 'AUDIT: SESSION,13,3,READ,SELECT,,,"select 1, 2""",<not logged>',
    viewed: false,
    why: "a quote at the end",
  },
  {
    message: 'AUDIT: SESSION,13,4,READ,SELECT,,,"select 1, 2","<none>"',
    viewed: false,
    why: "quoted marker",
  },
  {
    message: 'AUDIT: SESSION,13,5,READ,SELECT,x"y,,"select 1, 2",<none>',
    viewed: false,
    why: "a quote in a field",
  },
  { message: 'AUDIT: SESSION,13,6,READ,SELECT,,,"select 1, 2",<none>,4', viewed: false, why: "ROWS" },
  {
    message: 'AUDIT: SESSION,13,7,READ,SELECT,,,select 1 "x",<none>',
    viewed: false,
    why: "unquoted, with quotes",
  },
  { message: "AUDIT: SESSION,14,1,READ,SELECT,,,select 'é',<not logged>", viewed: false, why: "non-ASCII" },
  {
    message: "AUDIT: SESSION,15,1,READ,SELECT,,,select 1,<not logged>",
    viewed: false,
    session: "",
    why: "no session",
  },
  {
    message: "AUDIT: SESSION,16,1,READ,SELECT,,,select 1,<not logged>",
    viewed: false,
    user: '"a""b"',
    why: "escaped user",
  },
  {
    message: "AUDIT: SESSION,17,1,READ,SELECT,,,select 1,<not logged>,12,13",
    viewed: false,
    why: "11 fields",
  },
  { message: "AUDIT: SESSION,18,1,READ,SELECT,,,select 1", viewed: false, why: "8 fields" },
  { message: "AUDIT:SESSION", viewed: false, raw: true, why: "no AUDIT: " },
  { message: "connection authorized: user=alice database=app", viewed: false, why: "not pgAudit" },
  { message: "", viewed: false, raw: true, why: "empty message" },
];

interface Seen {
  record: LogRecord;
  entry: AuditEntry | undefined;
}

/** What the view stands for, as a record's and an entry's fields. */
function fieldsOf(v: AuditView) {
  return {
    offset: v.offset,
    size: v.size,
    pid: v.pid,
    timestamp: v.timestamp,
    user: v.user,
    database: v.database,
    sessionId: v.sessionId,
    virtualTransactionId: v.virtualTransactionId,
    entry: {
      auditType: v.auditType,
      statementId: v.statementId,
      substatementId: v.substatementId,
      class: v.class,
      command: v.command,
      objectType: v.objectType,
      objectName: v.objectName,
      statement: v.statement,
      parameter: v.parameter,
      rows: null,
    },
  };
}

function read(input: Buffer, step: number, take: ((v: AuditView) => boolean) | undefined) {
  const seen: Seen[] = [];
  const views: ReturnType<typeof fieldsOf>[] = [];
  const parser = createCsvlogParser(
    {
      record: (record, entry) => seen.push({ record, entry }),
      malformed: (m) => expect.fail(`malformed: ${m.reason}`),
    },
    {
      omitUntalliedFields: true,
      decodeAuditEntries: true,
      ...(take === undefined
        ? {}
        : {
            auditView: {
              entry: (v: AuditView) => {
                views.push(fieldsOf(v));
                return take(v);
              },
            },
          }),
    },
  );
  for (let i = 0; i < input.length; i += step) parser.push(input.subarray(i, i + step));
  parser.end();
  return { seen, views };
}

function decoded(record: LogRecord, entry: AuditEntry | undefined): AuditEntry | undefined {
  const reported: MalformedRecord[] = [];
  return entry ?? decodeAuditEntry(record, (m) => reported.push(m));
}

describe("csvlog auditView", () => {
  const input = Buffer.from(LINES.map((l, i) => line26(i, l)).join(""), "utf8");

  it("offers what the record and its entry hold, and only the ordinary entries, at every chunking", () => {
    const plain = read(input, input.length, undefined).seen;
    expect(plain).toHaveLength(LINES.length);
    for (const step of [input.length, 977, 13, 1]) {
      const { seen, views } = read(input, step, () => true);
      const offered = LINES.flatMap((l, i) => (l.viewed ? [i] : []));
      expect(views).toHaveLength(offered.length);
      offered.forEach((i, k) => {
        const { record, entry } = plain[i]!;
        const want = decoded(record, entry);
        expect(want, `line ${i}`).toBeDefined();
        expect(views[k], `line ${i}`).toEqual({
          offset: record.offset,
          size: record.size,
          pid: record.pid,
          timestamp: record.timestamp,
          user: record.user,
          database: record.database,
          sessionId: record.sessionId,
          virtualTransactionId: record.virtualTransactionId,
          entry: want,
        });
      });
      // The rest reach `record` as without the option.
      expect(seen).toEqual(plain.filter((_, i) => !LINES[i]!.viewed));
    }
  });

  it("gives a declined entry to record as without the option", () => {
    const plain = read(input, input.length, undefined).seen;
    for (const step of [input.length, 29, 1]) {
      const { seen, views } = read(input, step, () => false);
      expect(views.length).toBe(LINES.filter((l) => l.viewed).length);
      expect(seen).toEqual(plain);
    }
  });

  it("gives each string of a repeated value as one object (pooled), and a view's values whatever came before", () => {
    const lines = [0, 1, 2, 0, 1, 2, 3].map((i) => line26(i, LINES[i]!)).join("");
    const got: AuditView[] = [];
    const parser = createCsvlogParser(
      { record: () => expect.fail("a record"), malformed: () => expect.fail("malformed") },
      {
        auditView: {
          entry: (v) => {
            got.push({ ...v });
            return true;
          },
        },
      },
    );
    parser.push(Buffer.from(lines));
    parser.end();
    expect(got.map((v) => v.command)).toEqual([
      "SELECT",
      "SELECT",
      "UPDATE",
      "SELECT",
      "SELECT",
      "UPDATE",
      "BEGIN",
    ]);
    expect(got[3]!.class).toBe(got[0]!.class);
    expect(Object.is(got[5]!.command, got[2]!.command)).toBe(true);
    expect(got[6]!.user).toBe("alice");
  });

  it("offers generated payloads exactly when the decoder reads them as the view describes", () => {
    const word = fc.stringMatching(/^[A-Za-z ._$()=*<>'-]{0,12}$/);
    const payload = fc.tuple(
      fc.constantFrom("SESSION", "OBJECT", '"SESSION"', ""),
      fc.oneof(fc.integer({ min: 0, max: 99999 }).map(String), fc.constantFrom("", "x", "1234567890123456")),
      fc.integer({ min: 0, max: 9 }).map(String),
      fc.constantFrom("READ", "WRITE", "MISC", "DDL"),
      fc.constantFrom("SELECT", "INSERT", "BEGIN", "COMMIT", "SET"),
      fc.constantFrom("", "TABLE"),
      fc.constantFrom("", "public.t"),
      fc.oneof(
        word,
        word.map((w) => `"${w}"`),
        word.map((w) => `"${w}, ""${w}"`),
        word.map((w) => `"${w},${w}"`),
        word.map((w) => `${w}"`),
      ),
      fc.constantFrom("<not logged>", "<none>", "<previously logged>", "", "a", "<none>,3", "<none>,"),
    );
    fc.assert(
      fc.property(
        fc.array(payload, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 64 }),
        (ps, step) => {
          const lines: Line[] = ps.map((p) => ({ message: `AUDIT: ${p.join(",")}`, viewed: false }));
          const buf = Buffer.from(lines.map((l, i) => line26(i, l)).join(""));
          const plain = read(buf, buf.length, undefined).seen;
          const { seen, views } = read(buf, step, () => true);
          // Every view is a record whose entry the decoder reads the same, without ROWS.
          for (const v of views) {
            const at = plain.findIndex((s) => s.record.offset === v.offset);
            const want = decoded(plain[at]!.record, plain[at]!.entry);
            expect(v.entry).toEqual(want);
          }
          expect(seen.length + views.length).toBe(plain.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
