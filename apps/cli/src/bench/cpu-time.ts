/**
 * CPU time of the server's processes and of pgbench, read from /proc: what a run cost the machine,
 * which a busy neighbour distorts far less than the wall time TPS is made of. Linux only; null
 * wherever the server's processes cannot be seen (another host, another PID namespace).
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  commandLine,
  machineCpu,
  postmasterOf,
  processIds,
  procStat,
  TICKS_PER_SEC,
  voluntarySwitches,
} from "@auditpipe/estimate";

export { postmasterOf };

/** How long to wait for pgbench's backends to exit and be reaped after pgbench itself has. */
const REAP_TIMEOUT_MS = 5000;
const POLL_MS = 10;

export interface ServerCpu {
  /** The postmaster, every live child and every child it reaped, seconds since it started. */
  totalSec: number;
  /** The logging collector's own time, seconds. */
  loggerSec: number;
  /** The logging collector's wake-ups so far (its voluntary context switches: it sleeps on its pipe). */
  loggerWakeups: number;
  /** Live children's PIDs. */
  children: number[];
}

function scan(postmaster: number): ServerCpu | null {
  const first = procStat(postmaster);
  if (!first) return null;
  let total = first.ownTicks + first.reapedTicks;
  let logger = 0;
  let wakeups = 0;
  const children: number[] = [];
  for (const pid of processIds()) {
    const s = procStat(pid);
    if (!s || s.ppid !== postmaster) continue;
    children.push(pid);
    total += s.ownTicks + s.reapedTicks;
    if (commandLine(pid).startsWith("postgres: logger")) {
      logger += s.ownTicks;
      wakeups += voluntarySwitches(pid) ?? 0;
    }
  }
  // A child reaped during the scan moves its time into the postmaster's: read again.
  const second = procStat(postmaster);
  if (!second || second.reapedTicks !== first.reapedTicks) return null;
  return {
    totalSec: total / TICKS_PER_SEC,
    loggerSec: logger / TICKS_PER_SEC,
    loggerWakeups: wakeups,
    children,
  };
}

/** The server's CPU time now (a consistent reading: retried while children are being reaped). */
export async function serverCpu(postmaster: number): Promise<ServerCpu | null> {
  for (let i = 0; i < REAP_TIMEOUT_MS / POLL_MS; i++) {
    if (!procStat(postmaster)) return null;
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
  const s = procStat("self");
  return s ? s.reapedTicks / TICKS_PER_SEC : 0;
}

/** CPU seconds every CPU of the machine has spent busy (not idle, not waiting for I/O) since boot. */
export function machineBusySec(): number | null {
  return machineCpu()?.busySec ?? null;
}
