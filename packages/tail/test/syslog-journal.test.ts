// SyslogJournal over real files, fed the PostgreSQL messages of a real syslog file (the committed
// fixtures, written by rsyslog from a real PostgreSQL + pgaudit; see fixtures/README.md).
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import {
  createStderrParser,
  createSyslogParser,
  createSyslogReassembler,
  type LogRecord,
  type MalformedRecord,
} from "@auditpipe/parse";
import { SyslogJournal } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { CHECKPOINT_FILE } from "../src/_checkpoint.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const PREFIX = readExpected(CASE).settings.log_line_prefix;
const SYSLOG = readFixture(CASE, "syslog-rfc5424.log.gz");

/** The PostgreSQL messages of the fixture's syslog file, rebuilt as a receiver rebuilds them. */
function fixtureMessages(): string[][] {
  const messages: string[][] = [];
  const reassembler = createSyslogReassembler(
    { message: (m) => messages.push(m.lines), malformed: () => {} },
    { prefix: PREFIX },
  );
  for (const line of SYSLOG.toString("utf8").split("\n")) if (line) reassembler.push(line);
  reassembler.end();
  return messages;
}

/** Records without their place (which differs between a syslog file and the journal). */
function records(parse: (sink: { record(r: LogRecord): void; malformed(e: MalformedRecord): void }) => void) {
  const out: Omit<LogRecord, "offset" | "size">[] = [];
  const malformed: MalformedRecord[] = [];
  parse({
    record: ({ offset: _o, size: _s, ...rest }) => out.push(rest),
    malformed: (e) => malformed.push(e),
  });
  return { records: out, malformed };
}

const segments = (dir: string): string[] =>
  readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort();

const work: string[] = [];
function tempDirs(): { dir: string; state: string } {
  const root = mkdtempSync(join(tmpdir(), "auditpipe-journal-"));
  work.push(root);
  return { dir: join(root, "journal"), state: root };
}
afterEach(() => {
  for (const w of work.splice(0)) rmSync(w, { recursive: true, force: true });
});

/** What the follower's checkpoint file says once it has read `names` to their end and had them acknowledged. */
function checkpointDone(state: string, dir: string, names: string[], shortBy = 0, version = 1): void {
  const checkpoints = names.map((name, i) => ({
    fingerprint: `f${i}`,
    path: join(dir, name),
    position: readFileSync(join(dir, name)).length - shortBy,
    marker: "",
    inflightEnd: null,
    done: true,
    modified: new Date().toISOString(),
  }));
  writeFileSync(join(state, CHECKPOINT_FILE), JSON.stringify({ version, checkpoints }));
}

