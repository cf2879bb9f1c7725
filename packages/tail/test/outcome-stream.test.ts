/**
 * The file pipeline's outcome stage on a real PostgreSQL 15 + pgaudit 1.7: what it ships (each
 * entry with its outcome, or `pending` and an outcome line in a later batch, and the attempts)
 * equals the truth of the outcome workload (fixtures/src/outcome-session.ts, read off the
 * csvlog by csv-parse); a transaction open across a rotation, and across a restart, ends with
 * its outcome line.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  OUTCOME_CASES,
  outcomeTruth,
  prepareOutcomeCluster,
  runOutcomeSession,
  stepTag,
} from "@auditpipe/fixtures";
import type { LogFormat } from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { logSettled, type PostgresCluster, shippedLines, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

interface Line {
  record: "entry" | "outcome" | "attempt";
  pid?: number | null;
  session_id: string | null;
  session_line: number | null;
  source: { file: string; offset: number };
  outcome?: string;
  sqlstate: string | null;
  statement?: string | null;
  user?: string | null;
}

/**
 * Each entry's final outcome: its own, or (shipped pending) its one outcome line's. Entries before
 * `from` (the test kit's own session, still open) may stay pending.
 */
function finalOutcomes(
  lines: Line[],
  from = 0,
): { entries: (Line & { final: string })[]; problems: string[] } {
  const id = (l: Line) => `${l.source.file}@${l.source.offset}`;
  const later = new Map<string, Line[]>();
  for (const l of lines) if (l.record === "outcome") later.set(id(l), [...(later.get(id(l)) ?? []), l]);
  const problems: string[] = [];
  const entries = lines
    .filter((l) => l.record === "entry")
    .map((e) => {
      const followUps = later.get(id(e)) ?? [];
      later.delete(id(e));
      if (
        e.outcome === "pending" &&
        followUps.length !== 1 &&
        (e.source.offset >= from || followUps.length > 1)
      )
        problems.push(`${id(e)}: pending with ${followUps.length} outcome lines`);
      if (e.outcome !== "pending" && followUps.length > 0) problems.push(`${id(e)}: decided and given again`);
      const last = followUps.at(-1);
      if (last && (last.session_id !== e.session_id || last.session_line !== e.session_line))
        problems.push(`${id(e)}: outcome line names another session line`);
      return { ...e, final: `${last?.outcome ?? e.outcome} ${last ? last.sqlstate : e.sqlstate}` };
    });
  for (const key of later.keys()) problems.push(`${key}: an outcome line for no entry`);
  return { entries, problems };
}

const fixture = OUTCOME_CASES.find((c) => c.name === "outcomes")!;

