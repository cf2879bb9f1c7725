/**
 * log_line_prefix changed by a reload while the sidecar follows a stderr log under --pgdata. The
 * new prefix is one the old reads too, wrongly: `%m [%p] %q%u@%d ` reads the new
 * `postgres@postgres/pgbench LOG:` as database `postgres/pgbench`. Backends switch at their next
 * command, so old and new lines interleave. Real PostgreSQL under pgbench, the real `auditpipe run`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { duplicates, logSettled, shippedRecords, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

const OLD = "%m [%p] %q%u@%d ";
const NEW = "%m [%p] %u@%d/%a ";

/** Every audit record PostgreSQL wrote to the stderr files, as `file@offset`, and whether the new prefix wrote it. */
function writtenAuditLines(logDir: string): { key: string; newPrefix: boolean }[] {
  const out: { key: string; newPrefix: boolean }[] = [];
  for (const name of readdirSync(logDir).filter((n) => n.endsWith(".log"))) {
    const path = join(logDir, name);
    const bytes = readFileSync(path);
    let offset = 0;
    while (offset < bytes.length) {
      const end = bytes.indexOf(0x0a, offset);
      const stop = end < 0 ? bytes.length : end + 1;
      const line = bytes.toString("utf8", offset, stop);
      // The two prefixes as they print for a client backend (the oracle knows both by shape).
      const old = /^\S+ \S+ \S+ \[\d+\] \w+@\w+ LOG: {2}AUDIT: /.test(line);
      const fresh = /^\S+ \S+ \S+ \[\d+\] \w+@\w+\/[\w ]* LOG: {2}AUDIT: /.test(line);
      if (old || fresh) out.push({ key: `${path}@${offset}`, newPrefix: fresh });
      offset = stop;
    }
  }
  return out;
}

describe("auditpipe run --pgdata when log_line_prefix changes", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("reads each line with the prefix its backend wrote: no entry shipped with a stale prefix's fields", async () => {
    const pg = await startPostgres({
      logDestination: ["stderr"],
      logLinePrefix: OLD,
      pgaudit: { log: "write,ddl" },
    });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-prefix-reload-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    const sidecar = spawnSidecar([
      ...["--pgdata", pg.dataDir, "--sink", sinkDir, "--state", join(work, "state")],
      ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--poll-interval-ms", "50"],
    ]);
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    const url = await sidecar.url();
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    // pgbench's backends run across the reload: each writes old-prefix lines, then new ones.
    const load = pg.pgbench(["-n", "-c", "3", "-t", "1500"]);
    await waitUntil(
      () => shippedRecords(sinkDir).length > 500,
      30_000,
      () => `nothing shipped yet:\n${sidecar.stderr()}`,
      50,
    );
    await pg.query(`ALTER SYSTEM SET log_line_prefix = '${NEW}'`);
    await pg.query("SELECT pg_reload_conf()");
    await load;
    await pg.pgbench(["-n", "-c", "2", "-t", "100"]); // new backends, new prefix from their start
    await pg.query("SELECT 'end of the test load' AS marker");
    await logSettled(pg.logDir);
    const written = writtenAuditLines(pg.logDir);
    expect(written.filter((w) => w.newPrefix).length).toBeGreaterThan(500);
    expect(written.filter((w) => !w.newPrefix).length).toBeGreaterThan(500);
    await waitUntil(
      () => shippedRecords(sinkDir).length >= written.length,
      60_000,
      () =>
        `shipped ${shippedRecords(sinkDir).length} of ${written.length}:\n${sidecar.stderr().slice(-3000)}`,
      200,
    );
    const shipped = shippedRecords<{
      user: string;
      database: string;
      source: { file: string; offset: number };
    }>(sinkDir);
    expect(new Set(shipped.map((r) => r.database))).toEqual(new Set(["postgres"]));
    expect(new Set(shipped.map((r) => r.user))).toEqual(new Set(["postgres"]));
    const keys = shipped.map((r) => `${r.source.file}@${r.source.offset}`);
    expect(duplicates(keys)).toEqual([]);
    expect(new Set(keys)).toEqual(new Set(written.map((w) => w.key)));
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^auditpipe_log_line_prefix_changes_total 1$/m);
    expect(metrics).toMatch(/^auditpipe_malformed_records_total 0$/m);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const learned = sidecar
      .stderr()
      .split("\n")
      .filter((l) => l.includes("log_line_prefix changed by a reload"))
      .map((l) => JSON.parse(l) as { prefix: string });
    expect(learned).toMatchObject([{ prefix: NEW }]);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
  });
});
