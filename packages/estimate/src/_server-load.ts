/**
 * How busy the database server is while the sampler samples it: PostgreSQL's processes' CPU and
 * the scheduler's run-queue waits from /proc when they run where auditpipe runs (a sidecar on
 * the database host), the machine's or the container's CPU budget (/proc/stat, cgroup v2
 * cpu.max and cpu.stat), the clients on the same machine, and what the sessions wait on
 * (pg_stat_activity's wait events, pg_stat_wal's flushes). What cannot be seen is said, and
 * `--cpu-busy` / `--cores` fill it in.
 */
import type pg from "pg";
import { SAMPLER_TAG } from "./_catalog.ts";
import {
  cgroupCpu,
  cgroupPath,
  cgroupV2,
  commandLine,
  loopbackClientPids,
  type MachineCpu,
  machineCpu,
  postmasterOf,
  processIds,
  procStat,
  schedStat,
  TICKS_PER_SEC,
  unixPeerPids,
  uptimeSec,
} from "./host-cpu.ts";
import type { ServerLoad, WaitShares } from "./types.ts";

/** What the user says of a host auditpipe cannot see (or overrides): --cpu-busy, --cores. */
export interface GivenLoad {
  /** Share of the server's cores busy (0–1). */
  cpuBusy?: number;
  cores?: number;
}

export interface LoadProbeOptions extends GivenLoad {
  /** Where /proc and the cgroup v2 hierarchy are (tests point them elsewhere). */
  proc?: string;
  cgroupRoot?: string;
}

const tagged = (sql: string): string => `${sql} ${SAMPLER_TAG}`;

/** The wait events a commit waits on: its own WAL flush, another backend's (group commit), a standby. */
const COMMIT_WAITS = new Set([
  "IO:WALSync",
  "IO:WALWrite",
  "IO:WALInitSync",
  "LWLock:WALWrite",
  "IPC:SyncRep",
]);

function waitCategory(
  type: string | null,
  event: string | null,
  state: string,
): keyof Omit<WaitShares, "samples"> {
  if (state === "idle in transaction" || state === "idle in transaction (aborted)") return "client";
  if (type === null) return "cpu";
  if (COMMIT_WAITS.has(`${type}:${event}`)) return "commit";
  if (type === "IO") return "io";
  if (type === "Lock") return "lock";
  if (type === "LWLock") return "lwlock";
  if (type === "Client") return "client";
  return "other";
}

interface TreeCpu {
  /** The postmaster's own and reaped time plus every live child's, ticks. */
  ticks: number;
  /** Scheduler figures of the live client backends, by PID. */
  backends: Map<number, { runNs: number; waitNs: number }>;
}

/** PostgreSQL's processes: the postmaster, its children, what it reaped. */
function treeCpu(postmaster: number, proc: string, exclude: number): TreeCpu | null {
  const root = procStat(postmaster, proc);
  if (!root) return null;
  let ticks = root.ownTicks + root.reapedTicks;
  const backends = new Map<number, { runNs: number; waitNs: number }>();
  for (const pid of processIds(proc)) {
    if (pid === exclude) continue;
    const s = procStat(pid, proc);
    if (!s || s.ppid !== postmaster) continue;
    ticks += s.ownTicks + s.reapedTicks;
    // Client backends show "postgres: user database address …"; background processes name their job.
    const cmd = commandLine(pid, proc);
    if (
      /^postgres: (?!(logger|checkpointer|background writer|walwriter|autovacuum|logical replication|stats|archiver|walsender|walreceiver|startup|parallel worker))/.test(
        cmd,
      )
    ) {
      const sched = schedStat(pid, proc);
      if (sched) backends.set(pid, sched);
    }
  }
  return { ticks, backends };
}

interface LocalClient {
  /** The backend serving the connection. */
  pid: number;
  application: string;
  address: string | null;
  port: number | null;
}

/** Processes on this machine at the client end of the listed connections, and how many stayed unidentified. */
function localClientPids(
  clients: readonly LocalClient[],
  proc: string,
): { pids: number[]; unidentified: number } {
  const tcp = clients.filter((c) => c.address !== null && c.port !== null);
  const byTcp = loopbackClientPids(
    tcp.map((c) => ({ address: c.address!, port: c.port! })),
    proc,
  );
  // A unix-socket connection names no peer in /proc: the kernel's socket diagnostics do (ss);
  // without them, its client is the process whose command name is the connection's
  // application_name (pgbench, psql set it so).
  const unix = clients.filter((c) => c.address === null);
  const byName = new Set<number>();
  let unidentified = Math.max(0, tcp.length - byTcp.length);
  const peers = unix.length > 0 ? unixPeerPids(new Set(unix.map((c) => c.pid))) : null;
  if (peers !== null) {
    for (const pid of peers) if (pid !== process.pid) byName.add(pid);
    if (peers.length === 0) unidentified += unix.length;
  } else if (unix.length > 0) {
    const names = new Map<string, number>();
    for (const c of unix)
      names.set(c.application.slice(0, 15), (names.get(c.application.slice(0, 15)) ?? 0) + 1);
    const found = new Map<string, number>();
    for (const pid of processIds(proc)) {
      if (pid === process.pid) continue;
      const s = procStat(pid, proc);
      if (s && names.has(s.comm) && s.comm !== "") {
        byName.add(pid);
        found.set(s.comm, (found.get(s.comm) ?? 0) + 1);
      }
    }
    for (const [name, n] of names) if (!found.has(name)) unidentified += n;
  }
  return { pids: [...new Set([...byTcp, ...byName])], unidentified };
}

