/**
 * What the machine's processor did, read from Linux's /proc and cgroup v2 files: a process's CPU
 * time and how long it waited for a core, the whole machine's busy time, and a container's CPU
 * budget. One copy for `estimate`'s sampler (how busy the database host is) and `bench` (what a
 * run cost). Every reader returns null where the file is not there or not readable (another OS,
 * another PID namespace), never guesses.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

/** /proc reports times in USER_HZ ticks, which Linux fixes at 100 per second on every architecture. */
export const TICKS_PER_SEC = 100;

const read = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
};

export interface ProcStat {
  pid: number;
  /** The command name (15 characters at most, as the kernel keeps it). */
  comm: string;
  ppid: number;
  /** utime + stime, ticks. */
  ownTicks: number;
  /** cutime + cstime: the children this process has waited for, ticks. */
  reapedTicks: number;
  /** When it started, ticks after boot. */
  startTicks: number;
}

/** /proc/PID/stat, or null when the process is gone or not visible. */
export function procStat(pid: number | "self", proc = "/proc"): ProcStat | null {
  const text = read(`${proc}/${pid}/stat`);
  if (text === null) return null;
  // The command name is in parentheses and may hold spaces and parentheses: fields start after the last ')'.
  const close = text.lastIndexOf(")");
  const f = text.slice(close + 2).split(" ");
  return {
    pid: Number(text.slice(0, text.indexOf(" "))),
    comm: text.slice(text.indexOf("(") + 1, close),
    ppid: Number(f[1]),
    ownTicks: Number(f[11]) + Number(f[12]),
    reapedTicks: Number(f[13]) + Number(f[14]),
    startTicks: Number(f[19]),
  };
}

/**
 * Times the process gave up its core of its own accord (/proc/PID/status'
 * voluntary_ctxt_switches): for the logging collector, which sleeps on its pipe between reads,
 * each is one wake-up. Null when the process is gone or not visible.
 */
