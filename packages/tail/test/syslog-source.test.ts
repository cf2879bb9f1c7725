// Real parts end to end: PostgreSQL 15 + pgaudit logs to csvlog and syslog; a private rsyslog
// forwards the syslog side to a SyslogSource over UDP (RFC 5424), TCP octet-counted (RFC 5424)
// and TCP LF-terminated (RFC 3164); csv-parse over the csvlog is the oracle.
import { readFileSync } from "node:fs";
import { type AuditEntry, type LogRecord, parseAuditPayload } from "@auditpipe/parse";
import {
  type PostgresCluster,
  type RsyslogDaemon,
  SYSLOG_TEST_TIMEOUT_MS,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Collected, collectingSource } from "./_syslog-helper.ts";

const PREFIX = "%m [%p] %q%u@%d ";
const MARKER = "syslog-source-done-marker";
const WORKLOAD = [
  "CREATE TABLE t (id int PRIMARY KEY, note text)",
  "INSERT INTO t VALUES (1, 'é ü 中文 🐘')",
  "SELECT\n\tid,\n\tnote AS \"tab\there\"\nFROM t\nWHERE note <> 'a\tb'",
  // > 2 KB: PostgreSQL cuts it into 900-byte chunks, at whitespace and at UTF-8 boundaries
  `SELECT '${"x".repeat(1200)} ${"y".repeat(1300)}' AS long_words`,
  `SELECT '${"é".repeat(1300)}' AS long_multibyte`,
  "INSERT INTO t VALUES (1, 'dup')", // ERROR with DETAIL and STATEMENT lines
  "SELECT * FROM no_such_table", // ERROR at character 15
  `SELECT '${MARKER}'`,
];

/** csvlog columns the comparison needs, by position (PostgreSQL 15's 26 columns). */
const COL = { logTime: 0, user: 1, database: 2, pid: 3, severity: 11, message: 13, query: 19 } as const;

interface Entry {
  pid: number;
  timestamp: string | null;
  user: string | null;
  database: string | null;
  entry: AuditEntry;
}

interface ErrorRecord {
  pid: number;
  message: string;
  query: string | null;
}

function byPid<T extends { pid: number }>(items: T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const item of items) out.set(item.pid, [...(out.get(item.pid) ?? []), item]);
  return out;
}

/** What csv-parse reads from the csvlog: audit entries and errors, per pid in file order. */
function fromCsvlog(file: string): { entries: Map<number, Entry[]>; errors: Map<number, ErrorRecord[]> } {
  const rows = parse(readFileSync(file)) as string[][];
  const entries: Entry[] = [];
  const errors: ErrorRecord[] = [];
  const nul = (v: string | undefined): string | null => (v === undefined || v === "" ? null : v);
  for (const r of rows) {
    const pid = Number(r[COL.pid]);
    const message = r[COL.message]!;
    const entry = parseAuditPayload(message);
    if (entry !== undefined)
      entries.push({
        pid,
        timestamp: r[COL.logTime]!,
        user: nul(r[COL.user]),
        database: nul(r[COL.database]),
        entry,
      });
    if (r[COL.severity] === "ERROR") errors.push({ pid, message, query: nul(r[COL.query]) });
  }
  return { entries: byPid(entries), errors: byPid(errors) };
}

/** The same, from the records one listener delivered (per pid, in delivery order). */
function fromRecords(records: LogRecord[]): {
  entries: Map<number, Entry[]>;
  errors: Map<number, ErrorRecord[]>;
} {
  const entries: Entry[] = [];
  const errors: ErrorRecord[] = [];
  for (const r of records) {
    const pid = r.pid ?? -1;
    const entry = parseAuditPayload(r.message);
    if (entry !== undefined)
      entries.push({ pid, timestamp: r.timestamp, user: r.user, database: r.database, entry });
    if (r.severity === "ERROR") errors.push({ pid, message: r.message, query: r.query });
  }
  return { entries: byPid(entries), errors: byPid(errors) };
}

const LISTENERS = ["udp rfc5424", "tcp octet-counted rfc5424", "tcp traditional rfc3164"] as const;

