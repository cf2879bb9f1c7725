/**
 * The join's rules one at a time, on hand-made records (testkit's logRecord/auditEntry: never
 * passed off as real logs; the real ones are in fixture-truth.test.ts). Each names the case of
 * docs/architecture.md ("Outcomes") it pins.
 */
import { OutcomeJoin, type OutcomeJoinOptions, type StreamEvent } from "@auditpipe/outcome";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

type Rec = { record: LogRecord; entry?: AuditEntry; id?: string };

/** A session's records: entries (with an id to read the decision by) and other messages. */
function session(sessionId: string | null, pid: number | null = 7) {
  let line = 0;
  const base = { sessionId, pid, user: "app", database: "shop" };
  return {
    entry(
      id: string,
      statementId: number,
      command: string,
      statement: string,
      vxid: string | null,
      over = {},
    ): Rec {
      const cls = [
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "SET",
        "PREPARE TRANSACTION",
      ].includes(command)
        ? "MISC"
        : command === "SELECT"
          ? "READ"
          : "WRITE";
      return {
        id,
        record: logRecord({ ...base, sessionLine: ++line, virtualTransactionId: vxid, message: "AUDIT: …" }),
        entry: auditEntry({ statementId, command, class: cls, statement, ...over }),
      };
    },
    log(severity: string, message: string, over: Partial<LogRecord> = {}): Rec {
      return { record: logRecord({ ...base, sessionLine: ++line, severity, message, ...over }) };
    },
  };
}

function play(recs: Rec[], options: Partial<OutcomeJoinOptions<string>> = {}) {
  const decided = new Map<string, string>();
  const attempts: string[] = [];
  const events: StreamEvent[] = [];
  const j = new OutcomeJoin<string>({
    decided(h, outcome, sqlstate, reason) {
      if (decided.has(h)) throw new Error(`decided twice: ${h}`);
      decided.set(h, [outcome, sqlstate, reason].filter((x) => x !== null).join(" "));
    },
    attempt: (r) => attempts.push(`${r.severity} ${r.sqlState}`),
    event: (e) => events.push(e),
    ...options,
  });
  for (const { record, entry, id } of recs) {
    if (entry) j.record(record, entry, id);
    else j.record(record);
  }
  const before = Object.fromEntries(decided);
  j.end();
  return { before, after: Object.fromEntries(decided), attempts, events, join: j };
}