describe("SyslogJournal", () => {
  it("holds exactly the records of the syslog file, in group commits, readable as stderr", async () => {
    const { dir, state } = tempDirs();
    const journal = await SyslogJournal.open({
      dir,
      checkpointDir: state,
      maxBytes: 64 << 20,
      prefix: PREFIX,
    });
    const messages = fixtureMessages();
    for (const lines of messages) expect(journal.append(lines)).toBe(true);
    const name = segments(dir)[0]!;
    // Committed within the window, without being asked to.
    await waitUntil(
      () => journal.stats().entries === messages.length,
      5_000,
      () => `committed ${journal.stats().entries} of ${messages.length}`,
      2,
    );
    await journal.close();
    expect(messages.length).toBeGreaterThan(100);
    // One burst, one commit (one write and one fsync).
    expect(journal.stats().commits).toBe(1);
    const text = readFileSync(join(dir, name));
    expect(journal.stats().bytes).toBe(text.length);

    const fromJournal = records((sink) => {
      const p = createStderrParser(sink, { prefix: PREFIX });
      p.push(text);
      p.end();
    });
    const fromSyslog = records((sink) => {
      const p = createSyslogParser(sink, { prefix: PREFIX });
      p.push(SYSLOG);
      p.end();
    });
    expect(fromJournal.malformed).toEqual([]);
    expect(fromJournal.records.length).toBe(messages.length);
    expect(fromJournal.records).toEqual(fromSyslog.records);
  });

  it("rotates at whole messages, becomes full at its limit, and has room again once acknowledged segments are deleted", async () => {
    const { dir, state } = tempDirs();
    const fullness: boolean[] = [];
    const journal = await SyslogJournal.open({
      dir,
      checkpointDir: state,
      maxBytes: 1 << 20, // segments of 256 KiB
      prefix: PREFIX,
      onFull: (full) => fullness.push(full),
    });
    const messages = fixtureMessages();
    let appended = 0;
    while (!journal.full) {
      for (const lines of messages) journal.append(lines);
      appended += messages.length;
      await journal.flush();
    }
    expect(fullness).toEqual([true]);
    expect(journal.stats().bytes).toBeGreaterThanOrEqual(1 << 20);
    const names = segments(dir);
    expect(names.length).toBeGreaterThanOrEqual(4);
    let total = 0;
    for (const name of names) {
      const bytes = readFileSync(join(dir, name));
      // Each segment alone reads as whole records: no message was cut by a rotation.
      const read = records((sink) => {
        const p = createStderrParser(sink, { prefix: PREFIX });
        p.push(bytes);
        p.end();
      });
      expect(read.malformed, name).toEqual([]);
      expect(bytes.length, name).toBeLessThanOrEqual(256 << 10);
      total += read.records.length;
    }
    expect(total).toBe(appended);

    const closed = names.slice(0, -1);
    // A checkpoint short of a segment's end keeps it.
    checkpointDone(state, dir, closed, 1);
    for (const name of names) journal.release(join(dir, name));
    await journal.collect();
    expect(segments(dir)).toEqual(names);
    expect(journal.full).toBe(true);
    // So does a checkpoint file the follower would set aside unread (hand-made: another version).
    checkpointDone(state, dir, closed, 0, 2);
    await journal.collect();
    expect(segments(dir)).toEqual(names);

    checkpointDone(state, dir, closed);
    await journal.collect();
    // The segment written to is never deleted, even when released.
    expect(segments(dir)).toEqual(names.slice(-1));
    expect(journal.full).toBe(false);
    expect(fullness).toEqual([true, false]);
    await journal.close();
  });

  it("on reopening, deletes acknowledged segments, cuts a segment cut inside a line back to its last line, and starts a new one", async () => {
    const { dir, state } = tempDirs();
    const messages = fixtureMessages();
    let journal = await SyslogJournal.open({ dir, checkpointDir: state, maxBytes: 64 << 20, prefix: PREFIX });
    for (const lines of messages.slice(0, 50)) journal.append(lines);
    await journal.close();
    journal = await SyslogJournal.open({ dir, checkpointDir: state, maxBytes: 64 << 20, prefix: PREFIX });
    for (const lines of messages.slice(50, 100)) journal.append(lines);
    await journal.close();
    const [first, second] = segments(dir);
    expect(segments(dir)).toHaveLength(2); // one per open
    const whole = readFileSync(join(dir, second!)).length;
    // What a crash in the middle of a write leaves (hand-made: a line without its end).
    appendFileSync(
      join(dir, second!),
      "2026-11-24 19:00:00.000 UTC [7]: [1-1] user=a,db=b LOG:  AUDIT: SESS",
    );
    checkpointDone(state, dir, [first!]);

    journal = await SyslogJournal.open({ dir, checkpointDir: state, maxBytes: 64 << 20, prefix: PREFIX });
    const now = segments(dir);
    expect(now).not.toContain(first);
    expect(now[0]).toBe(second);
    expect(readFileSync(join(dir, second!)).length).toBe(whole);
    expect(now).toHaveLength(2);
    expect(now[1]! > second!).toBe(true); // a new segment for the new start
    expect(journal.stats().segments).toBe(2);
    expect(journal.stats().bytes).toBe(whole);
    await journal.close();
  });
});
