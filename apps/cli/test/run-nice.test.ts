/**
 * `run` lowers its CPU priority (nice 10 unless told otherwise) on every thread it has, and the
 * threads started afterwards (libuv's pool, where gzip runs) inherit it. Input: a committed
 * fixture written by a real PostgreSQL + pgaudit.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { afterEach, expect, it } from "vitest";
import { getJson, type SidecarProcess, spawnSidecar } from "./_sidecar.ts";

/** The nice value of each thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(") ") + 2).split(" ")[16]);
  });
}

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

it.each([
  [[], 10],
  [["--nice", "15"], 15],
])("run %j: every thread at nice %i once it has shipped", async (flags, nice) => {
  work = mkdtempSync(join(tmpdir(), "auditpipe-run-nice-"));
  const logDir = join(work, "log");
  mkdirSync(logDir);
  const log = gunzipSync(readFileSync(join(repoRoot(), "fixtures/cases/read-write-once/postgresql.csv.gz")));
  writeFileSync(join(logDir, "postgresql-2026-01-01_000000.csv"), log);
  sidecar = spawnSidecar([
    "--log-dir",
    logDir,
    "--format",
    "csvlog",
    "--sink",
    join(work, "sink"),
    "--state",
    join(work, "state"),
    "--listen",
    "127.0.0.1:0",
    ...["--batch-max-age-ms", "100"], // ships within a tenth of a second, not a second
    ...flags,
  ]);
  const url = await sidecar.url();
  await waitUntil(
    async () => {
      const v = await getJson<{ pipeline: { sinks: Record<string, { entries: number }> } }>(
        `${url}/v1/volume`,
      );
      return (v.pipeline.sinks["local-dir"]?.entries ?? 0) > 0;
    },
    20_000,
    () => "nothing shipped",
  );
  const nices = threadNices(sidecar.child.pid!);
  expect(nices.length).toBeGreaterThan(4); // main, V8's, libuv's pool
  expect(new Set(nices)).toEqual(new Set([nice]));
});
