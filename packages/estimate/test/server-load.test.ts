/**
 * The server's load as the sampler measures it, on a real PostgreSQL with pgbench running: the
 * host seen through /proc, a container's cgroup v2 quota, and a host it cannot see. The cgroup
 * directories here are written by the test (cpu.max and cpu.stat as the kernel formats them):
 * this machine's cgroups are v1, and no test may change the machine's own.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import {
  cgroupCpu,
  type LoadProbeOptions,
  loopbackClientPids,
  machineCpu,
  procStat,
  sampleWorkload,
  schedStat,
  unixPeerPids,
} from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const work = mkdtempSync(join(tmpdir(), "auditpipe-server-load-"));
let pg: PostgresCluster;

beforeAll(async () => {
  pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.pgbench(["-i", "-q", "-s", "1"]);
});

afterAll(async () => {
  await pg?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A sample of 3 s while pgbench runs 2 clients. */
async function sampleUnderLoad(load: LoadProbeOptions | undefined) {
  // pgbench runs until the sample is over, however long a busy machine makes its start: its
  // sessions are ended then (a fixed -T ended it mid-sample once, and its CPU was not seen).
  const bench = pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "600"]);
  await waitUntil(
    async () =>
      (
        await pg.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pgbench' AND state <> 'idle'",
        )
      ).rows[0]!.n > 0,
    10_000,
    () => "pgbench did not start",
  );
  try {
    return await sampleWorkload({
      connection: `postgresql://postgres@127.0.0.1:${pg.port}/postgres`,
      intervalMs: 3000,
      load,
    });
  } finally {
    await pg.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'",
    );
    // pgbench exits non-zero when its sessions are ended: that it ended is all that is waited for.
    await Promise.allSettled([bench]);
  }
}

describe("the /proc and cgroup readers", () => {
  it("read this process, the machine and a cgroup v2 directory", () => {
    expect(procStat("self")!.ownTicks).toBeGreaterThanOrEqual(0);
    expect(schedStat(process.pid)!.runNs).toBeGreaterThan(0);
    expect(machineCpu()!.cpus).toBe(cpus().length);
    const dir = join(work, "cg");
    mkdirSync(dir);
    writeFileSync(join(dir, "cpu.max"), "150000 100000\n");
    writeFileSync(
      join(dir, "cpu.stat"),
      "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 10\nthrottled_usec 300000\n",
    );
    expect(cgroupCpu(dir)).toEqual({
      dir,
      quotaCores: 1.5,
      usageSec: 2.5,
      periods: 40,
      throttledPeriods: 10,
      throttledSec: 0.3,
    });
    writeFileSync(join(dir, "cpu.max"), "max 100000\n");
    expect(cgroupCpu(dir)!.quotaCores).toBeNull();
    expect(cgroupCpu(join(work, "none"))).toBeNull();
  });

  it("find the process at the client end of a loopback TCP connection", async () => {
    const server = createServer((socket) => socket.on("error", () => {}));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const accepted = new Promise<{ port: number }>((resolve) =>
      server.once("connection", (s) => resolve({ port: s.remotePort! })),
    );
    const child = spawn(process.execPath, [
      "-e",
      `require("node:net").connect(${port}, "127.0.0.1"); setInterval(() => {}, 1000)`,
    ]);
    try {
      const { port: clientPort } = await accepted;
      expect(loopbackClientPids([{ address: "127.0.0.1", port: clientPort }])).toEqual([child.pid]);
    } finally {
      child.kill("SIGKILL");
      server.close();
    }
  });

  it("find the process at the other end of a unix-domain socket (the kernel's socket diagnostics, ss)", async () => {
    const path = join(work, "peer.sock");
    const server = createServer((socket) => socket.on("error", () => {}));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    const accepted = new Promise<void>((resolve) => server.once("connection", () => resolve()));
    const child = spawn(process.execPath, [
      "-e",
      `require("node:net").connect(${JSON.stringify(path)}); setInterval(() => {}, 1000)`,
    ]);
    try {
      await accepted;
      // This process holds the accepted end: its peer is the child. (ss is iproute2's, on every Debian.)
      expect(unixPeerPids(new Set([process.pid]))).toContain(child.pid);
    } finally {
      child.kill("SIGKILL");
      server.close();
    }
  });
});

describe("the server's load during a sample", () => {
  it("on the database host: PostgreSQL's CPU, pgbench's beside it, the run-queue waits, the wait events", async () => {
    const load = (await sampleUnderLoad(undefined)).workload.load!;
    expect(load.source).toBe("host");
    expect(load.cores).toBe(cpus().length);
    expect(load.busy).toBeGreaterThan(0);
    expect(load.serverCpuUsPerTransaction).toBeGreaterThan(0);
    // pgbench connects over the unix socket: found by its application_name.
    expect(load.localClientCpuUsPerTransaction).toBeGreaterThan(0);
    expect(load.unidentifiedLocalClients).toBe(0);
    expect(load.stretch).toBeGreaterThanOrEqual(1);
    expect(load.waits!.samples).toBeGreaterThan(0);
    const w = load.waits!;
    expect(w.cpu + w.commit + w.io + w.lock + w.lwlock + w.client + w.other).toBeCloseTo(1, 9);
    // The test kit's servers run with fsync off: commits flush nothing.
    expect(load.durable).toBe(false);
    expect(load.walSyncsPerTransaction).toBe(0);
  });

  it("in a container with a CPU quota: the quota is the cores, not the machine's", async () => {
    const root = join(work, "cgroup");
    mkdirSync(root);
    writeFileSync(join(root, "cgroup.controllers"), "cpu io memory pids\n");
    writeFileSync(join(root, "cpu.max"), "50000 100000\n");
    writeFileSync(
      join(root, "cpu.stat"),
      "usage_usec 1000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
    );
    const load = (await sampleUnderLoad({ cgroupRoot: root })).workload.load!;
    // PostgreSQL's cgroup path from /proc, under the given root: its cpu.max is 0.5 cores.
    expect(load.source).toBe("container");
    expect(load.cores).toBe(0.5);
    expect(load.coresSource).toContain("cpu.max");
  });

  it("where PostgreSQL's processes are not visible: says so, and takes --cpu-busy and --cores", async () => {
    const empty = join(work, "proc");
    mkdirSync(empty);
    const unseen = (await sampleUnderLoad({ proc: empty })).workload.load!;
    expect(unseen.source).toBe("unseen");
    expect(unseen.serverCpuUsPerTransaction).toBeNull();
    expect(unseen.notes.join(" ")).toContain("--cpu-busy PCT and --cores N");
    expect(unseen.notes.join(" ")).toContain("shareProcessNamespace");
    // What is seen over SQL still is: what the sessions wait on.
    expect(unseen.waits!.samples).toBeGreaterThan(0);
    const given = (await sampleUnderLoad({ proc: empty, cpuBusy: 0.5, cores: 4 })).workload.load!;
    expect(given).toMatchObject({ source: "given", cores: 4, busy: 0.5, coresSource: "--cores" });
  });
});
