// A SyslogSource feeding a SyslogJournal, composed as the sidecar composes them, over real loopback
// sockets. The frames are the lines of a real syslog file (the committed fixtures: rsyslog wrote
// them with RSYSLOG_SyslogProtocol23Format, the template it also forwards with).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import { SyslogJournal, type SyslogSource, startSyslogSource } from "@auditpipe/tail";
import { connectTcp, repoRoot, sendUdp, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_FILE } from "../src/_checkpoint.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const PREFIX = readExpected(CASE).settings.log_line_prefix;
const LINES = readFixture(CASE, "syslog-rfc5424.log.gz")
  .toString("utf8")
  .split("\n")
  .filter((l) => l.length > 0);
const LIMIT = 1 << 20;
/** How far past the limit a paused journal may get: what was read before the pause took effect. */
const SLACK = 256 << 10;

/** Marks every segment but the one written to as read to its end and acknowledged, and deletes them. */
async function acknowledgeClosed(journal: SyslogJournal, state: string): Promise<void> {
  const names = readdirSync(journal.dir)
    .filter((n) => n.endsWith(".log"))
    .sort()
    .slice(0, -1);
  const checkpoints = names.map((name) => ({
    fingerprint: name,
    path: join(journal.dir, name),
    position: Number.MAX_SAFE_INTEGER,
    marker: "",
    inflightEnd: null,
    done: true,
    modified: new Date().toISOString(),
  }));
  writeFileSync(join(state, CHECKPOINT_FILE), JSON.stringify({ version: 1, checkpoints }));
  for (const name of names) journal.release(join(journal.dir, name));
  await journal.collect();
}

describe("SyslogSource into a SyslogJournal at its limit", () => {
  it("stops reading TCP while the journal is full, loses nothing once it has room, and counts the UDP it drops", async () => {
    const state = mkdtempSync(join(tmpdir(), "auditpipe-journal-full-"));
    let pauses = 0;
    let source: SyslogSource | undefined;
    // As the sidecar wires them: a full journal pauses the source, room resumes it.
    const journal = await SyslogJournal.open({
      dir: join(state, "journal"),
      checkpointDir: state,
      maxBytes: LIMIT,
      prefix: PREFIX,
      onFull: (full) => {
        if (full) pauses++;
        if (full) source?.pause();
        else source?.resume();
      },
    });
    source = await startSyslogSource({
      listen: ["tcp://127.0.0.1:0", "udp://127.0.0.1:0"],
      prefix: PREFIX,
      onMessage: (message) => {
        if (!journal.append(message.lines)) throw new Error("a fixture message was refused");
      },
    });
    const tcp = source.addresses[0]!.port;
    const udp = source.addresses[1]!.port;
    const socket = await connectTcp(tcp);
    try {
      // Octet-counted frames, the whole file again and again: about 24 times the limit, more than
      // the kernels buffer on loopback.
      const rounds = Math.ceil((24 * LIMIT) / LINES.reduce((n, l) => n + l.length + 1, 0));
      const frames: string[] = [];
      for (let r = 0; r < rounds; r++) for (const l of LINES) frames.push(`${Buffer.byteLength(l)} ${l}`);
      let sent = false;
      socket.write(frames.join(""), () => {
        sent = true;
      });

      await waitUntil(
        () => source.paused,
        10_000,
        () => "the journal never became full",
        5,
      );
      // The sender is held back: it still has most of what it wrote, and the journal stayed near its limit.
      expect(socket.writableLength).toBeGreaterThan(LIMIT);
      expect(journal.stats().bytes).toBeLessThan(LIMIT + SLACK);

      // UDP cannot be held back: datagrams are dropped, and counted.
      await sendUdp(udp, LINES.slice(0, 20));
      await waitUntil(
        () => source.stats().dropped === 20,
        5_000,
        () => `dropped ${source.stats().dropped}`,
        5,
      );

      // Room again, each time the journal fills, until the sender is done and everything is in.
      let mostWhileFull = 0;
      await waitUntil(
        async () => {
          if (source?.paused) {
            mostWhileFull = Math.max(mostWhileFull, journal.stats().bytes);
            await acknowledgeClosed(journal, state);
          }
          return sent && source.stats().received === frames.length;
        },
        60_000,
        () => `received ${source.stats().received} of ${frames.length}`,
        5,
      );
      expect(pauses).toBeGreaterThan(3);
      expect(mostWhileFull).toBeLessThan(LIMIT + SLACK);
      socket.end();
      await source.close(); // completes the messages still open
      await journal.flush();
      const stats = source.stats();
      expect(stats.malformed).toBe(0);
      expect(stats.received).toBe(frames.length); // the 20 datagrams were not received
      expect(journal.stats().entries).toBe(stats.reassembled);
      expect(stats.reassembled).toBeGreaterThan(8 * rounds);
    } finally {
      socket.destroy();
      await source.close();
      await journal.close();
      rmSync(state, { recursive: true, force: true });
    }
  });
});
