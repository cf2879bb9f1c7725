/**
 * Reference data for the csvlog/jsonlog benchmarks: a real PostgreSQL 15 + pgaudit
 * (`pgaudit.log = all`) running pgbench, logging to csvlog, jsonlog and stderr at once (about
 * 130 MB of csvlog). Generated once into the repository's ignored `.bench-data/` and reused;
 * delete the directory to regenerate.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, startPostgres, waitUntil } from "@auditpipe/testkit";

/** log_line_prefix of the stderr reference file. */
export const REFERENCE_LOG_LINE_PREFIX = "%m [%p] %q%u@%d/%a ";

const CLIENTS = 4;
const TRANSACTIONS_PER_CLIENT = 15_000;
const END_MARK = "bench-reference-end";

export interface ReferenceLogs {
  csvlog: string;
  jsonlog: string;
  stderr: string;
}

/** Paths of the cached reference logs, generating them first when missing (about a minute). */
export async function referenceData(): Promise<ReferenceLogs> {
  const dir = join(repoRoot(), ".bench-data");
  const out: ReferenceLogs = {
    csvlog: join(dir, "pgbench-audit.csv"),
    jsonlog: join(dir, "pgbench-audit.json"),
    stderr: join(dir, "pgbench-audit.log"),
  };
  if (existsSync(out.csvlog) && existsSync(out.jsonlog) && existsSync(out.stderr)) return out;
  mkdirSync(dir, { recursive: true });
  const pg = await startPostgres({
    logDestination: ["csvlog", "jsonlog", "stderr"],
    logLinePrefix: REFERENCE_LOG_LINE_PREFIX,
    pgaudit: { log: "all" },
  });
  try {
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-c", String(CLIENTS), "-j", "2", "-t", String(TRANSACTIONS_PER_CLIENT)]);
    await pg.query(`SELECT '${END_MARK}'`);
    const files = pg.currentLogfiles();
    const paths = [files.csvlog!, files.jsonlog!, files.stderr!];
    await waitUntil(
      () => paths.every((p) => readFileSync(p).includes(END_MARK)),
      60_000,
      () => "the reference logs never got the end mark",
    );
    // Temporary names first, so an interrupted run is not mistaken for a cache.
    const targets = [out.csvlog, out.jsonlog, out.stderr];
    for (const [i, p] of paths.entries()) copyFileSync(p, `${targets[i]}.tmp`);
    for (const t of targets) renameSync(`${t}.tmp`, t);
  } finally {
    await pg.stop();
  }
  return out;
}
