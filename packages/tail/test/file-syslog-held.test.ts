import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  duplicates,
  SYSLOG_TEST_TIMEOUT_MS,
  shippedKeys,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";

const CHILD = fileURLToPath(new URL("./_syslog-file-child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
/** %c:%l give each shipped entry the key csvlog has (session_id:session_line_num). */
const PREFIX = "%m [%p] %q%u@%d %c:%l ";
const HELD = "held until this backend logs again";

interface Child {
  process: ChildProcess;
  exited: Promise<number | null>;
}

function startChild(args: string[]): Child {
  const child = spawn(process.execPath, ["--conditions=@auditpipe/source", CHILD, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
  return { process: child, exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
}

/** The checkpoint the source saved for its one file, if any yet. */
interface SavedCheckpoint {
  position: number;
  inflightEnds?: number[];
  resume?: number;
  held?: number[];
}

function checkpointOf(stateDir: string): SavedCheckpoint | undefined {
  try {
    const state = JSON.parse(readFileSync(join(stateDir, "checkpoints.json"), "utf8")) as {
      checkpoints: SavedCheckpoint[];
    };
    return state.checkpoints[0];
  } catch {
    return undefined;
  }
}

/** [start, end) of the line of `file` holding `text`. */
function lineOf(file: string, text: string): [number, number] {
  const bytes = readFileSync(file);
  const at = bytes.indexOf(text);
  if (at < 0) throw new Error(`${text} is not in ${file}`);
  return [bytes.lastIndexOf("\n", at) + 1, bytes.indexOf("\n", at) + 1];
}

/** A real PostgreSQL logging to csvlog (the oracle) and through a real rsyslog to a file, with two sessions. */
async function cluster() {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-syslog-held-"));
  const stateDir = join(work, "state");
  const sinkDir = join(work, "sink");
  const rsyslog = await startRsyslog();
  const pg = await startPostgres({
    logDestination: ["csvlog", "syslog"],
    logLinePrefix: PREFIX,
    pgaudit: { log: "all" },
  });
  const file = rsyslog.files.rfc3164;
  const sessions = [await pg.connect(), await pg.connect()] as const;
  return {
    stateDir,
    sinkDir,
    pg,
    file,
    sessions,
    /** The child's arguments: a file counts as quiet after `quietMs`; batches of `maxEntries`. */
    args: (quietMs: number, maxEntries: number) =>
      [dirname(file), basename(file), PREFIX, stateDir, sinkDir, quietMs, maxEntries].map(String),
    /** session_id:session_line of the audit entries in csvlog (those containing `text`). */
    auditKeys(text = ""): string[] {
      const rows = parse(readFileSync(pg.currentLogfiles().csvlog!), {
        relax_column_count: true,
      }) as string[][];
      return rows
        .filter((r) => r[13]?.startsWith("AUDIT: ") && r[13].includes(text))
        .map((r) => `${r[5]}:${r[6]}`);
    },
    /** Waits until rsyslog and the logging collector (csvlog) both wrote `marker`: they write asynchronously. */
    async waitForBoth(marker: string): Promise<void> {
      const csvlog = pg.currentLogfiles().csvlog!;
      await waitUntil(
        () => [file, csvlog].every((f) => readFileSync(f, "utf8").includes(marker)),
        10_000,
        () => "rsyslog or the logging collector did not write the marker",
        50,
      );
    },
    /** Waits until the checkpoint is at the file's end with nothing held: every entry acknowledged. */
    async waitAllAcknowledged(): Promise<void> {
      await waitUntil(
        () => {
          const c = checkpointOf(stateDir);
          return c?.position === statSync(file).size && c.resume === undefined;
        },
        30_000,
        () => `checkpoint ${JSON.stringify(checkpointOf(stateDir))} not at the end, ${statSync(file).size}`,
        50,
      );
    },
    async stop(): Promise<void> {
      for (const session of sessions) await session.end();
      await pg.stop();
      await rsyslog.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

describe("FileSource on a syslog file: a pid's held last message across kill -9", () => {
  it(
    "ships the message a pid still held when the source was killed, once, and nothing acknowledged twice",
    async () => {
      const c = await cluster();
      const [held, last] = c.sessions;
      let child: Child | undefined;
      try {
        // One backend logs one message and then nothing: syslog never marks a message's last chunk,
        // so the parser holds it until that pid logs again. Others log on after it.
        await held.query(`SELECT '${HELD}' AS held`);
        await c.pg.pgbench(["-i", "-s", "1", "-q"]);
        await c.pg.pgbench(["-n", "-c", "2", "-t", "30"]);
        // Its first message goes out when its second one starts: once the checkpoint is past the
        // first, everything released before it is acknowledged.
        await last.query("SELECT 'released by the next one' AS first");
        await last.query("SELECT 'held, the last of its backend' AS second");
        await c.waitForBoth("held, the last of its backend");
        const [heldStart, heldEnd] = lineOf(c.file, HELD);
        const [, firstEnd] = lineOf(c.file, "released by the next one");
        const heldKey = c.auditKeys(HELD)[0]!;

        // The file is never quiet long enough to release anything: only a pid logging again does.
        // Many small batches after the held message.
        child = startChild(c.args(1e9, 20));
        await waitUntil(
          () => (checkpointOf(c.stateDir)?.position ?? 0) >= firstEnd,
          30_000,
          () => `checkpoint ${JSON.stringify(checkpointOf(c.stateDir))} not past byte ${firstEnd}`,
          20,
        );
        // Acknowledged past the held message's bytes, while it was still held.
        expect(checkpointOf(c.stateDir)!.position).toBeGreaterThan(heldEnd);
        expect(shippedKeys(c.sinkDir)).not.toContain(heldKey);
        child.process.kill("SIGKILL");
        await child.exited;
        const saved = checkpointOf(c.stateDir)!;

        // Its pid logs again after the crash, then the load ends with a marker.
        await held.query("SELECT 'after the kill' AS after");
        await last.query("SELECT 'end of the test load' AS marker");
        await c.waitForBoth("end of the test load");
        const written = c.auditKeys();

        child = startChild(c.args(50, 20));
        await c.waitAllAcknowledged();
        child.process.kill("SIGTERM");
        expect(await child.exited).toBe(0);
        child = undefined;

        const shipped = shippedKeys(c.sinkDir);
        expect(shipped).toContain(heldKey);
        expect(duplicates(shipped)).toEqual([]);
        expect(new Set(shipped)).toEqual(new Set(written));
        expect(written.length).toBeGreaterThan(200);
        // The checkpoint saved before the crash said to read the held message again.
        expect(saved.resume).toBeLessThanOrEqual(heldStart);
        expect(saved.held).toContain(heldStart);
      } finally {
        child?.process.kill("SIGKILL");
        await c.stop();
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );

  it(
    "ships messages released behind the last batch end a replay cuts, though the file never grows again",
    async () => {
      const c = await cluster();
      const [last, held] = c.sessions;
      let child: Child | undefined;
      try {
        // `last` is seen first: released at the end first, its message reaches the file's end and
        // the replay cuts there; the held messages of the others come out behind that end.
        await last.query("SELECT 'seen first' AS first");
        await held.query(`SELECT '${HELD}' AS held`);
        await c.pg.pgbench(["-i", "-s", "1", "-q"]);
        await c.pg.pgbench(["-n", "-c", "2", "-t", "10"]);
        await last.query("SELECT 'end of the test load' AS marker");
        await c.waitForBoth("end of the test load");
        const written = c.auditKeys();
        const size = statSync(c.file).size;

        // The sink cannot be written (its directory is a file): the one batch of the whole file is
        // recorded before it goes to the sink (its end is the file's end), never acknowledged.
        writeFileSync(c.sinkDir, "");
        child = startChild(c.args(50, 100_000));
        await waitUntil(
          () => checkpointOf(c.stateDir)?.inflightEnds?.at(-1) === size,
          30_000,
          () => `checkpoint ${JSON.stringify(checkpointOf(c.stateDir))} records no batch ending at ${size}`,
          20,
        );
        child.process.kill("SIGKILL");
        await child.exited;

        rmSync(c.sinkDir);
        child = startChild(c.args(50, 100_000));
        await c.waitAllAcknowledged();
        child.process.kill("SIGTERM");
        expect(await child.exited).toBe(0);
        child = undefined;

        expect(statSync(c.file).size).toBe(size);
        const shipped = shippedKeys(c.sinkDir);
        expect(duplicates(shipped)).toEqual([]);
        expect(new Set(shipped)).toEqual(new Set(written));
        expect(written.length).toBeGreaterThan(100);
      } finally {
        child?.process.kill("SIGKILL");
        await c.stop();
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );
});