describe("SyslogSource with real rsyslog forwarding what a real PostgreSQL + pgaudit wrote", () => {
  let received: Collected;
  let rsyslog: RsyslogDaemon | undefined;
  let pg: PostgresCluster | undefined;
  let csvlog: ReturnType<typeof fromCsvlog>;
  let rfc5424Lines: string[] = [];
  const urls: Record<(typeof LISTENERS)[number], string> = {} as never;

  beforeAll(async () => {
    received = await collectingSource(["udp://127.0.0.1:0", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"], {
      prefix: PREFIX,
      flushAfterMs: 1000,
    });
    const [udp, octet, traditional] = received.source.addresses;
    urls["udp rfc5424"] = udp!.url;
    urls["tcp octet-counted rfc5424"] = octet!.url;
    urls["tcp traditional rfc3164"] = traditional!.url;
    rsyslog = await startRsyslog({
      forward: [
        { protocol: "udp", port: udp!.port, format: "rfc5424" },
        { protocol: "tcp", port: octet!.port, format: "rfc5424", framing: "octet-counted" },
        { protocol: "tcp", port: traditional!.port, format: "rfc3164", framing: "traditional" },
      ],
    });
    pg = await startPostgres({
      logDestination: ["csvlog", "syslog"],
      logLinePrefix: PREFIX,
      pgaudit: { log: "all" },
    });
    const client = await pg.connect();
    try {
      for (const sql of WORKLOAD) await client.query(sql).catch(() => {});
    } finally {
      await client.end();
    }
    const file = pg.currentLogfiles().csvlog!;
    await waitUntil(
      () => readFileSync(file, "utf8").includes(MARKER),
      10_000,
      () => `csvlog ${file} has no marker`,
    );
    csvlog = fromCsvlog(file);
    // The marker's message is its backend's last: it completes after flushAfterMs of silence.
    const delivered = (url: string): number =>
      received.records.filter((r) => r.source.name === url && r.record.message.includes(MARKER)).length;
    for (const name of LISTENERS)
      await waitUntil(
        () => delivered(urls[name]) === 1,
        15_000,
        () => `${name}: the marker was delivered ${delivered(urls[name])} times`,
      );
    // Stop PostgreSQL, then wait until every message rsyslog wrote to its file has reached us
    // three times, so the counters are final.
    await pg.stop();
    await rsyslog.waitForText(rsyslog.files.rfc5424, "database system is shut down");
    rfc5424Lines = readFileSync(rsyslog.files.rfc5424, "utf8").split("\n").filter(Boolean);
    const expected = 3 * rfc5424Lines.length;
    await waitUntil(
      () => received.source.stats().received === expected,
      15_000,
      () => `received ${received.source.stats().received} syslog messages, expected ${expected}`,
    );
    await received.source.close();
  }, SYSLOG_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await received?.source.close();
    await pg?.stop();
    await rsyslog?.stop();
  });

  it("the workload really went through syslog's chunking", () => {
    expect(csvlog.entries.size).toBeGreaterThan(0);
    // a statement over 2 KB became at least three chunks of one message
    expect(rfc5424Lines.some((l) => / postgres \d+ - - +\[\d+-3\] /.test(l))).toBe(true);
    // tabs came through rsyslog's #011 escape
    expect(rfc5424Lines.some((l) => l.includes("#011"))).toBe(true);
  });

  for (const name of LISTENERS) {
    it(`${name}: audit entries and errors equal the csvlog's, per process`, () => {
      const records = received.records.filter((r) => r.source.name === urls[name]).map((r) => r.record);
      const got = fromRecords(records);
      // Every process that wrote an audit entry: the workload's backend and testkit's set-up one.
      expect([...got.entries.keys()].sort()).toEqual([...csvlog.entries.keys()].sort());
      for (const [pid, entries] of csvlog.entries)
        expect(got.entries.get(pid), `pid ${pid}`).toEqual(entries);
      expect(got.errors).toEqual(csvlog.errors);
      const workload = [...csvlog.entries.values()].flat().map((e) => e.entry.statement);
      // pgAudit logs a statement once it is analysed: one naming a missing table never is.
      for (const sql of WORKLOAD.filter((q) => !q.includes("no_such_table"))) expect(workload).toContain(sql);
      expect([...csvlog.errors.values()].flat()).toHaveLength(2);
    });
  }

  it("record sources name their listener and carry per-listener byte offsets", () => {
    for (const name of LISTENERS) {
      const offsets = received.records
        .filter((r) => r.source.name === urls[name])
        .map((r) => r.source.offset);
      expect(offsets.length).toBeGreaterThan(0);
      expect(new Set(offsets).size, name).toBe(offsets.length);
      expect(Math.min(...offsets), name).toBe(0);
    }
    for (const r of received.records) expect(r.source.offset).toBe(r.record.offset);
  });

  it("counts every message: all received, all reassembled, none incomplete, malformed or foreign", () => {
    const messages = rfc5424Lines.filter((l) => / postgres \d+ - - +\[\d+-1\] /.test(l)).length;
    expect(received.malformed).toEqual([]);
    expect(received.source.stats()).toEqual({
      received: 3 * rfc5424Lines.length,
      reassembled: 3 * messages,
      incomplete: 0,
      malformed: 0,
      foreign: 0,
      dropped: 0,
      tcpConnections: expect.any(Number), // rsyslog's, open until the source closes
      tcpConnectionLimit: expect.any(Number),
      tcpRefused: 0,
      tcpIdleClosed: 0,
      udpKernelDropped: 0,
      udpReceiveBufferBytes: expect.any(Number),
    });
    expect(received.records).toHaveLength(3 * messages);
  });
});