interface Snapshot {
  at: number;
  tree: TreeCpu | null;
  own: number;
  sampler: number;
  machine: MachineCpu | null;
  cgroup: ReturnType<typeof cgroupCpu>;
  clients: Map<number, number>;
  wal: { syncs: number } | null;
}

/**
 * Measures the server's load over the sample: `start` before the sampler's first read,
 * `poll` at each of its polls, `finish` after its last read.
 */
export class ServerLoadProbe {
  private readonly proc: string;
  private readonly cgroupRoot: string;
  private readonly given: GivenLoad;
  private backendPid = 0;
  private postmaster: number | null = null;
  private cgroupDir: string | null = null;
  private cgroupNote: string | null = null;
  private first: Snapshot | null = null;
  private bootSec: number | null = null;
  private readonly waits: WaitShares = {
    cpu: 0,
    commit: 0,
    io: 0,
    lock: 0,
    lwlock: 0,
    client: 0,
    other: 0,
    samples: 0,
  };
  private readonly localClients = new Map<string, LocalClient>();
  private waitsHidden = false;
  private durable: boolean | null = null;

  constructor(options: LoadProbeOptions = {}) {
    this.proc = options.proc ?? "/proc";
    this.cgroupRoot = options.cgroupRoot ?? "/sys/fs/cgroup";
    this.given = {
      ...(options.cpuBusy === undefined ? {} : { cpuBusy: options.cpuBusy }),
      ...(options.cores === undefined ? {} : { cores: options.cores }),
    };
  }

  async start(client: pg.Client): Promise<void> {
    const r = await client.query<{ pid: number; fsync: string; sc: string }>(
      tagged(
        "SELECT pg_backend_pid() AS pid, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc",
      ),
    );
    const row = r.rows[0]!;
    this.backendPid = row.pid;
    this.durable = row.fsync === "on" && row.sc !== "off";
    this.postmaster = postmasterOf(this.backendPid, this.proc);
    if (this.postmaster !== null) this.locateCgroup(this.postmaster);
    await this.poll(client);
    this.bootSec = uptimeSec(this.proc);
    this.first = await this.snapshot(client);
  }

  /** PostgreSQL's cgroup, when it is a cgroup v2 directory we can read (ours, or the host's view of its unit's). */
  private locateCgroup(postmaster: number): void {
    if (!cgroupV2(this.cgroupRoot)) return;
    const path = cgroupPath(postmaster, this.proc);
    if (path === null) return;
    if (path.split("/").includes("..")) {
      this.cgroupNote =
        "PostgreSQL runs in another container's cgroup, which this container cannot read: its CPU limit is unknown here; give --cores (its resources.limits.cpu)";
      return;
    }
    this.cgroupDir = `${this.cgroupRoot}${path === "/" ? "" : path}`;
  }

  /** The tightest cpu.max quota from PostgreSQL's cgroup up to the root of our view. */
  private quota(): { cores: number; dir: string } | null {
    if (!this.cgroupDir) return null;
    let best: { cores: number; dir: string } | null = null;
    let dir = this.cgroupDir;
    for (;;) {
      const c = cgroupCpu(dir);
      if (c?.quotaCores && (!best || c.quotaCores < best.cores)) best = { cores: c.quotaCores, dir };
      if (dir === this.cgroupRoot || dir.length <= this.cgroupRoot.length) break;
      dir = dir.slice(0, dir.lastIndexOf("/"));
    }
    return best;
  }

