/**
 * kill -9 with outcomes in flight: entries shipped `pending` before the kill get exactly one
 * outcome line after it, no entry is lost or stored twice, and every object the sidecar wrote
 * before a kill holds the same bytes after the replays (the join restarts from the state the
 * checkpoint kept, so a replayed batch decides as the first run did).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import {
  duplicates,
  logSettled,
  shippedKeys,
  shippedLines,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

interface Line {
  record: "entry" | "outcome" | "attempt";
  session_id: string;
  session_line: number;
  source: { file: string; offset: number };
  outcome?: string;
  statement?: string;
}

/** Every stored object's bytes, by path. */
function objects(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.ndjson\.(zst|gz)$/.test(e.name)) out.set(path, readFileSync(path)); // zstd: the default
    }
  };
  try {
    walk(dir);
  } catch {}
  return out;
}

describe("auditpipe run killed with SIGKILL while outcomes are pending", () => {
  it("gives each pending entry one outcome line after the restart, loses and repeats nothing, and rewrites no object differently", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      rotationSizeKb: 400,
      pgaudit: { log: "all" },
      settings: { log_connections: true, log_disconnections: true },
    });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-kill9-outcomes-"));
    const sinkDir = join(work, "sink");
    const args = [
      "--log-dir",
      pg.logDir,
      "--format",
      "csvlog",
      "--sink",
      sinkDir,
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--pgaudit-log",
      "all",
      "--batch-max-entries",
      "50", // small batches: transactions span them, entries ship pending
      "--batch-max-age-ms",
      "100",
    ];
    let sidecar = spawnSidecar(args);
    const seen = new Map<string, Buffer>();
    /** The kills, for a failure's message. */
    const events: string[] = [];
    const changed: string[] = [];
    /** Objects stored so far must keep their bytes whatever replays follow. */
    const record = (): void => {
      for (const [path, bytes] of objects(sinkDir)) {
        const before = seen.get(path);
        if (before && !before.equals(bytes)) changed.push(path);
        seen.set(path, bytes);
      }
    };
    const open = await pg.connect();
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      // A transaction open across every kill: its entries ship pending before the first.
      await open.query("CREATE TABLE kept_open (id int)");
      await open.query("BEGIN /* across kills */");
      await open.query("INSERT INTO kept_open VALUES (1) /* across kills */");
      await waitUntil(
        () =>
          shippedLines<Line>(sinkDir).some(
            (l) => l.statement?.includes("across kills") && l.outcome === "pending",
          ),
        30_000,
        () => "the open transaction's entries did not ship pending",
      );
      const load = pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "6"]);
      for (let i = 0; i < 4; i++) {
        const wait = 300 + Math.floor(Math.random() * 1000);
        await new Promise((r) => setTimeout(r, wait));
        record();
        events.push(`kill ${i} after ${wait} ms, ${seen.size} objects stored`);
        sidecar.child.kill("SIGKILL");
        await sidecar.exited;
        record();
        sidecar = spawnSidecar(args);
      }
      await load;
      await open.query("ROLLBACK /* across kills */");
      await open.end();
      await logSettled(pg.logDir);
      const written = writtenKeys(pg.logDir);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= written.length,
        60_000,
        () => "sink did not catch up",
        250,
      );
      // pgbench's sessions have ended: every entry of theirs has its final outcome.
      const settled = () => {
        const lines = shippedLines<Line>(sinkDir);
        const later = new Map<string, number>();
        for (const l of lines.filter((x) => x.record === "outcome")) {
          const key = `${l.session_id}:${l.session_line}`;
          later.set(key, (later.get(key) ?? 0) + 1);
        }
        return { lines, later };
      };
      const undecided = (): Line[] => {
        const { lines, later } = settled();
        return lines.filter(
          (l) =>
            l.record === "entry" &&
            l.outcome === "pending" &&
            !l.statement?.startsWith("CREATE EXTENSION") &&
            !later.has(`${l.session_id}:${l.session_line}`),
        );
      };
      await waitUntil(
        () => undecided().length === 0,
        60_000,
        // Which ones, and where they came from: what the next look at a failure needs (kills and restarts above).
        () =>
          `pending entries without their outcome line: ${JSON.stringify(
            undecided()
              .slice(0, 5)
              .map((l) => ({
                session: `${l.session_id}:${l.session_line}`,
                source: l.source,
                statement: l.statement?.slice(0, 60),
              })),
          )}; kills and restarts at ${JSON.stringify(events)}`,
        250,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      record();

      const keys = shippedKeys(sinkDir);
      expect(duplicates(keys)).toEqual([]);
      expect(new Set(keys)).toEqual(new Set(written));
      const { lines, later } = settled();
      // One outcome line per pending entry, none for anything else, none twice.
      const pending = new Set(
        lines
          .filter((l) => l.record === "entry" && l.outcome === "pending")
          .map((l) => `${l.session_id}:${l.session_line}`),
      );
      for (const [key, n] of later) {
        expect(pending.has(key), `${key}: an outcome line for an entry not shipped pending`).toBe(true);
        expect(n, `${key}: outcome lines`).toBe(1);
      }
      // The transaction open across the kills rolled back; pgbench's committed.
      const final = (l: Line) =>
        l.outcome === "pending"
          ? lines.find(
              (o) =>
                o.record === "outcome" && o.session_id === l.session_id && o.session_line === l.session_line,
            )?.outcome
          : l.outcome;
      // In the session's order: the objects are read in directory order, which is not upload order.
      const across = lines
        .filter((l) => l.record === "entry" && l.statement?.includes("across kills"))
        .sort((a, b) => a.session_line - b.session_line);
      expect(across.map(final)).toEqual(["rolled_back", "rolled_back", "succeeded"]);
      const bench = lines.filter(
        (l) => l.record === "entry" && l.statement?.includes("pgbench_accounts SET abalance"),
      );
      expect(bench.length).toBeGreaterThan(100);
      expect(new Set(bench.map(final))).toEqual(new Set(["succeeded"]));
      expect(seen.size).toBeGreaterThan(0); // the check above read objects: it is not vacuous
      expect(changed).toEqual([]);
    } finally {
      if (sidecar.child.exitCode === null) sidecar.child.kill("SIGKILL");
      await open.end().catch(() => {});
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
