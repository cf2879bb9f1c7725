/**
 * `auditpipe run --redact literals,parameters` as a real process over a fixture log (written by a
 * real PostgreSQL + pgaudit, fixtures/generate): what lands in the sink is redacted and marked,
 * while /v1/volume counts the bytes PostgreSQL logged.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { AUDIT_PREFIX, createParser, parseAuditPayload } from "@auditpipe/parse";
import { redactStatement } from "@auditpipe/ship";
import { repoRoot, shippedRecords, waitUntil } from "@auditpipe/testkit";
import { afterEach, expect, it } from "vitest";
import { getJson, type SidecarProcess, spawnSidecar } from "./_sidecar.ts";

interface Shipped {
  statement: string;
  parameter: string | (string | null)[];
  redacted?: string[];
}

const shipped = (dir: string): Shipped[] => shippedRecords<Shipped>(dir);

let work: string | undefined;
let sidecar: SidecarProcess | undefined;
afterEach(async () => {
  if (sidecar && sidecar.child.exitCode === null) {
    sidecar.child.kill("SIGKILL");
    await sidecar.exited;
  }
  if (work) rmSync(work, { recursive: true, force: true });
  work = undefined;
  sidecar = undefined;
});

it("run --redact literals,parameters ships redacted, marked records and meters the original bytes", async () => {
  work = mkdtempSync(join(tmpdir(), "auditpipe-run-redact-"));
  const logDir = join(work, "log");
  mkdirSync(logDir);
  const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures/cases/session-all/postgresql.csv.gz")));
  writeFileSync(join(logDir, "postgresql-2026-01-01_000000.csv"), log);
  const sinkDir = join(work, "sink");
  sidecar = spawnSidecar([
    "--log-dir",
    logDir,
    "--sink",
    sinkDir,
    "--state",
    join(work, "state"),
    "--listen",
    "127.0.0.1:0",
    "--redact",
    "literals,parameters",
    ...["--batch-max-age-ms", "100"], // the last batch not held a second
  ]);
  const url = await sidecar.url();
  // What PostgreSQL logged: the audit entries and their records' bytes in the csvlog.
  const logged = { entries: 0, bytes: 0, statements: [] as string[] };
  const parser = createParser("csvlog", {
    record(r) {
      const entry = r.message.startsWith(AUDIT_PREFIX) ? parseAuditPayload(r.message) : undefined;
      if (entry) {
        logged.statements.push(entry.statement);
        logged.entries++;
        logged.bytes += r.size;
      }
    },
    malformed() {},
  });
  parser.push(log);
  parser.end();
  let volume = { entries: 0, bytes: 0 };
  await waitUntil(
    async () => {
      volume = (await getJson<{ totals: { entries: number; bytes: number } }>(`${url}/v1/volume`)).totals;
      return volume.entries === logged.entries && shipped(sinkDir).length === volume.entries;
    },
    30_000,
    () => `metered ${volume.entries}, shipped ${shipped(sinkDir).length} of ${logged.entries} entries`,
    200,
  );
  sidecar.child.kill("SIGTERM");
  expect((await sidecar.exited).code).toBe(0);

  // Each shipped statement is the redacted form of one PostgreSQL logged (none as it was logged,
  // where redaction changes it), and says it went through redaction.
  const records = shipped(sinkDir);
  const markers = new Set(["<not logged>", "<previously logged>", "<none>"]);
  const redactedForm = (s: string): string => (markers.has(s) ? s : redactStatement(s).text);
  expect(records.map((r) => r.statement).sort()).toEqual(logged.statements.map(redactedForm).sort());
  for (const r of records)
    if (!markers.has(r.statement)) expect(r.redacted, r.statement).toContain("statement");
  const changed = logged.statements.filter((s) => redactedForm(s) !== s);
  expect(changed.length).toBeGreaterThan(10);
  const stored = new Set(records.map((r) => r.statement));
  expect(changed.filter((s) => stored.has(s))).toEqual([]);
  // Metering counts the log as PostgreSQL wrote it, not the redacted text.
  expect(volume.bytes).toBe(logged.bytes);
  expect(sidecar.stderr()).not.toMatch(/VALUES \(/); // and our own logs carry no statement text
});