  /** One observation of the sessions: what each backend waits on, and which clients are local. */
  async poll(client: pg.Client): Promise<void> {
    const r = await client.query<{
      t: string | null;
      e: string | null;
      state: string | null;
      app: string | null;
      addr: string | null;
      port: number | null;
      pid: number;
    }>(
      tagged(`SELECT wait_event_type AS t, wait_event AS e, state, application_name AS app,
                     host(client_addr) AS addr, client_port AS port, pid
                FROM pg_stat_activity
               WHERE pid <> pg_backend_pid() AND datname = current_database()
                 AND (backend_type = 'client backend' OR backend_type IS NULL)`),
    );
    for (const row of r.rows) {
      if (row.state === null) {
        this.waitsHidden = true;
        continue;
      }
      if (row.state === "idle" || row.state === "disabled") continue;
      // A client that ran something during the sample, on this machine: its CPU is the workload's.
      if (row.addr === null || row.addr === "127.0.0.1" || row.addr === "::1")
        this.localClients.set(`${row.pid}`, {
          pid: row.pid,
          application: row.app ?? "",
          address: row.addr,
          port: row.addr === null ? null : row.port,
        });
      this.waits[waitCategory(row.t, row.e, row.state)] += 1;
      this.waits.samples += 1;
    }
  }

  /** The local clients whose connection is still open (the others' processes may be gone). */
  private async openLocalClients(client: pg.Client): Promise<LocalClient[]> {
    const r = await client.query<{ pid: number }>(
      tagged(
        "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()",
      ),
    );
    const open = new Set(r.rows.map((row) => row.pid));
    return [...this.localClients.values()].filter((c) => open.has(c.pid));
  }

  private async snapshot(client: pg.Client): Promise<Snapshot> {
    let wal: { syncs: number } | null = null;
    try {
      const w = await client.query<{ s: number }>(tagged("SELECT wal_sync::float8 AS s FROM pg_stat_wal"));
      wal = { syncs: w.rows[0]!.s };
    } catch {
      wal = null;
    }
    const clients = new Map<number, number>();
    if (this.postmaster !== null)
      for (const pid of localClientPids(await this.openLocalClients(client), this.proc).pids) {
        const s = procStat(pid, this.proc);
        if (s) clients.set(pid, s.ownTicks + s.reapedTicks);
      }
    const samplerBackend = procStat(this.backendPid, this.proc);
    const ownUsage = process.cpuUsage();
    return {
      at: Date.now(),
      tree: this.postmaster === null ? null : treeCpu(this.postmaster, this.proc, this.backendPid),
      own: (ownUsage.user + ownUsage.system) / 1e6,
      sampler: samplerBackend ? samplerBackend.ownTicks / TICKS_PER_SEC : 0,
      machine: machineCpu(this.proc),
      cgroup: this.cgroupDir ? cgroupCpu(this.cgroupDir) : null,
      clients,
      wal,
    };
  }

  /** The local clients' CPU seconds over the sample (one started during it counts whole). */
  private clientSeconds(a: Snapshot, b: Snapshot): number {
    let clientSec = 0;
    for (const [pid, ticks] of b.clients) {
      const before = a.clients.get(pid);
      if (before !== undefined) clientSec += (ticks - before) / TICKS_PER_SEC;
      else {
        // Started during the sample: all of its time is the sample's.
        const s = procStat(pid, this.proc);
        if (s && this.bootSec !== null && s.startTicks / TICKS_PER_SEC >= this.bootSec)
          clientSec += ticks / TICKS_PER_SEC;
      }
    }
    return clientSec;
  }

  /**
   * The cores this server may use (--cores, the cgroup's quota, or the machine's) and how busy
   * they were over the sample (--cpu-busy, the cgroup's usage, or the machine's busy share).
   */
  private coresAndBusy(
    a: Snapshot,
    b: Snapshot,
    machine: { busySec: number; totalSec: number; cpus: number },
    seconds: number,
    notes: string[],
  ): Pick<ServerLoad, "source" | "cores" | "coresSource" | "busy" | "throttled"> & {
    cores: number;
    busy: number;
  } {
    const quota = this.quota();
    const cg = quota ? cgroupCpu(quota.dir) : null;
    const cgBefore = quota && a.cgroup && quota.dir === this.cgroupDir ? a.cgroup : null;
    let cores: number;
    let coresSource: string;
    let busySec: number;
    let source: ServerLoad["source"] = "host";
    let throttled: number | null = null;
    if (this.given.cores !== undefined) {
      cores = this.given.cores;
      coresSource = "--cores";
    } else if (quota) {
      cores = Math.min(quota.cores, machine.cpus);
      coresSource = `cpu.max of the cgroup ${quota.dir.slice(this.cgroupRoot.length) || "/"}`;
      source = "container";
    } else {
      cores = machine.cpus;
      coresSource = "the machine's CPUs (/proc/stat)";
    }
    if (this.cgroupNote) notes.push(this.cgroupNote);
    if (quota && cg && cgBefore && b.cgroup) {
      busySec = b.cgroup.usageSec - cgBefore.usageSec;
      const periods = b.cgroup.periods - cgBefore.periods;
      throttled = periods > 0 ? (b.cgroup.throttledPeriods - cgBefore.throttledPeriods) / periods : 0;
    } else {
      // The machine's busy share applies to the cores this server may use.
      busySec =
        machine.totalSec > 0 ? (machine.busySec / machine.totalSec) * cores * seconds : machine.busySec;
    }
    let busy = Math.min(1, Math.max(0, busySec / (cores * seconds)));
    if (this.given.cpuBusy !== undefined) {
      busy = this.given.cpuBusy;
      source = "given";
    }
    return { source, cores, coresSource, busy, throttled };
  }

