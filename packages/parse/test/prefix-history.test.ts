/**
 * How a stderr parser reads lines around a reload that changes log_line_prefix. The lines here are
 * hand-made in the shapes PostgreSQL prints (each says so); apps/cli/test/run-prefix-reload.test.ts
 * runs the same against a real server under pgbench.
 */
import { createStderrParser, type LogRecord, type MalformedRecord, PrefixHistory } from "@auditpipe/parse";
import { describe, expect, it } from "vitest";

const OLD = "%m [%p] %u@%d/%a ";
const NEW = "%m [%p] %q%u@%d ";

function read(
  lines: string[],
  history: PrefixHistory,
): { records: LogRecord[]; malformed: MalformedRecord[] } {
  const out = { records: [] as LogRecord[], malformed: [] as MalformedRecord[] };
  const parser = createStderrParser(
    { record: (r) => out.records.push(r), malformed: (m) => out.malformed.push(m) },
    { prefixHistory: history },
  );
  parser.push(Buffer.from(lines.map((l) => `${l}\n`).join("")));
  parser.end();
  return out;
}

describe("PrefixHistory", () => {
  it("the new prefix reads the old lines wrongly: a backend's own history keeps them right", () => {
    // Hand-made: backend 11 writes with OLD before and after the reload (mid-command), 12 starts after it.
    const lines = [
      "2026-11-27 10:00:00.000 UTC [11] alice@shop/app LOG:  AUDIT: SESSION,1,1,WRITE,INSERT,,,x,<none>",
      '2026-11-27 10:00:01.000 UTC [10] LOG:  parameter "log_line_prefix" changed to "%m [%p] %q%u@%d "',
      "2026-11-27 10:00:01.500 UTC [11] alice@shop/app LOG:  AUDIT: SESSION,2,1,WRITE,INSERT,,,x,<none>",
      "2026-11-27 10:00:02.000 UTC [11] alice@shop LOG:  AUDIT: SESSION,3,1,WRITE,INSERT,,,x,<none>",
      "2026-11-27 10:00:02.500 UTC [12] bob@shop LOG:  AUDIT: SESSION,1,1,WRITE,INSERT,,,x,<none>",
    ];
    const history = new PrefixHistory(OLD);
    const learned: string[] = [];
    history.onChange = (change) => learned.push(change.prefix);
    const { records, malformed } = read(lines, history);
    expect(learned).toEqual([NEW]);
    expect(malformed).toEqual([]);
    expect(records.map((r) => [r.pid, r.user, r.database, r.applicationName])).toEqual([
      [11, "alice", "shop", "app"],
      [10, null, null, null],
      // NEW reads this as database "shop/app": backend 11's database is "shop", so OLD wrote it.
      [11, "alice", "shop", "app"],
      [11, "alice", "shop", null],
      [12, "bob", "shop", null],
    ]);
  });

  it("a line two prefixes read differently, from a backend nothing is known of, is malformed", () => {
    // Hand-made: after a restart that kept both prefixes, without the change's time.
    const history = PrefixHistory.from([
      { prefix: OLD, at: undefined },
      { prefix: NEW, at: undefined },
    ]);
    const { records, malformed } = read(
      ["2026-11-27 10:00:02.000 UTC [13] carol@shop/app LOG:  AUDIT: SESSION,1,1,WRITE,INSERT,,,x,<none>"],
      history,
    );
    expect(records).toEqual([]);
    expect(malformed.map((m) => m.code)).toEqual(["AUDITPIPE_ERR_AMBIGUOUS_PREFIX"]);
  });
});
