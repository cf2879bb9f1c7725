/**
 * Memory of the real `auditpipe run` through a fault run (issue 21, item 12): a backlog of rotated
 * log files when it starts, the store (MinIO) hanging for a minute while PostgreSQL goes on
 * writing, then back. Peak RSS (VmHWM) and RSS over time from /proc, and what holds it from the
 * sidecar's own /metrics (V8 heap used and total, external memory: buffers and WebAssembly
 * memories). Writes `.bench/fault-memory.json`; the design target is RSS ≤ 200 MB with
 * NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=4" (docs/operations.md, "Memory").
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { logSettled, repoRoot, startMinio, startPostgres, waitUntil } from "@auditpipe/testkit";
import { getJson, spawnSidecar } from "../test/_sidecar.ts";

const NODE_OPTIONS = "--max-old-space-size=128 --max-semi-space-size=4";
/** The backlog: files of this size (log_rotation_size), as many as pgbench writes. */
const ROTATION_KB = 2048;
const BACKLOG_TRANSACTIONS = 24_000;
const OUTAGE_MS = 60_000;

const load = () => Number(loadavg()[0]!.toFixed(2));
const loadBefore = load();
const pg = await startPostgres({
  logDestination: ["csvlog"],
  rotationSizeKb: ROTATION_KB,
  pgaudit: { log: "all" },
});
const minio = await startMinio();
const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-fault-memory-"));
try {
  const bucket = await minio.freshBucket();
  await pg.pgbench(["-i", "-s", "1", "-q"]);
  await pg.pgbench(["-n", "-c", "4", "-j", "2", "-t", String(BACKLOG_TRANSACTIONS / 4)]);
  await logSettled(pg.logDir);
  const backlog = readdirSync(pg.logDir).filter((n) => n.endsWith(".csv"));
  const backlogBytes = backlog.reduce((sum, n) => sum + statSync(join(pg.logDir, n)).size, 0);
  console.log(
    `load average ${loadBefore} on ${cpus().length} cores; backlog ${backlog.length} files, ${(backlogBytes / 1e6).toFixed(1)} MB`,
  );

  minio.pause(); // requests hang: what a stalled network or an overloaded store does
  const sidecar = spawnSidecar(
    [
      ...["--pgdata", pg.dataDir, "--sink", `s3://${bucket}/pg`, "--s3-endpoint", minio.endpoint],
      ...["--s3-force-path-style", "--state", join(work, "state"), "--listen", "127.0.0.1:0"],
    ],
    { ...minio.env(), NODE_OPTIONS },
  );
  const url = await sidecar.url();
  const pid = sidecar.child.pid!;
  const status = (key: string): number =>
    (Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) *
      1024) /
    1e6;
  const metric = (text: string, name: string): number =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1]) / 1e6;
  const samples: { t: number; rssMb: number }[] = [];
  let parts = { rssMb: 0, heapUsedMb: 0, heapTotalMb: 0, externalMb: 0, spoolMb: 0 };
  const t0 = Date.now();
  const sampler = setInterval(() => {
    try {
      samples.push({ t: Date.now() - t0, rssMb: status("VmRSS") });
    } catch {}
  }, 250);
  const partsSampler = setInterval(() => {
    void (async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const rssMb = status("VmRSS");
      if (rssMb >= parts.rssMb)
        parts = {
          rssMb,
          heapUsedMb: metric(text, "auditpipe_nodejs_heap_size_used_bytes"),
          heapTotalMb: metric(text, "auditpipe_nodejs_heap_size_total_bytes"),
          externalMb: metric(text, "auditpipe_nodejs_external_memory_bytes"),
          spoolMb: metric(text, "auditpipe_spool_bytes"),
        };
    })().catch(() => {});
  }, 1000);

  // PostgreSQL goes on writing through the outage.
  const during = pg.pgbench(["-n", "-c", "2", "-T", String(OUTAGE_MS / 1000)]);
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  const outageRss = samples.map((s) => s.rssMb);
  minio.resume();
  await during;
  await logSettled(pg.logDir);
  const written = writtenKeys(pg.logDir).length;
  await waitUntil(
    async () => {
      const volume = await getJson<{ pipeline: { sinks: Record<string, { entries: number }> } }>(
        `${url}/v1/volume`,
      );
      return Object.values(volume.pipeline.sinks).reduce((sum, s) => sum + s.entries, 0) >= written;
    },
    600_000,
    () => `not every entry acknowledged:\n${sidecar.stderr().slice(-2000)}`,
    500,
  );
  const peakRssMb = status("VmHWM");
  clearInterval(sampler);
  clearInterval(partsSampler);
  sidecar.child.kill("SIGTERM");
  const { code } = await sidecar.exited;
  if (code !== 0) throw new Error(`sidecar exited with ${code}:\n${sidecar.stderr().slice(-2000)}`);

  const result = {
    suite: "auditpipe run through a fault run",
    kind: "memory",
    date: new Date().toISOString(),
    machine: `${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, Node ${process.version}`,
    load: { before: loadBefore, after: load() },
    nodeOptions: NODE_OPTIONS,
    backlog: { files: backlog.length, mb: Number((backlogBytes / 1e6).toFixed(1)) },
    outageSeconds: OUTAGE_MS / 1000,
    entries: written,
    peakRssMb: Number(peakRssMb.toFixed(1)),
    rssDuringOutageMb: {
      min: Number(Math.min(...outageRss).toFixed(1)),
      max: Number(Math.max(...outageRss).toFixed(1)),
    },
    atPeak: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Number(v.toFixed(1))])),
    targetMb: 200,
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join(repoRoot(), ".bench"), { recursive: true });
  writeFileSync(join(repoRoot(), ".bench", "fault-memory.json"), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await minio.stop();
  await pg.stop();
  rmSync(work, { recursive: true, force: true });
}