  async finish(client: pg.Client, transactions: number): Promise<ServerLoad> {
    const a = this.first!;
    const b = await this.snapshot(client);
    const seconds = Math.max(1e-3, (b.at - a.at) / 1000);
    const notes: string[] = [];
    const perTxn = (sec: number): number | null => (transactions > 0 ? (sec * 1e6) / transactions : null);
    const waits = this.waits.samples > 0 ? shares(this.waits) : null;
    if (this.waitsHidden)
      notes.push(
        "some sessions' wait events are hidden from this role: GRANT pg_read_all_stats to it to see what every session waits on",
      );
    const walSyncs = a.wal && b.wal && transactions > 0 ? (b.wal.syncs - a.wal.syncs) / transactions : null;
    const open = await this.openLocalClients(client);
    const unidentified = localClientPids(open, this.proc).unidentified;
    const ended = this.localClients.size - open.length;
    const base = {
      waits,
      walSyncsPerTransaction: walSyncs,
      durable: this.durable,
      unidentifiedLocalClients: this.postmaster === null ? 0 : unidentified,
      notes,
    };

    if (this.postmaster === null || !a.tree || !b.tree || !a.machine || !b.machine) {
      notes.push(
        "PostgreSQL's processes are not visible from here (another host, or another container without a shared process namespace: shareProcessNamespace: true in a Kubernetes pod): how busy its cores are is unknown; give --cpu-busy PCT and --cores N",
      );
      const given = this.given.cpuBusy !== undefined || this.given.cores !== undefined;
      return {
        source: given ? "given" : "unseen",
        cores: this.given.cores ?? null,
        coresSource: this.given.cores !== undefined ? "--cores" : "unknown",
        busy: this.given.cpuBusy ?? null,
        serverCpuUsPerTransaction: null,
        localClientCpuUsPerTransaction: null,
        otherCores: null,
        stretch: null,
        throttled: null,
        ...base,
      };
    }

    const serverSec = (b.tree.ticks - a.tree.ticks) / TICKS_PER_SEC - Math.max(0, b.sampler - a.sampler);
    const clientSec = this.clientSeconds(a, b);
    const stretch = stretchOf(a.tree, b.tree);
    const ownSec = Math.max(0, b.own - a.own);
    const machine = {
      busySec: b.machine.busySec - a.machine.busySec,
      totalSec: b.machine.totalSec - a.machine.totalSec,
      cpus: b.machine.cpus,
    };
    const { source, cores, coresSource, busy, throttled } = this.coresAndBusy(a, b, machine, seconds, notes);
    if (ended > 0)
      notes.push(
        `${ended} connection${ended === 1 ? "" : "s"} from this machine ended during the sample: ${ended === 1 ? "its client's" : "their clients'"} CPU is not counted (sample while the clients stay connected)`,
      );
    if (unidentified > 0)
      notes.push(
        `${unidentified} connection${unidentified === 1 ? "" : "s"} from this machine whose client process was not found: ${unidentified === 1 ? "its" : "their"} CPU counts as other work`,
      );
    return {
      source,
      cores,
      coresSource,
      busy,
      serverCpuUsPerTransaction: perTxn(Math.max(0, serverSec)),
      localClientCpuUsPerTransaction: perTxn(Math.max(0, clientSec)),
      otherCores: Math.max(0, (busy * cores * seconds - serverSec - clientSec - ownSec) / seconds),
      stretch,
      throttled,
      ...base,
    };
  }
}

/** How much longer than their time on a core the backends took (runnable, waiting for one). */
function stretchOf(a: TreeCpu, b: TreeCpu): number | null {
  let run = 0;
  let wait = 0;
  for (const [pid, s] of b.backends) {
    const before = a.backends.get(pid) ?? { runNs: 0, waitNs: 0 };
    run += s.runNs - before.runNs;
    wait += s.waitNs - before.waitNs;
  }
  return run > 0 ? (run + Math.max(0, wait)) / run : null;
}

function shares(w: WaitShares): WaitShares {
  const n = w.samples;
  return {
    cpu: w.cpu / n,
    commit: w.commit / n,
    io: w.io / n,
    lock: w.lock / n,
    lwlock: w.lwlock / n,
    client: w.client / n,
    other: w.other / n,
    samples: n,
  };
}
