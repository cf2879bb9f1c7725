/**
 * `auditpipe run` end to end on the outcome workload (fixtures/src/outcome-session.ts) of a real
 * PostgreSQL 15 + pgaudit 1.7: one sidecar per format — csvlog, jsonlog and stderr files, and
 * syslog through a real rsyslog forwarding to the sidecar's receiver — and each ships every entry
 * with its outcome (or `pending` and an outcome line later) equal to the truth the workload was
 * written with, and every refused statement and failed login as an attempt.
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
import {
  logSettled,
  SYSLOG_TEST_TIMEOUT_MS,
  shippedLines,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { getJson, type SidecarProcess, spawnSidecar } from "./_sidecar.ts";

interface Line {
  record: "entry" | "outcome" | "attempt";
  pid: number | null;
  session_id: string | null;
  session_line: number | null;
  source: { file: string; offset: number };
  outcome?: string;
  sqlstate: string | null;
  statement?: string | null;
  user?: string | null;
}

const fixture = OUTCOME_CASES.find((c) => c.name === "outcomes")!;

/** The entries of the given processes with their final outcome (an outcome line's, where shipped pending), per pid in order. */
function finals(lines: Line[], pids: Set<string>): string[] {
  const id = (l: Line) => `${l.source.file}@${l.source.offset}`;
  const later = new Map(lines.filter((l) => l.record === "outcome").map((l) => [id(l), l]));
  const perPid = new Map<string, number>();
  return lines
    .filter((l) => l.record === "entry" && pids.has(String(l.pid)))
    .sort((a, b) =>
      a.source.file < b.source.file
        ? -1
        : a.source.file > b.source.file
          ? 1
          : a.source.offset - b.source.offset,
    )
    .map((e) => {
      const k = perPid.get(String(e.pid)) ?? 0;
      perPid.set(String(e.pid), k + 1);
      const o = e.outcome === "pending" ? later.get(id(e)) : e;
      return `${e.pid}#${k} ${o?.outcome ?? "pending"} ${o?.sqlstate ?? null}`;
    });
}

describe("auditpipe run: outcomes on a real workload, every format", () => {
  it(
    "ships each entry's outcome (or pending and its outcome line) and every attempt equal to the truth: csvlog, jsonlog, stderr files and syslog received",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-run-outcomes-"));
      const sidecars: SidecarProcess[] = [];
      const common = (name: string) => [
        "--sink",
        join(work, name, "sink"),
        "--state",
        join(work, name, "state"),
        "--listen",
        "127.0.0.1:0",
        "--prefix",
        fixture.logLinePrefix,
        "--pgaudit-log",
        "all",
        "--batch-max-entries",
        "5", // small batches: many entries ship pending, their outcome lines follow
        "--batch-max-age-ms",
        "100",
      ];
      let rsyslog: Awaited<ReturnType<typeof startRsyslog>> | undefined;
      let pg: Awaited<ReturnType<typeof startPostgres>> | undefined;
      try {
        const syslog = spawnSidecar(["--syslog", "tcp://127.0.0.1:0", ...common("syslog")]);
        sidecars.push(syslog);
        await syslog.url();
        rsyslog = await startRsyslog({
          forward: [
            {
              protocol: "tcp",
              port: await syslog.syslogTcpPort(),
              format: "rfc5424",
              framing: "octet-counted",
            },
          ],
        });
        pg = await startPostgres({
          logDestination: ["csvlog", "jsonlog", "stderr", "syslog"],
          logLinePrefix: fixture.logLinePrefix,
          pgaudit: fixture.pgaudit,
          settings: {
            log_connections: true,
            log_disconnections: true,
            lc_messages: "C",
            max_prepared_transactions: 5,
            syslog_facility: "local0",
            syslog_ident: "postgres",
          },
        });
        for (const format of ["csvlog", "jsonlog", "stderr"])
          sidecars.push(spawnSidecar(["--log-dir", pg.logDir, "--format", format, ...common(format)]));
        await Promise.all(sidecars.map((s) => s.url()));
        await prepareOutcomeCluster(pg);
        await logSettled(pg.logDir);
        const csv = pg.currentLogfiles().csvlog!;
        const start = statSync(csv).size;
        await runOutcomeSession(pg);
        await logSettled(pg.logDir);
        const truth = outcomeTruth(readFileSync(csv).subarray(start), {
          misc: true,
          vxid: true,
          sqlstate: true,
        });
        const pids = new Set(truth.entries.map((e) => e.key.split("#")[0]!));
        const want = truth.entries.map((e) => `${e.key} ${e.outcome} ${e.sqlstate}`).sort();
        const wantAttempts = truth.attempts.map((a) => `${a.tag} ${a.sqlstate} ${a.user}`).sort();

        for (const name of ["csvlog", "jsonlog", "stderr", "syslog"]) {
          const sink = join(work, name, "sink");
          await waitUntil(
            () => {
              const got = finals(shippedLines<Line>(sink), pids);
              return got.length >= want.length && !got.some((g) => g.includes(" pending "));
            },
            SYSLOG_TEST_TIMEOUT_MS,
            () => {
              const stuck = finals(shippedLines<Line>(sink), pids).filter((g) => g.includes(" pending "));
              const last = shippedLines<Line>(sink)
                .filter((l) => stuck.some((g) => g.startsWith(`${l.pid}#`)))
                .slice(-6);
              return `${name}: ${stuck.length} entries still pending: ${stuck.slice(0, 5).join(", ")}; the last lines of their processes: ${JSON.stringify(last)}`;
            },
            200,
          );
          const lines = shippedLines<Line>(sink);
          expect(finals(lines, pids).sort(), name).toEqual(want);
          const attempts = lines
            .filter(
              (l) => l.record === "attempt" && (stepTag(l.statement) !== undefined || l.user === "mallory"),
            )
            .map((l) => `${stepTag(l.statement)} ${l.sqlstate} ${l.user}`);
          expect(attempts.sort(), name).toEqual(wantAttempts);
          expect(
            lines.some((l) => l.record === "outcome"),
            `${name}: the pending path ran`,
          ).toBe(true);
        }
        // The meter counted them too.
        const volume = await getJson<{ outcomes: { failed: number; attempts: { count: number } } }>(
          `${await sidecars[1]!.url()}/v1/volume`,
        );
        expect(volume.outcomes.failed).toBe(truth.counts.failed);
        expect(volume.outcomes.attempts.count).toBe(truth.attempts.length);
        for (const s of sidecars) s.child.kill("SIGTERM");
        for (const s of sidecars) expect((await s.exited).code).toBe(0);
      } finally {
        for (const s of sidecars) if (s.child.exitCode === null) s.child.kill("SIGKILL");
        await pg?.stop();
        await rsyslog?.stop();
        rmSync(work, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS * 3,
  );
});
