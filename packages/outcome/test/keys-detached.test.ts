/**
 * What the join keeps of a record past the record (a session's key, user and database, a
 * transaction's vxid, a savepoint's name) must not keep alive the text it was cut from: parsers
 * hand out substrings of a whole chunk, and V8 keeps a longer substring as a view of its parent.
 * Here each is cut from a 64 KiB string of its own (hand-made records: testkit's builders).
 */
import { OutcomeJoin } from "@auditpipe/outcome";
import { auditEntry, gc, logRecord } from "@auditpipe/testkit";
import { expect, it } from "vitest";

const SESSIONS = 300;
const CHUNK = 64 << 10;

/** `text` as a substring of a CHUNK-byte string of its own. */
function cut(text: string): string {
  const chunk = Buffer.alloc(CHUNK, " ");
  chunk.write(text, 100, "latin1");
  return chunk.toString("latin1").slice(100, 100 + text.length);
}

/** Each session opens a block, sets a savepoint and writes: all undecided, all kept. */
function feed(join: OutcomeJoin<string>): void {
  for (let i = 0; i < SESSIONS; i++) {
    const vxid = `${i}/100000000000`;
    const statements = ["BEGIN;", `SAVEPOINT before_the_insert_${i};`, "INSERT INTO t VALUES (1);"];
    const commands = ["BEGIN", "SAVEPOINT", "INSERT"];
    for (const [n, statement] of statements.entries()) {
      const record = logRecord({
        pid: 1000 + i,
        sessionId: cut(`6b03ef45.${(10000 + i).toString(16)}`),
        sessionLine: n + 1,
        user: cut(`application_user_${i}`),
        database: cut(`application_database_${i}`),
        virtualTransactionId: cut(vxid),
        message: "AUDIT: …",
      });
      const entry = auditEntry({
        statementId: n + 1,
        command: commands[n]!,
        class: n < 2 ? "MISC" : "WRITE",
        statement: cut(statement),
      });
      join.record(record, entry, `${i}.${n}`);
    }
  }
}

it(`the join keeps ${SESSIONS} open sessions, not the chunks of text they were cut from`, () => {
  gc();
  const before = process.memoryUsage().heapUsed;
  const decided: string[] = [];
  const join = new OutcomeJoin<string>({ decided: (h) => decided.push(h) });
  feed(join);
  const snapshot = join.snapshot((h) => h);
  gc();
  const mb = (process.memoryUsage().heapUsed - before) / 1e6;
  expect(join.undecided).toBe(SESSIONS * 3);
  expect(snapshot.sessions).toHaveLength(SESSIONS);
  expect(decided).toEqual([]);
  expect(mb).toBeLessThan(5);
});
