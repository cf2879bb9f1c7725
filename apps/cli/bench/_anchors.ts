/**
 * The yardsticks the sidecar's targets are ratios of (issue 24), measured in the same run as the
 * sidecar, on the same file: `gzip -6` and `zstd -1` of the raw log (what any shipper that
 * compresses the log pays) and `node -e ''` (the floor of any Node process's start-up). CPU is
 * user + system time of the command and its threads, read from its shell's reaped-children times
 * (/proc/<shell>/stat, cutime + cstime) so nothing but the command itself is counted.
 */
import { spawnSync } from "node:child_process";

/** Clock ticks per second of /proc's times (USER_HZ; 100 on every Linux this runs on). */
const TICKS = 100;

/**
 * CPU seconds `command args…` used, run `repeat` times in a row (stdout discarded), divided by
 * `repeat`: a short command (node -e '') is repeated so the 10 ms ticks do not dominate.
 */
export function commandCpuSeconds(command: string, args: string[], repeat = 1): number {
  const script =
    'n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do "$@" > /dev/null || exit 1; i=$((i + 1)); done; cat /proc/$$/stat';
  const r = spawnSync("sh", ["-c", script, "sh", String(repeat), command, ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
  });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${r.stderr}`);
  // Fields after the command name: state is [0], so cutime (field 16) is [13] and cstime [14].
  const fields = r.stdout.split(") ")[1]!.split(" ");
  return (Number(fields[13]) + Number(fields[14])) / TICKS / repeat;
}

export interface Anchors {
  /** CPU µs per audit entry of `gzip -6 -c FILE > /dev/null`. */
  gzipMicrosPerEntry: number;
  /** CPU µs per audit entry of `zstd -1 -c FILE > /dev/null`. */
  zstdMicrosPerEntry: number;
  /** CPU seconds of `node -e ''` (this Node), mean of 10 runs. */
  nodeStartSeconds: number;
}

/** One measurement of each anchor over `file`, which holds `entries` audit entries. */
export function measureAnchors(file: string, entries: number): Anchors {
  const per = (seconds: number) => Number(((seconds * 1e6) / entries).toFixed(2));
  return {
    gzipMicrosPerEntry: per(commandCpuSeconds("gzip", ["-6", "-c", file])),
    zstdMicrosPerEntry: per(commandCpuSeconds("zstd", ["-1", "-q", "-c", file])),
    nodeStartSeconds: Number(commandCpuSeconds(process.execPath, ["-e", ""], 10).toFixed(3)),
  };
}

/** The lowest of each figure over several measurements (each taken between the sidecar's runs). */
export function bestAnchors(all: Anchors[]): Anchors {
  return {
    gzipMicrosPerEntry: Math.min(...all.map((a) => a.gzipMicrosPerEntry)),
    zstdMicrosPerEntry: Math.min(...all.map((a) => a.zstdMicrosPerEntry)),
    nodeStartSeconds: Math.min(...all.map((a) => a.nodeStartSeconds)),
  };
}
