/**
 * CPU time of the server's processes and of pgbench, read from /proc: what a run cost the machine,
 * which a busy neighbour distorts far less than the wall time TPS is made of. Linux only; null
 * wherever the server's processes cannot be seen (another host, another PID namespace).
 */
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** /proc reports times in USER_HZ ticks, which Linux fixes at 100 per second on every architecture. */
const TICKS_PER_SEC = 100;
/** How long to wait for pgbench's backends to exit and be reaped after pgbench itself has. */
const REAP_TIMEOUT_MS = 5000;
const POLL_MS = 10;

interface ProcStat {
  ppid: number;
  /** utime + stime, ticks. */
  own: number;
  /** cutime + cstime: the children this process has reaped, ticks. */
  reaped: number;
}

function readStat(pid: number | "self"): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name is in parentheses and may hold spaces: fields start after the last ')'.
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/** The postmaster of a backend (`pg_backend_pid()`), when that backend runs on this machine. */
export function postmasterOf(backendPid: number): number | null {
  const backend = readStat(backendPid);
  if (!backend || !commandLine(backendPid).startsWith("postgres:")) return null;
  const postmaster = readStat(backend.ppid);
  if (!postmaster || !/postgres|postmaster/.test(commandLine(backend.ppid))) return null;
  return backend.ppid;
}

export interface ServerCpu {
  /** The postmaster, every live child and every child it reaped, seconds since it started. */
  totalSec: number;
  /** The logging collector's own time, seconds. */
  loggerSec: number;
  /** Live children's PIDs. */
  children: number[];
}

function scan(postmaster: number): ServerCpu | null {
  const first = readStat(postmaster);
  if (!first) return null;
  let total = first.own + first.reaped;
  let logger = 0;
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const s = readStat(pid);
    if (!s || s.ppid !== postmaster) continue;
    children.push(pid);
    total += s.own + s.reaped;
    if (commandLine(pid).startsWith("postgres: logger")) logger += s.own;
  }
  // A child reaped during the scan moves its time into the postmaster's: read again.
  const second = readStat(postmaster);
  if (!second || second.reaped !== first.reaped) return null;
  return { totalSec: total / TICKS_PER_SEC, loggerSec: logger / TICKS_PER_SEC, children };
}

/** The server's CPU time now (a consistent reading: retried while children are being reaped). */
export async function serverCpu(postmaster: number): Promise<ServerCpu | null> {
  for (let i = 0; i < REAP_TIMEOUT_MS / POLL_MS; i++) {
    if (!readStat(postmaster)) return null;
    const s = scan(postmaster);
    if (s) return s;
    await sleep(POLL_MS);
  }
  return null;
}

/** Background processes that may start during a run and outlive it (their time so far counts). */
const BACKGROUND = /^postgres: (autovacuum|parallel worker|background|walwriter|checkpointer|logger)/;

/**
 * The server's CPU time once every client backend that was not there `before` has exited and
 * been reaped (pgbench's backends finish a moment after pgbench), so their whole time is counted.
 * Null when they are still there after a few seconds.
 */
export async function serverCpuAfter(postmaster: number, before: ServerCpu): Promise<ServerCpu | null> {
  const known = new Set(before.children);
  for (let i = 0; i < REAP_TIMEOUT_MS / POLL_MS; i++) {
    const s = await serverCpu(postmaster);
    if (!s) return null;
    if (s.children.every((pid) => known.has(pid) || BACKGROUND.test(commandLine(pid)))) return s;
    await sleep(POLL_MS);
  }
  return null;
}

/** CPU seconds of this process's reaped children (pgbench, once it has exited). */
export function reapedChildrenCpuSec(): number {
  const s = readStat("self");
  return s ? s.reaped / TICKS_PER_SEC : 0;
}

/** CPU seconds every CPU of the machine has spent busy (not idle, not waiting for I/O) since boot. */
export function machineBusySec(): number | null {
  let text: string;
  try {
    text = readFileSync("/proc/stat", "utf8");
  } catch {
    return null;
  }
  const f = text.slice(0, text.indexOf("\n")).trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: guest time is already inside user.
  const busy = f.slice(0, 8).reduce((s, v, i) => (i === 3 || i === 4 ? s : s + v), 0);
  return busy / TICKS_PER_SEC;
}
