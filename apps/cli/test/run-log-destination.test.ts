/**
 * log_destination changed by a reload while the sidecar runs under --pgdata: every entry the
 * server writes is shipped once, whichever destination it went to, including the records its
 * logging collector diverts into the stderr file while the change takes effect (backends switch
 * at their next command, the collector when it reloads). Real PostgreSQL under pgbench, the real
 * `auditpipe run`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditFields } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, shippedRecords, startPostgres, waitUntil } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { afterEach, describe, expect, it } from "vitest";
import { getJson, spawnSidecar } from "./_sidecar.ts";

/**
 * An audit entry's identity across formats: pgAudit's own counters. (session_id, session_line)
 * is not one here: PostgreSQL numbers a session's lines per format (csvlog.c and jsonlog.c each
 * keep their own count), so a session that switches format numbers from 1 again.
 */
function entryKey(sessionId: string, fields: string[]): string {
  const [auditType, statementId, substatementId, , , , objectName] = fields;
  return `${sessionId}:${auditType}:${statementId}:${substatementId}:${objectName}`;
}

/**
 * Every audit entry PostgreSQL wrote, by csv-parse and JSON.parse (not our parsers): the .csv and
 * .json files, and the csvlog/jsonlog records among the stderr lines of the .log files.
 */
function writtenEntries(logDir: string): string[] {
  const keys: string[] = [];
  const csv = (text: string): void => {
    for (const row of parse(text, { relax_column_count: true }) as string[][])
      if ((row[13] ?? "").startsWith("AUDIT: ")) keys.push(entryKey(row[5]!, auditFields(row[13]!)));
  };
  const json = (line: string): void => {
    const o = JSON.parse(line) as { session_id: string; message?: string };
    if (o.message?.startsWith("AUDIT: ")) keys.push(entryKey(o.session_id, auditFields(o.message)));
  };
  for (const name of readdirSync(logDir).sort()) {
    const text = readFileSync(join(logDir, name), "utf8");
    if (name.endsWith(".csv")) csv(text);
    else if (name.endsWith(".json")) for (const line of text.split("\n").filter(Boolean)) json(line);
    else if (name.endsWith(".log")) {
      // Diverted records: a JSON object per line, or a CSV record (one line: no newline in these).
      for (const line of text.split("\n")) {
        if (line.startsWith('{"timestamp":')) json(line);
        else if (/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+,/.test(line)) csv(`${line}\n`);
      }
    }
  }
  return keys;
}

describe("auditpipe run --pgdata when log_destination changes", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("csvlog → jsonlog → csvlog under load: every entry shipped once, the change's own audit records too", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write,ddl,misc" } });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-destination-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    const sidecar = spawnSidecar([
      ...["--pgdata", pg.dataDir, "--sink", sinkDir, "--state", join(work, "state")],
      ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--poll-interval-ms", "50"],
    ]);
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    const url = await sidecar.url();
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    // Backends busy across both reloads: each switches at its next command, so records of both
    // formats interleave and some reach the collector while it has the other file open.
    const load = pg.pgbench(["-n", "-c", "4", "-t", "1500"]);
    for (const destination of ["jsonlog", "csvlog"]) {
      await waitUntil(
        () => shippedEntries(sinkDir).length > 0,
        30_000,
        () => `nothing shipped yet:\n${sidecar.stderr()}`,
        50,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // new files get a new second's name
      await pg.query(`ALTER SYSTEM SET log_destination = '${destination}'`);
      await pg.query("SELECT pg_reload_conf()");
      await waitUntil(
        () => readFileSync(join(pg.dataDir, "current_logfiles"), "utf8").startsWith(destination),
        10_000,
        () => `the server did not switch to ${destination}`,
        20,
      );
    }
    await load;
    await pg.query("SELECT 'end of the test load' AS marker");
    await logSettled(pg.logDir);
    const written = writtenEntries(pg.logDir);
    expect(readdirSync(pg.logDir).some((n) => n.endsWith(".json"))).toBe(true);
    await waitUntil(
      () => shippedEntries(sinkDir).length >= written.length,
      60_000,
      () => `shipped ${shippedEntries(sinkDir).length} of ${written.length}:\n${sidecar.stderr()}`,
      200,
    );
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    const volume = await getJson<{ malformed?: number }>(`${url}/v1/volume`);
    expect(volume.malformed ?? 0).toBe(0);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
    const shipped = shippedEntries(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
    expect(duplicates(written)).toEqual([]); // the oracle counted no record twice
  });

  it("csvlog and jsonlog at once: each entry shipped once, from the csvlog file, and the jsonlog file named as a duplicate", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog", "jsonlog"], pgaudit: { log: "write,ddl" } });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-destination-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    const sidecar = spawnSidecar([
      ...["--pgdata", pg.dataDir, "--sink", sinkDir, "--state", join(work, "state")],
      ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--poll-interval-ms", "50"],
    ]);
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    await sidecar.url();
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", "2", "-t", "300"]);
    await logSettled(pg.logDir);
    // Read from both files, each entry is there twice: once per destination.
    const written = new Set(writtenEntries(pg.logDir));
    await waitUntil(
      () => shippedEntries(sinkDir).length >= written.size,
      30_000,
      () => `not shipped:\n${sidecar.stderr()}`,
      100,
    );
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
    const shipped = shippedEntries(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(written);
    const sources = shippedRecords<{ source: { file: string } }>(sinkDir).map((r) => r.source.file);
    expect(new Set(sources.map((file) => file.slice(file.lastIndexOf("."))))).toEqual(new Set([".csv"]));
    const said = sidecar
      .stderr()
      .split("\n")
      .filter((l) => l.includes("shipping them from the csvlog file only"))
      .map((l) => JSON.parse(l) as { file: string; duplicateOf: string });
    expect(said.length).toBeGreaterThan(0);
    for (const line of said) {
      expect(line.file.endsWith(".json")).toBe(true);
      expect(line.duplicateOf).toBe(
        `${line.file.slice(line.file.lastIndexOf("/") + 1, -".json".length)}.csv`,
      );
    }
  });
});

/** What the sink holds, by the same identity. */
function shippedEntries(sinkDir: string): string[] {
  return shippedRecords<{
    session_id: string;
    audit_type: string;
    statement_id: number;
    substatement_id: number;
    object_name: string | null;
  }>(sinkDir).map(
    (r) => `${r.session_id}:${r.audit_type}:${r.statement_id}:${r.substatement_id}:${r.object_name ?? ""}`,
  );
}