export function voluntarySwitches(pid: number, proc = "/proc"): number | null {
  const text = read(`${proc}/${pid}/status`);
  const m = text && /^voluntary_ctxt_switches:\s*(\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** The process's command line with NULs between arguments; "" when unreadable. */
export function commandLine(pid: number, proc = "/proc"): string {
  return read(`${proc}/${pid}/cmdline`) ?? "";
}

/** The postmaster of a backend (`pg_backend_pid()`), when that backend runs where /proc shows it. */
export function postmasterOf(backendPid: number, proc = "/proc"): number | null {
  const backend = procStat(backendPid, proc);
  if (!backend || !commandLine(backendPid, proc).startsWith("postgres:")) return null;
  const postmaster = procStat(backend.ppid, proc);
  if (!postmaster || !/postgres|postmaster/.test(commandLine(backend.ppid, proc))) return null;
  return backend.ppid;
}

/** Every process /proc shows (PIDs). */
export function processIds(proc = "/proc"): number[] {
  try {
    return readdirSync(proc)
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

/**
 * What the scheduler recorded for a process, all its threads together (/proc/PID/task/T/schedstat):
 * nanoseconds on a core, nanoseconds runnable but waiting for one, and time slices.
 */
export interface SchedStat {
  runNs: number;
  waitNs: number;
  slices: number;
}

export function schedStat(pid: number, proc = "/proc"): SchedStat | null {
  let tasks: string[];
  try {
    tasks = readdirSync(`${proc}/${pid}/task`);
  } catch {
    tasks = [];
  }
  const files =
    tasks.length > 0 ? tasks.map((t) => `${proc}/${pid}/task/${t}/schedstat`) : [`${proc}/${pid}/schedstat`];
  let found = false;
  const sum: SchedStat = { runNs: 0, waitNs: 0, slices: 0 };
  for (const file of files) {
    const text = read(file);
    if (text === null) continue;
    const [run, wait, slices] = text.trim().split(/\s+/).map(Number);
    if (!Number.isFinite(run) || !Number.isFinite(wait)) continue;
    found = true;
    sum.runNs += run!;
    sum.waitNs += wait!;
    sum.slices += slices ?? 0;
  }
  return found ? sum : null;
}

/** Seconds since boot (/proc/uptime), the clock of ProcStat's startTicks; null when unreadable. */
export function uptimeSec(proc = "/proc"): number | null {
  const text = read(`${proc}/uptime`);
  const s = text === null ? Number.NaN : Number(text.split(" ")[0]);
  return Number.isFinite(s) ? s : null;
}

/** The whole machine since boot (/proc/stat's first line), seconds summed over every CPU. */
export interface MachineCpu {
  /** Busy: user, nice, system, irq, softirq, steal (guest time is inside user). */
  busySec: number;
  /** Busy plus idle and I/O wait. */
  totalSec: number;
  /** CPUs the kernel lists (cpuN lines). */
  cpus: number;
}

export function machineCpu(proc = "/proc"): MachineCpu | null {
  const text = read(`${proc}/stat`);
  if (text === null) return null;
  const f = text.slice(0, text.indexOf("\n")).trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …
  const busy = f.slice(0, 8).reduce((s, v, i) => (i === 3 || i === 4 ? s : s + v), 0);
  const total = f.slice(0, 8).reduce((s, v) => s + v, 0);
  const cpus = text.split("\n").filter((l) => /^cpu\d+ /.test(l)).length;
  return { busySec: busy / TICKS_PER_SEC, totalSec: total / TICKS_PER_SEC, cpus: Math.max(1, cpus) };
}

/** A cgroup v2 directory's CPU budget and use (cpu.max, cpu.stat). */
export interface CgroupCpu {
  /** The directory read. */
  dir: string;
  /** cpu.max's quota / period: the cores this cgroup may use; null when unlimited ("max"). */
  quotaCores: number | null;
  /** cpu.stat usage_usec, seconds. */
  usageSec: number;
  /** cpu.stat nr_periods / nr_throttled: enforcement periods, and those the quota ran out in. */
  periods: number;
  throttledPeriods: number;
  /** cpu.stat throttled_usec, seconds. */
  throttledSec: number;
}

/** Reads a cgroup v2 directory; null when it is not one (cgroup v1, no cpu controller, unreadable). */
export function cgroupCpu(dir: string): CgroupCpu | null {
  const stat = read(join(dir, "cpu.stat"));
  if (stat === null) return null;
  const field = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(stat)?.[1] ?? 0);
  const max = read(join(dir, "cpu.max"))?.trim().split(/\s+/);
  const quota = max && max[0] !== "max" ? Number(max[0]) / Number(max[1] ?? 100_000) : null;
  return {
    dir,
    quotaCores: quota !== null && Number.isFinite(quota) && quota > 0 ? quota : null,
    usageSec: field("usage_usec") / 1e6,
    periods: field("nr_periods"),
    throttledPeriods: field("nr_throttled"),
    throttledSec: field("throttled_usec") / 1e6,
  };
}

/**
 * A process's cgroup v2 path ("0::/path" in /proc/PID/cgroup), as this process's cgroup namespace
 * shows it: a path with ".." is outside our namespace (another container of the pod). Null on
 * cgroup v1 only.
 */
export function cgroupPath(pid: number | "self", proc = "/proc"): string | null {
  const text = read(`${proc}/${pid}/cgroup`);
  return text === null ? null : (/^0::(.*)$/m.exec(text)?.[1] ?? null);
}

/** Whether /sys/fs/cgroup (or `root`) is a cgroup v2 hierarchy. */
export function cgroupV2(root = "/sys/fs/cgroup"): boolean {
  return read(join(root, "cgroup.controllers")) !== null;
}

/** The PID owning each socket inode, over every process whose descriptors we may read. */
function socketOwners(inodes: ReadonlySet<string>, proc: string): Map<string, number> {
  const owners = new Map<string, number>();
  if (inodes.size === 0) return owners;
  for (const pid of processIds(proc)) {
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`${proc}/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) owners.set(inode, pid);
    }
    if (owners.size === inodes.size) break;
  }
  return owners;
}

/** "127.0.0.1" / "::1" and a port as /proc/net/tcp{,6} print a local address. */
function procNetAddress(address: string, port: number): string | null {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  if (address === "127.0.0.1") return `0100007F:${hexPort}`;
  if (address === "::1") return `00000000000000000000000001000000:${hexPort}`;
  return null;
}

/**
 * The processes on this machine at the client end of loopback TCP connections (their addresses
 * and ports as pg_stat_activity shows them): found through /proc/net/tcp's socket inodes and the
 * descriptors that hold them. Connections whose process is not visible are left out.
 */
export function loopbackClientPids(
  clients: ReadonlyArray<{ address: string; port: number }>,
  proc = "/proc",
): number[] {
  const wanted = new Set(clients.map((c) => procNetAddress(c.address, c.port)).filter((a) => a !== null));
  if (wanted.size === 0) return [];
  const inodes = new Set<string>();
  for (const table of ["tcp", "tcp6"]) {
    const text = read(`${proc}/net/${table}`);
    if (text === null) continue;
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && wanted.has(f[1]!) && f[9] !== "0") inodes.add(f[9]!);
    }
  }
  return [...new Set(socketOwners(inodes, proc).values())];
}

/**
 * The processes at the other end of the unix-domain sockets the given processes hold (the
 * clients of PostgreSQL backends connected over its socket): /proc names no peer of a unix
 * socket, the kernel's socket diagnostics do, which `ss -xp` (iproute2) prints. Null where `ss`
 * is not installed or fails; the processes we may not see are left out.
 */
export function unixPeerPids(pids: ReadonlySet<number>): number[] | null {
  let text: string;
  try {
    text = execFileSync("ss", ["-xpn"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5000,
    });
  } catch {
    return null;
  }
  // u_str ESTAB 0 0 /path/.s.PGSQL.5432 12345 * 12344 users:(("postgres",pid=10,fd=9))
  const owners = new Map<string, number[]>();
  const peers: string[] = [];
  for (const line of text.split("\n")) {
    const m = /\s(\d+)\s+\S+\s+(\d+)\s+users:\((.*)\)\s*$/.exec(line);
    if (!m) continue;
    const holders = [...m[3]!.matchAll(/pid=(\d+)/g)].map((x) => Number(x[1]));
    owners.set(m[1]!, holders);
    if (holders.some((pid) => pids.has(pid))) peers.push(m[2]!);
  }
  return [...new Set(peers.flatMap((inode) => owners.get(inode) ?? []))].filter((pid) => !pids.has(pid));
}
