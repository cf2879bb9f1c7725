/**
 * Reference data for the stderr and syslog benchmarks: a real PostgreSQL 15 + pgaudit
 * (`log = all`) running pgbench, logging to stderr and, through a private rsyslogd, to syslog
 * (RFC 3164). log_line_prefix `%m [%p] %q%u@%d/%a `. Generated once and cached in the
 * repository's ignored `.bench-data/` (about a minute); delete the directory to regenerate.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, startPostgres, startRsyslog, waitUntil } from "@auditpipe/testkit";

export const REFERENCE_PREFIX = "%m [%p] %q%u@%d/%a ";
const TRANSACTIONS_PER_CLIENT = 6000;
const CLIENTS = 4;

export interface ReferenceFiles {
  stderr: string;
  syslog: string;
}

export async function syslogReferenceData(): Promise<ReferenceFiles> {
  const dir = join(repoRoot(), ".bench-data");
  const out = { stderr: join(dir, "stderr-pgbench.log"), syslog: join(dir, "syslog-pgbench-rfc3164.log") };
  if (existsSync(out.stderr) && existsSync(out.syslog)) return out;
  mkdirSync(dir, { recursive: true });
  const rsyslog = await startRsyslog();
  try {
    const pg = await startPostgres({
      logDestination: ["stderr", "syslog"],
      logLinePrefix: REFERENCE_PREFIX,
      pgaudit: { log: "all", log_relation: true },
    });
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-c", String(CLIENTS), "-j", "2", "-t", String(TRANSACTIONS_PER_CLIENT)]);
      await pg.query("SELECT 'bench-reference-end'");
      const stderr = pg.currentLogfiles().stderr!;
      await waitUntil(
        () => readFileSync(stderr, "utf8").endsWith("<not logged>\n"),
        30_000,
        () => stderr,
      );
      await rsyslog.waitForText(rsyslog.files.rfc3164, "bench-reference-end", 60_000);
      // Write under temporary names first so an interrupted run is not mistaken for a cache.
      copyFileSync(stderr, `${out.stderr}.tmp`);
      copyFileSync(rsyslog.files.rfc3164, `${out.syslog}.tmp`);
      renameSync(`${out.stderr}.tmp`, out.stderr);
      renameSync(`${out.syslog}.tmp`, out.syslog);
    } finally {
      await pg.stop();
    }
  } finally {
    await rsyslog.stop();
  }
  return out;
}
