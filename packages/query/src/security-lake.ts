/**
 * OCSF events laid out as Amazon Security Lake takes a custom source: Parquet, one event class per
 * source, under `region=<region>/accountId=<account>/eventDay=<YYYYMMDD>/` of the source's location
 * (AWS, "Collecting data from custom sources in Security Lake"). Written to a local directory
 * (sync it to `s3://<lake bucket>/ext/<source>/`); the engine used here is a separate one, not the
 * locked query engine.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEngine, quoteLiteral } from "@auditpipe/compact";

export interface SecurityLakeTarget {
  /** The custom source's location, as a local directory. */
  dir: string;
  region: string;
  accountId: string;
}

/** Writes `events` (OCSF, with `time` in ms) as one Parquet file per event day; returns the files written. */
export async function writeSecurityLake(
  events: readonly Record<string, unknown>[],
  target: SecurityLakeTarget,
  options: { workDir?: string; name?: string } = {},
): Promise<{ path: string; events: number }[]> {
  const byDay = new Map<string, string[]>();
  for (const e of events) {
    const day = new Date(Number(e.time)).toISOString().slice(0, 10).replaceAll("-", "");
    const lines = byDay.get(day) ?? [];
    lines.push(JSON.stringify(e));
    byDay.set(day, lines);
  }
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), "auditpipe-lake-"));
  const engine = await openEngine({ threads: 1, tempDirectory: join(work, "spill") });
  const written: { path: string; events: number }[] = [];
  try {
    for (const [day, lines] of [...byDay].sort()) {
      const input = join(work, `${day}.ndjson`);
      await writeFile(input, `${lines.join("\n")}\n`);
      const dir = join(
        target.dir,
        `region=${target.region}`,
        `accountId=${target.accountId}`,
        `eventDay=${day}`,
      );
      await mkdir(dir, { recursive: true });
      const path = join(dir, `${options.name ?? "auditpipe"}-${day}.parquet`);
      await engine.connection.run(
        `COPY (SELECT * FROM read_json(${quoteLiteral(input)}, format = 'newline_delimited', sample_size = -1) ORDER BY time)
         TO ${quoteLiteral(path)} (FORMAT parquet, COMPRESSION zstd)`,
      );
      written.push({ path, events: lines.length });
    }
  } finally {
    engine.close();
    await rm(work, { recursive: true, force: true });
  }
  return written;
}
