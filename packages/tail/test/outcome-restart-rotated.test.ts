/**
 * A restart that finds the stream rotated past a file it had shipped to its end: the file's
 * checkpoint (not finished yet) keeps the outcome state at its end, the newer file's keeps none
 * (its lane had not handed a batch over, or it appeared while the source was down). The older
 * file's lane then reads no byte; the newer file's lane must still take over that state, or the
 * entries it holds undecided never get their outcome line (run-kill9-outcomes failed so once).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { shippedLines, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

interface Line {
  record: "entry" | "outcome" | "attempt";
  session_id: string;
  session_line: number;
  outcome?: string;
}

const SESSION = "6b098eeb.4eaa";
const PID = 20138;

/** One csvlog record of the session, as PostgreSQL 15 writes it. */
function csvRecord(line: number, tag: string, vxid: string, message: string): string {
  const quoted = `"${message.replaceAll('"', '""')}"`;
  return `2026-11-27 14:08:43.${String(100 + line).padStart(3, "0")} UTC,"app","postgres",${PID},"[local]",${SESSION},${line},"${tag}",2026-11-27 14:08:43 UTC,${vxid},0,LOG,00000,${quoted},,,,,,,,,"","client backend",,0\n`;
}

const audit = (id: number, tag: string, text: string) =>
  `AUDIT: SESSION,${id},1,${tag === "INSERT" ? "WRITE" : "MISC"},${tag},,,${text},<none>`;

describe("FileSource restarted after the stream rotated past a file shipped to its end", () => {
  let work: string | undefined;
  afterEach(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("the newer file's lane takes over the older file's outcome state: the open block's entries get their outcome lines", async () => {
    work = mkdtempSync(join(tmpdir(), "auditpipe-restart-rotated-"));
    const logDir = join(work, "log");
    const sinkDir = join(work, "sink");
    const source = () =>
      new FileSource({
        logDir,
        format: "csvlog",
        stateDir: join(work!, "state"),
        sink: new LocalDirSink({ dir: sinkDir }),
        batch: { maxAgeMs: 20 },
        quietMs: 20,
        pollIntervalMs: 20,
        outcome: { miscLogged: true, holdMs: 0 },
      });
    mkdirSync(logDir);
    const older = join(logDir, "postgresql-1.csv");
    writeFileSync(
      older,
      csvRecord(1, "authentication", "5/1", "connection authorized: user=app database=postgres") +
        csvRecord(2, "BEGIN", "5/2", audit(1, "BEGIN", "BEGIN")) +
        csvRecord(3, "INSERT", "5/2", audit(2, "INSERT", "INSERT INTO t VALUES (1)")),
    );
    const past = new Date(Date.now() - 60_000);
    utimesSync(older, past, past);
    let src = source();
    await src.start();
    try {
      // Both entries shipped pending, and the file's checkpoint is at its end with the join's state.
      await waitUntil(
        () => {
          const saved = JSON.parse(readFileSync(join(work!, "state", "checkpoints.json"), "utf8"))
            .checkpoints as { position: number; outcome?: unknown }[];
          return (
            shippedLines<Line>(sinkDir).filter((l) => l.outcome === "pending").length === 2 &&
            saved.some((c) => c.position === readFileSync(older).length && c.outcome !== undefined)
          );
        },
        30_000,
        () => "the open block's entries did not ship pending",
      );
    } finally {
      await src.stop();
    }
    const saved = JSON.parse(readFileSync(join(work, "state", "checkpoints.json"), "utf8")).checkpoints as {
      done: boolean;
    }[];
    expect(saved.map((c) => c.done)).toEqual([false]); // the newest file: not finished

    // Rotated while the source was down: the block rolls back in the newer file.
    writeFileSync(
      join(logDir, "postgresql-2.csv"),
      csvRecord(4, "ROLLBACK", "5/2", audit(3, "ROLLBACK", "ROLLBACK")) +
        csvRecord(
          5,
          "idle",
          "",
          "disconnection: session time: 0:00:00.100 user=app database=postgres host=[local]",
        ),
    );
    src = source();
    await src.start();
    try {
      await waitUntil(
        () => shippedLines<Line>(sinkDir).filter((l) => l.record === "outcome").length >= 2,
        30_000,
        () => `no outcome lines for the open block's entries: ${JSON.stringify(shippedLines<Line>(sinkDir))}`,
      );
    } finally {
      await src.stop();
    }
    const lines = shippedLines<Line>(sinkDir);
    const outcomes = lines
      .filter((l) => l.record === "outcome")
      .map((l) => `${l.session_line} ${l.outcome}`)
      .sort();
    expect(outcomes).toEqual(["2 rolled_back", "3 rolled_back"]);
  }, 60_000);
});
