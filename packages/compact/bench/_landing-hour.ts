/**
 * One host-hour of landing NDJSON for the compaction benchmarks (writer.bench.ts here,
 * apps/cli/bench/compaction-memory.ts): the reference csvlog (420k entries
 * of a real PostgreSQL + pgaudit under pgbench) shipped by the real pipeline (FileSource into a
 * LocalDirSink) in the given codec. Built once into `.bench-data/landing-<codec>/` and reused
 * (temporary name first, so an interrupted build is not mistaken for a cache).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { referenceData } from "../../parse/bench/_reference-data.ts";

/** The archive directory of the shipped host-hour, building it first when missing. */
export async function landingHour(compression: "gzip" | "zstd"): Promise<string> {
  const archive = join(repoRoot(), ".bench-data", `landing-${compression}`);
  if (existsSync(archive)) return closedDay(archive);
  const { csvlog } = await referenceData();
  const work = `${archive}.tmp`;
  rmSync(work, { recursive: true, force: true });
  const dir = join(work, "log");
  mkdirSync(dir, { recursive: true });
  const raw = readFileSync(csvlog);
  writeFileSync(join(dir, "postgresql.csv"), raw);
  const source = new FileSource({
    logDir: dir,
    format: "csvlog",
    pattern: "postgresql.csv",
    stateDir: join(dir, "state"),
    sink: new LocalDirSink({ dir: join(work, "archive"), compression }),
  });
  await source.start();
  await waitUntil(
    () => source.status().some((f) => f.read >= raw.length),
    1_200_000,
    () => "not read",
  );
  await source.stop();
  renameSync(join(work, "archive"), archive);
  rmSync(work, { recursive: true, force: true });
  return closedDay(archive);
}

/**
 * The partition moved to a day long past: the reference log's hour is the hour it was written in,
 * and `compact` leaves an hour alone until 10 minutes after it ends (a bench run in the hour the
 * reference log was made compacted nothing). The objects hold no date of their partition.
 */
function closedDay(archive: string): string {
  const past = "dt=2000-01-01";
  for (const day of readdirSync(archive))
    if (day.startsWith("dt=") && day !== past && !existsSync(join(archive, past)))
      renameSync(join(archive, day), join(archive, past));
  return archive;
}