describe("FileSource: outcomes of a real workload", () => {
  let pg: PostgresCluster;
  let work: string;
  let window: { start: number; end: number };
  let csv: string;
  /** Where the workload starts in each file. */
  const starts = new Map<LogFormat, number>();

  beforeAll(async () => {
    pg = await startPostgres({
      logDestination: ["csvlog", "stderr"],
      logLinePrefix: fixture.logLinePrefix,
      logFilename: "postgresql.log",
      pgaudit: fixture.pgaudit,
      settings: {
        log_connections: true,
        log_disconnections: true,
        lc_messages: "C",
        max_prepared_transactions: 5,
      },
    });
    await prepareOutcomeCluster(pg);
    work = mkdtempSync(join(tmpdir(), "auditpipe-outcome-"));
    csv = pg.currentLogfiles().csvlog!;
    await logSettled(pg.logDir);
    const start = statSync(csv).size;
    starts.set("csvlog", start);
    starts.set("stderr", statSync(pg.currentLogfiles().stderr!).size);
    await runOutcomeSession(pg);
    await logSettled(pg.logDir);
    window = { start, end: statSync(csv).size };
  });
  afterAll(async () => {
    await pg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it.each([
    { format: "csvlog" as LogFormat, holdMs: 0, maxEntries: 3 },
    { format: "csvlog" as LogFormat, holdMs: 2_000, maxEntries: 10_000 },
    { format: "stderr" as LogFormat, holdMs: 0, maxEntries: 4 },
    { format: "stderr" as LogFormat, holdMs: 2_000, maxEntries: 5 },
  ])(
    "$format, batches of $maxEntries held $holdMs ms: every entry's final outcome and every attempt equal the truth",
    async ({ format, holdMs, maxEntries }) => {
      const dir = mkdtempSync(join(work, `${format}-`));
      const source = new FileSource({
        logDir: pg.logDir,
        format,
        prefix: fixture.logLinePrefix,
        stateDir: join(dir, "state"),
        sink: new LocalDirSink({ dir: join(dir, "sink") }),
        batch: { maxEntries, maxAgeMs: 50 },
        outcome: { miscLogged: true, holdMs },
      });
      const truth = outcomeTruth(readFileSync(csv).subarray(window.start, window.end), {
        misc: true,
        vxid: true,
        sqlstate: true,
      });
      await source.start();
      try {
        // Every entry of the workload has its final outcome (the sessions all ended).
        await waitUntil(
          () => {
            const { entries, problems } = finalOutcomes(
              shippedLines<Line>(join(dir, "sink")),
              starts.get(format),
            );
            const from = starts.get(format)!;
            return (
              problems.length === 0 &&
              entries.filter((e) => e.source.offset >= from && !e.final.startsWith("pending")).length >=
                truth.entries.length
            );
          },
          60_000,
          () =>
            `outcomes: ${JSON.stringify(finalOutcomes(shippedLines<Line>(join(dir, "sink")), starts.get(format)).problems.slice(0, 5))}`,
        );
      } finally {
        await source.stop();
      }
      const lines = shippedLines<Line>(join(dir, "sink"));
      const { entries, problems } = finalOutcomes(lines, starts.get(format));
      expect(problems).toEqual([]);
      // The workload's entries: those of its sessions (pids), in file order per pid.
      const workload = entries
        .filter((e) => e.source.offset >= starts.get(format)!)
        .sort((a, b) => a.source.offset - b.source.offset);
      const pids = new Set(truth.entries.map((e) => e.key.split("#")[0]));
      const perPid = new Map<string, number>();
      const got = workload
        .filter((e) => pids.has(String(e.pid)))
        .map((e) => {
          const k = perPid.get(String(e.pid)) ?? 0;
          perPid.set(String(e.pid), k + 1);
          return `${e.pid}#${k} ${e.final}`;
        });
      expect(got.sort()).toEqual(truth.entries.map((e) => `${e.key} ${e.outcome} ${e.sqlstate}`).sort());
      const attempts = lines
        .filter((l) => l.record === "attempt" && l.source.offset >= starts.get(format)!)
        .map((l) => `${stepTag(l.statement)} ${l.sqlstate} ${l.user}`);
      expect(attempts.sort()).toEqual(truth.attempts.map((a) => `${a.tag} ${a.sqlstate} ${a.user}`).sort());
      if (holdMs === 0) expect(lines.some((l) => l.record === "outcome")).toBe(true); // the pending path ran
    },
  );
});

describe("FileSource: a transaction open across a rotation and across a restart", () => {
  let pg: PostgresCluster;
  let work: string;
  beforeAll(async () => {
    pg = await startPostgres({
      logDestination: ["csvlog"],
      pgaudit: { log: "all" },
      settings: { log_connections: true, log_disconnections: true, lc_messages: "C" },
    });
    await pg.query("CREATE TABLE t (id int PRIMARY KEY)");
    work = mkdtempSync(join(tmpdir(), "auditpipe-outcome-span-"));
  });
  afterAll(async () => {
    await pg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const source = (dir: string) =>
    new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(dir, "state"),
      sink: new LocalDirSink({ dir: join(dir, "sink") }),
      batch: { maxAgeMs: 50 },
      outcome: { miscLogged: true, holdMs: 0 },
    });
  /** The entries of the client's statements (tagged by a comment), and every outcome line. */
  const ours = (dir: string, tag: string) =>
    shippedLines<Line>(join(dir, "sink")).filter(
      (l) => l.record === "outcome" || (l.record === "entry" && (l.statement ?? "").includes(tag)),
    );

  it("its entries ship pending in the old file's batches and their outcome lines in the new file's", async () => {
    const dir = mkdtempSync(join(work, "rotation-"));
    const src = source(dir);
    const client = await pg.connect();
    await src.start();
    try {
      await client.query("BEGIN /* span-rot */");
      await client.query("INSERT INTO t VALUES (1) /* span-rot */");
      const before = pg.currentLogfiles().csvlog!;
      await waitUntil(
        () => ours(dir, "span-rot").filter((l) => l.record === "entry").length === 2,
        30_000,
        () => "the entries did not ship",
      );
      await pg.rotate();
      await client.query("INSERT INTO t VALUES (2) /* span-rot */");
      await client.query("COMMIT /* span-rot */");
      await client.end();
      await waitUntil(
        () => {
          const { entries } = finalOutcomes(ours(dir, "span-rot"));
          return entries.length === 4 && entries.every((e) => e.final === "succeeded null");
        },
        30_000,
        () => "no final outcome for every entry",
      );
      const lines = ours(dir, "span-rot");
      const entries = lines.filter((l) => l.record === "entry");
      expect(entries.filter((l) => l.outcome === "pending" && l.source.file === before)).toHaveLength(2);
      expect(entries.filter((l) => l.source.file !== before)).toHaveLength(2);
      // Once the new file's state is saved, the finished file keeps none (rotated files add up).
      await waitUntil(
        () => {
          const saved = JSON.parse(readFileSync(join(dir, "state", "checkpoints.json"), "utf8"))
            .checkpoints as {
            done: boolean;
            outcome?: unknown;
          }[];
          return (
            saved.some((c) => c.done) &&
            saved.every((c) => (c.done ? c.outcome === undefined : c.outcome !== undefined))
          );
        },
        30_000,
        () => `checkpoints: ${readFileSync(join(dir, "state", "checkpoints.json"), "utf8").slice(0, 2000)}`,
      );
    } finally {
      await src.stop();
    }
  });

  it("an entry settled by its session's end alone gets its outcome line in an object with no entry", async () => {
    const dir = mkdtempSync(join(work, "goodbye-"));
    const src = source(dir);
    const client = await pg.connect();
    await src.start();
    try {
      await client.query("INSERT INTO t VALUES (21) /* span-bye */");
      await waitUntil(
        () => ours(dir, "span-bye").some((l) => l.record === "entry" && l.outcome === "pending"),
        30_000,
        () => "the entry did not ship pending",
      );
      await client.end(); // the disconnection is all the log says after it
      await waitUntil(
        () => finalOutcomes(ours(dir, "span-bye")).entries.every((e) => e.final === "succeeded null"),
        30_000,
        () => "no outcome line for the entry",
      );
    } finally {
      await src.stop();
    }
  });

  it("after a stop, the restarted source decides the entries it shipped pending, from the checkpoint's state", async () => {
    const dir = mkdtempSync(join(work, "restart-"));
    let src = source(dir);
    const client = await pg.connect();
    await src.start();
    try {
      await client.query("BEGIN /* span-restart */");
      await client.query("INSERT INTO t VALUES (11) /* span-restart */");
      await client.query("INSERT INTO t VALUES (12) /* span-restart */");
      await waitUntil(
        () => ours(dir, "span-restart").filter((l) => l.record === "entry").length === 3,
        30_000,
        () => "the entries did not ship",
      );
      await src.stop();
      const checkpoints = JSON.parse(readFileSync(join(dir, "state", "checkpoints.json"), "utf8"));
      // The open block's entries are in the state the checkpoint kept (as identities, never text).
      const state = JSON.stringify(checkpoints.checkpoints.map((c: { outcome?: unknown }) => c.outcome));
      expect(state).toContain('"version":1');
      expect(state).not.toContain("INSERT");
      await client.query("ROLLBACK /* span-restart */");
      await client.end();
      src = source(dir);
      await src.start();
      await waitUntil(
        () => {
          const { entries } = finalOutcomes(ours(dir, "span-restart"));
          return entries.length === 4 && entries.every((e) => !e.final.startsWith("pending"));
        },
        // Bounded, not timed: once (CI beside another full suite) 30 s passed without it.
        90_000,
        () =>
          `no final outcome for every entry: ${JSON.stringify(
            finalOutcomes(ours(dir, "span-restart")).entries.map((e) => [e.source, e.session_line, e.final]),
          )}; checkpoints ${readFileSync(join(dir, "state", "checkpoints.json"), "utf8").slice(0, 3000)}`,
      );
      const { entries } = finalOutcomes(ours(dir, "span-restart"));
      expect(entries.map((e) => e.final)).toEqual([
        "rolled_back null",
        "rolled_back null",
        "rolled_back null",
        "succeeded null",
      ]);
    } finally {
      await src.stop();
    }
  }, 180_000);
});
