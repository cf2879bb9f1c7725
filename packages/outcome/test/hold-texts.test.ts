/**
 * `holdTexts`: a join that hashes a statement's text only where it compares it decides every
 * real capture exactly as one that hashes every text at once, wherever its owner lets go of the
 * texts (releaseTexts after every record, every few records, never but at snapshots), and its
 * snapshots are the same.
 */
import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import { OutcomeJoin, type OutcomeJoinOptions } from "@auditpipe/outcome";
import { auditEntry, gc, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { captures, DIR, type Rec, read } from "./_captures.ts";

/** Every decision, attempt and event, and a snapshot every 25 records and at the end. */
function run(records: Rec[], holdTexts: boolean, releaseEvery: number): string[] {
  const log: string[] = [];
  const options: OutcomeJoinOptions<number> = {
    decided: (h, outcome, sqlstate, reason) => log.push(`${h} ${outcome} ${sqlstate} ${reason}`),
    attempt: (r) => log.push(`attempt ${r.offset}`),
    event: (e) => log.push(`event ${e.kind} ${e.record.offset}`),
    holdTexts,
  };
  const j = new OutcomeJoin<number>(options);
  records.forEach(({ record, entry }, i) => {
    if (entry) j.record(record, entry, i);
    else j.record(record);
    if (holdTexts && releaseEvery > 0 && i % releaseEvery === 0) j.releaseTexts();
    if (i % 25 === 24) log.push(JSON.stringify(j.snapshot((h) => h)));
  });
  log.push(JSON.stringify(j.snapshot((h) => h)));
  j.end();
  return log;
}

describe("OutcomeJoin with holdTexts", () => {
  it.each(captures)(
    "$name/$file: decides and snapshots as a join that hashes every text",
    ({ name, file, format, prefix }) => {
      const records = read(readFixture(join(DIR, name), file), format, prefix);
      const eager = run(records, false, 0);
      expect(eager.length).toBeGreaterThan(50);
      for (const every of [0, 1, 2, 3, 7, 40])
        expect(run(records, true, every), `release every ${every}`).toEqual(eager);
    },
  );

  it("keeps no view of the parser's text once it let go of the texts", () => {
    const CHUNK = 64 << 10;
    const cut = (text: string): string => {
      const chunk = Buffer.alloc(CHUNK, " ");
      chunk.write(text, 100, "latin1");
      return chunk.toString("latin1").slice(100, 100 + text.length);
    };
    gc();
    const before = process.memoryUsage().heapUsed;
    const j = new OutcomeJoin<string>({ decided() {}, holdTexts: true });
    for (let i = 0; i < 300; i++) {
      const record = logRecord({ pid: 1000 + i, sessionId: `s${i}`, virtualTransactionId: `${i}/1` });
      const entry = auditEntry({ statementId: 1, command: "BEGIN", class: "MISC", statement: cut("BEGIN;") });
      j.record(record, entry, `${i}.1`);
      j.record(
        logRecord({ pid: 1000 + i, sessionId: `s${i}`, virtualTransactionId: `${i}/1` }),
        auditEntry({
          statementId: 2,
          command: "INSERT",
          class: "WRITE",
          statement: cut(`INSERT INTO t VALUES (${i});`),
        }),
        `${i}.2`,
      );
    }
    j.releaseTexts();
    gc();
    expect(j.undecided).toBe(600);
    expect((process.memoryUsage().heapUsed - before) / 1e6).toBeLessThan(5);
  });
});
