import { readdirSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import type { Logger } from "pino";

/**
 * Without --nice the sidecar runs at least this nice: under CPU contention PostgreSQL's backends
 * come first, and the sidecar reads what they logged from the files (its buffer) once they let it.
 * On a 2-core machine that pgbench saturates, nice 0 cost ~10 % of TPS (docs/benchmarks.md).
 */
export const DEFAULT_NICE = 10;

/**
 * Sets the CPU priority (nice value) of every thread of this process: `nice` when given, else at
 * least DEFAULT_NICE (a process already started nicer, by systemd's Nice= say, stays so). Linux
 * keeps a nice value per thread: setting the process's would reach only the main thread, not
 * V8's collector and compiler threads or libuv's pool (gzip) that exist already; threads started
 * later inherit it. Failing (a lower value takes CAP_SYS_NICE) is a warning, not an error.
 */
export function applyNice(nice: number | undefined, logger: Logger): void {
  const current = getPriority(0);
  const target = nice ?? Math.max(current, DEFAULT_NICE);
  if (target === current) return;
  let threads: number[];
  try {
    threads = readdirSync("/proc/self/task").map(Number);
  } catch {
    threads = [0]; // no /proc (not Linux): the process itself
  }
  try {
    for (const thread of threads) {
      try {
        setPriority(thread, target);
      } catch (error) {
        if ((error as { code?: string }).code !== "ESRCH") throw error; // that thread has ended
      }
    }
    logger.info({ nice: target, was: current }, "CPU priority set");
  } catch (error) {
    logger.warn(
      { nice: target, current, code: (error as { code?: string }).code },
      `could not set the CPU priority to nice ${target} (a lower value than the current one takes CAP_SYS_NICE); running at nice ${current}`,
    );
  }
}