describe("OutcomeJoin", () => {
  it("an autocommit statement succeeds when its session's next transaction begins, not before", () => {
    const a = session("s1");
    const { before } = play(
      [a.entry("x", 1, "INSERT", "insert 1", "3/1"), a.entry("y", 2, "INSERT", "insert 2", "3/2")],
      {
        miscLogged: true,
      },
    );
    expect(before).toEqual({ x: "succeeded" });
  });

  it("without misc, what raised no error waits for a MISC entry of the session, user or database", () => {
    const a = session("s1");
    const b = session("s2", 8);
    const recs = [
      a.entry("x", 1, "INSERT", "insert 1", "3/1"),
      a.entry("y", 2, "INSERT", "insert 2", "3/2"),
      a.entry("z", 3, "INSERT", "insert 3", "3/3"),
    ];
    expect(play(recs).after).toEqual({
      x: "unknown boundaries-not-logged",
      y: "unknown boundaries-not-logged",
      z: "unknown log-ended",
    });
    // Another session of the same user and database shows MISC: transaction control is logged.
    expect(play([...recs, b.entry("m", 1, "SET", "set x = 1", "4/1")]).before).toMatchObject({
      x: "succeeded",
      y: "succeeded",
    });
  });

  it("a record without a session id or pid is decided unknown at once", () => {
    const n = session(null, null);
    expect(play([n.entry("x", 1, "INSERT", "insert", null)]).before).toEqual({ x: "unknown no-session" });
  });

  it("a crash rolls back open blocks and leaves implicit statements and pending COMMITs unknown", () => {
    const a = session("s1", 10);
    const b = session("s2", 11);
    const c = session("s3", 12);
    const pm = session(null, 1);
    const { before, events } = play(
      [
        a.entry("a1", 1, "BEGIN", "begin", "3/1"),
        a.entry("a2", 2, "INSERT", "insert", "3/1"),
        b.entry("b1", 1, "INSERT", "insert", "4/1"),
        c.entry("c1", 1, "BEGIN", "begin", "5/1"),
        c.entry("c2", 2, "COMMIT", "commit", "5/1"),
        pm.log("LOG", "server process (PID 10) was terminated by signal 9: Killed"),
        pm.log("LOG", "terminating any other active server processes"),
      ],
      { miscLogged: true },
    );
    expect(before).toEqual({
      a1: "rolled_back",
      a2: "rolled_back",
      b1: "unknown server-stopped",
      c1: "unknown server-stopped",
      c2: "unknown server-stopped",
    });
    expect(events.map((e) => e.kind)).toEqual(["server-crash"]);
  });

  it("a ROLLBACK whose text is not logged is a ROLLBACK TO SAVEPOINT when the block goes on", () => {
    const a = session("s1");
    const { before } = play(
      [
        a.entry("b", 1, "BEGIN", "<not logged>", "3/1"),
        a.entry("i1", 2, "INSERT", "<not logged>", "3/1"),
        a.entry("sp", 3, "SAVEPOINT", "<not logged>", "3/1"),
        a.entry("i2", 4, "INSERT", "<not logged>", "3/1"),
        a.entry("rb", 5, "ROLLBACK", "<not logged>", "3/1"),
        a.entry("i3", 6, "INSERT", "<not logged>", "3/1"),
        a.entry("c", 7, "COMMIT", "<not logged>", "3/1"),
        a.log("LOG", "disconnection: session time: 0:00:01.000"),
      ],
      { miscLogged: true },
    );
    expect(before).toEqual({
      b: "succeeded",
      i1: "succeeded",
      sp: "succeeded",
      i2: "rolled_back",
      rb: "succeeded",
      i3: "succeeded",
      c: "succeeded",
    });
  });

  it("COMMIT AND CHAIN commits and opens a block at once", () => {
    const a = session("s1");
    const { before } = play(
      [
        a.entry("b", 1, "BEGIN", "begin", "3/1"),
        a.entry("c", 2, "COMMIT", "commit and chain", "3/1"),
        a.entry("i", 3, "INSERT", "insert", "3/2"),
        a.entry("r", 4, "ROLLBACK", "rollback", "3/2"),
      ],
      { miscLogged: true },
    );
    expect(before).toEqual({ b: "succeeded", c: "succeeded", i: "rolled_back", r: "succeeded" });
  });

  it("a pid reused by a new backend ends the session tracked under it (no %c, no log_disconnections)", () => {
    const old = session(null, 42);
    const { before } = play(
      [
        old.entry("x", 1, "BEGIN", "begin", null),
        old.entry("y", 2, "INSERT", "insert", null),
        old.log("LOG", "connection received: host=[local]"),
      ],
      { miscLogged: true },
    );
    expect(before).toEqual({ x: "rolled_back", y: "rolled_back" });
  });

  it("tells sessions apart by their ids, whatever their pids share (the cache by pid is only a hint)", () => {
    // Pids 1 and 257 share a slot of the cache; s2 and s3 share pid 1 (two ids, one backend's pid).
    const a = session("s1", 1);
    const b = session("s2", 257);
    const c = session("s3", 1);
    const { before } = play(
      [
        a.entry("a1", 1, "BEGIN", "begin", "3/1"),
        b.entry("b1", 1, "INSERT", "insert b", "4/1"),
        a.entry("a2", 2, "INSERT", "insert a", "3/1"),
        c.entry("c1", 1, "INSERT", "insert c", "5/1"),
        b.entry("b2", 2, "INSERT", "insert b2", "4/2"),
        a.entry("a3", 3, "ROLLBACK", "rollback", "3/1"),
        c.entry("c2", 2, "INSERT", "insert c2", "5/2"),
      ],
      { miscLogged: true },
    );
    expect(before).toEqual({
      a1: "rolled_back",
      a2: "rolled_back",
      a3: "succeeded",
      b1: "succeeded",
      c1: "succeeded",
    });
  });

  it("a FATAL before any audited statement is a refused connection; one ending an idle session is not", () => {
    const login = session("s9", 90);
    const idle = session("s1", 91);
    const { attempts } = play([
      login.log("FATAL", 'password authentication failed for user "mallory"', { sqlState: "28P01" }),
      idle.entry("x", 1, "INSERT", "insert", "3/1"),
      idle.log("FATAL", "terminating connection due to administrator command", { sqlState: "57P01" }),
      session("s7", 92).log("FATAL", "terminating connection due to administrator command", {
        sqlState: "57P01",
      }),
    ]);
    expect(attempts).toEqual(["FATAL 28P01"]);
  });

  it("caps what it tracks: an entry over maxPending is unknown (cap) at once, and counted", () => {
    const a = session("s1");
    const { before, join } = play(
      [
        a.entry("b", 1, "BEGIN", "begin", "3/1"),
        a.entry("x", 2, "INSERT", "insert", "3/1"),
        a.entry("y", 3, "INSERT", "insert", "3/1"),
      ],
      { miscLogged: true, maxPending: 2 },
    );
    expect(before).toEqual({ y: "unknown cap" });
    expect(join.counts.capped).toBe(1);
  });

  it("caps sessions: the oldest is let go, its undecided entries unknown (cap)", () => {
    const recs = [1, 2, 3].map((n) => session(`s${n}`, n).entry(`e${n}`, 1, "INSERT", "insert", `${n}/1`));
    expect(play(recs, { miscLogged: true, maxSessions: 2 }).before).toEqual({ e1: "unknown cap" });
  });

  it("reports audit-setting changes: SET, RESET, ALTER SYSTEM/ROLE/DATABASE of pgaudit.*, and reloads", () => {
    const a = session("s1");
    const pm = session(null, 1);
    const { events } = play([
      a.entry("1", 1, "SET", "SET pgaudit.log = 'none'", "3/1"),
      a.entry("2", 2, "SET", "set session pgaudit.log_relation to on", "3/2"),
      a.entry("3", 3, "RESET", "RESET pgaudit.log", "3/3", { class: "MISC" }),
      a.entry("4", 4, "ALTER SYSTEM", "ALTER SYSTEM SET pgaudit.log TO 'ddl'", "3/4", { class: "MISC" }),
      a.entry("5", 5, "ALTER ROLE", `ALTER ROLE "app" IN DATABASE shop SET pgaudit.log = 'none'`, "3/5", {
        class: "ROLE",
      }),
      a.entry("6", 6, "ALTER DATABASE", "ALTER DATABASE shop RESET pgaudit.log", "3/6", { class: "DDL" }),
      a.entry("7", 7, "SET", "SET work_mem = '8MB'", "3/7"),
      // A multi-statement query: pgaudit logs each statement with the whole text.
      a.entry("8", 8, "INSERT", "INSERT INTO t VALUES (1); SET pgaudit.log = 'misc'", "3/8", {
        class: "WRITE",
      }),
      a.entry("9", 9, "SET", "INSERT INTO t VALUES (1); SET pgaudit.log = 'misc'", "3/8"),
      a.entry("10", 10, "RESET", "SET work_mem = '1MB'; RESET pgaudit.role; SET pgaudit.log = 'all'", "3/9"),
      pm.log("LOG", "received SIGHUP, reloading configuration files"),
      pm.log("LOG", 'parameter "pgaudit.log" changed to "none"'),
      pm.log("LOG", 'parameter "log_min_messages" removed from configuration file, reset to default'),
    ]);
    expect(
      events.map((e) => (e.kind === "setting-changed" ? `${e.via} ${e.setting}=${e.value}` : e.kind)),
    ).toEqual([
      "set pgaudit.log=none",
      "set pgaudit.log_relation=on",
      "reset pgaudit.log=null",
      "alter-system pgaudit.log=ddl",
      "alter-role pgaudit.log=none",
      "alter-database pgaudit.log=null",
      "set pgaudit.log=misc",
      "reset pgaudit.role=null",
      "config-reload",
      "reload pgaudit.log=none",
      "reload log_min_messages=null",
    ]);
  });

  it("decides every entry exactly once, even when the stream ends mid-block", () => {
    const a = session("s1");
    const { after } = play(
      [a.entry("b", 1, "BEGIN", "begin", "3/1"), a.entry("x", 2, "INSERT", "insert", "3/1")],
      {
        miscLogged: true,
      },
    );
    expect(after).toEqual({ b: "unknown log-ended", x: "unknown log-ended" });
  });
});
