import { compilePrefix, createPrefixFields } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

function match(prefix: string, line: string) {
  const out = createPrefixFields();
  const end = compilePrefix(prefix).match(line, 0, out);
  return { end, rest: end < 0 ? null : line.slice(end), ...out };
}

// Lines below are shaped as PostgreSQL 15's log_status_format() prints them (elog.c).
describe("compilePrefix", () => {
  it("matches the default prefix and finds the severity", () => {
    const m = match("%m [%p] ", "2026-11-23 07:45:32.714 UTC [12538] LOG:  listening on x");
    expect(m.rest).toBe("listening on x");
    expect(m.timestamp).toBe("2026-11-23 07:45:32.714 UTC");
    expect(m.pid).toBe(12538);
    expect(m.severity).toBe("LOG");
    expect(m.prefixEnd).toBe(36);
  });

  it("reads every escape", () => {
    const prefix = "%t|%n|%s|%a|%u|%d|%r|%h|%b|%p|%P|%i|%e|%c|%l|%v|%x|%Q|%%|";
    const line =
      "2026-11-23 07:45:32 UTC|1795420000.123|2026-11-23 07:40:00 UTC|my app|bob smith|db 1|127.0.0.1(5432)|127.0.0.1|client backend|4242|4200|SELECT|42P01|6b03ef1c.3103|7|3/12|0|-123456789|%|ERROR:  boom";
    const m = match(prefix, line);
    expect(m).toMatchObject({
      rest: "boom",
      timestamp: "2026-11-23 07:45:32 UTC",
      sessionStart: "2026-11-23 07:40:00 UTC",
      applicationName: "my app",
      user: "bob smith",
      database: "db 1",
      remoteHost: "127.0.0.1:5432",
      backendType: "client backend",
      pid: 4242,
      leaderPid: 4200,
      commandTag: "SELECT",
      sqlState: "42P01",
      sessionId: "6b03ef1c.3103",
      sessionLine: 7,
      virtualTransactionId: "3/12",
      transactionId: "0",
      queryId: "-123456789",
      severity: "ERROR",
    });
  });

  it("uses %n when it is the only time", () => {
    expect(match("%n ", "1795420000.123 LOG:  x").timestamp).toBe("1795420000.123");
  });

  it("strips padding, right- and left-aligned, and keeps longer values whole", () => {
    const m = match("%10u|%-10d|%5p|%-3a|", "       bob|postgres  |   42|my app|LOG:  x");
    expect(m).toMatchObject({ user: "bob", database: "postgres", pid: 42, applicationName: "my app" });
    // an absent value prints only the padding
    expect(match("[%-6P] ", "[      ] LOG:  x").leaderPid).toBeNull();
  });

  it("stops at %q for processes without a session", () => {
    const prefix = "%m [%p] %q%u@%d/%a ";
    const bg = match(prefix, "2026-11-23 07:45:32.719 UTC [12542] LOG:  database system was shut down");
    expect(bg).toMatchObject({
      pid: 12542,
      user: null,
      database: null,
      rest: "database system was shut down",
    });
    const fg = match(
      prefix,
      "2026-11-23 07:45:32.794 UTC [12546] [unknown]@[unknown]/[unknown] LOG:  connection",
    );
    expect(fg).toMatchObject({ user: null, database: null, applicationName: null, rest: "connection" });
  });

  it("backtracks over spaces and separators inside free-text values", () => {
    const m = match("%m [%p] %u@%d/%a ", "2026-11-23 07:45:32.814 UTC [1] a@b@c/d/e my app x LOG:  AUDIT: x");
    expect(m).toMatchObject({
      user: "a",
      database: "b@c",
      applicationName: "d/e my app x",
      rest: "AUDIT: x",
    });
  });

  it("ignores unknown escapes and treats %% as a percent sign", () => {
    expect(match("%% %y%p ", "% 7 LOG:  x").pid).toBe(7);
  });

  it("prints [local] for %r on a unix socket", () => {
    expect(match("%r ", "[local] LOG:  x").remoteHost).toBe("[local]");
  });

  it("rejects lines that do not carry the prefix", () => {
    expect(match("%m [%p] ", "random output from an extension").end).toBe(-1);
    expect(match("%m [%p] ", "2026-11-23 07:45:32.714 UTC [x] LOG:  y").end).toBe(-1);
    expect(match("%m [%p] ", "2026-11-23 07:45:32.714 UTC [1] LOG: y").end).toBe(-1);
  });

  it("handles an empty prefix", () => {
    expect(match("", "LOG:  hello").rest).toBe("hello");
  });
});
