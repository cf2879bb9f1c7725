import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { csvlogOracle } from "@auditpipe/fixtures/oracle";
import { type PostgresCluster, waitUntil } from "@auditpipe/testkit";

/**
 * Every shipped record under a local-dir sink, object by object (duplicates kept). Types come from
 * the directory listing, not a stat per name: a running sink renames its temp files away between
 * the two, and a stat of one that just went fails the poll (seen in CI).
 */
export function shippedRecords<T = { session_id: string; session_line: number }>(dir: string): T[] {
  const records: T[] = [];
  if (!existsSync(dir)) return records;
  const walk = (d: string): void => {
    for (const dirent of readdirSync(d, { withFileTypes: true })) {
      const name = dirent.name;
      const path = join(d, name);
      if (dirent.isDirectory()) walk(path);
      else if (name.endsWith(".ndjson.gz")) {
        for (const line of gunzipSync(readFileSync(path)).toString("utf8").split("\n"))
          if (line) records.push(JSON.parse(line) as T);
      }
    }
  };
  walk(dir);
  return records;
}

/** Every shipped record under a local-dir sink, as `session_id:session_line` keys (duplicates kept). */
export function shippedKeys(dir: string): string[] {
  return shippedRecords(dir).map((r) => `${r.session_id}:${r.session_line}`);
}

/**
 * Waits until the csvlog files of a log dir stop growing (300 ms without a byte): a load that has
 * returned may still be on its way through the logging collector's pipe into the file.
 */
export async function logSettled(logDir: string, timeoutMs = 10_000): Promise<void> {
  const size = (): number =>
    readdirSync(logDir)
      .filter((n) => n.endsWith(".csv"))
      .reduce((sum, n) => sum + statSync(join(logDir, n)).size, 0);
  const deadline = Date.now() + timeoutMs;
  let last = size();
  let stableSince = Date.now();
  while (Date.now() - stableSince < 300 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = size();
    if (now !== last) {
      last = now;
      stableSince = Date.now();
    }
  }
}

/** What PostgreSQL wrote: audit entries in every csvlog file of a log dir, by csv-parse (not our parser). */
export function writtenKeys(logDir: string): string[] {
  const keys: string[] = [];
  for (const name of readdirSync(logDir)
    .filter((n) => n.endsWith(".csv"))
    .sort()) {
    const { entries } = csvlogOracle(name, readFileSync(join(logDir, name)));
    for (const e of entries) keys.push(`${e.sessionId}:${e.sessionLine}`);
  }
  return keys;
}

export function duplicates(keys: string[]): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const k of keys) {
    if (seen.has(k)) dups.push(k);
    seen.add(k);
  }
  return dups;
}

/**
 * pg_rotate_logfile() until PostgreSQL writes to a file of another name: within the second the
 * current file was opened, log_filename's %S gives the same name and the file is only reopened.
 */
export async function rotateToNewFile(
  pg: PostgresCluster,
  destination: "csvlog" | "jsonlog" | "stderr" = "csvlog",
): Promise<void> {
  const before = pg.currentLogfiles()[destination];
  await waitUntil(
    async () => {
      await pg.rotate();
      return pg.currentLogfiles()[destination] !== before;
    },
    10_000,
    () => "PostgreSQL did not rotate to a new file",
    20,
  );
}
