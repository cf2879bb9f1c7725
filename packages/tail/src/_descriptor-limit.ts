/**
 * How many TCP syslog connections this process can afford: a share of its open-file limit, so
 * that idle connections can never take the descriptors its log files, journal, spool,
 * checkpoints and API need (400 idle connections under a 256-descriptor limit used to starve the
 * whole process: EMFILE on the log directory, no /healthz, nothing shipped).
 */
import { readFileSync } from "node:fs";

/** Descriptors kept for everything else: followed files, journal segments, spool, checkpoints, S3 sockets, the API's 64 connections. */
export const RESERVED_DESCRIPTORS = 192;
/** Far more than the senders one sidecar serves (one rsyslog keeps one connection per action). */
export const MAX_TCP_CONNECTIONS = 1024;
/** Even under a very low limit a few senders can connect. */
export const MIN_TCP_CONNECTIONS = 8;

/**
 * The process's soft limit on open files from /proc/self/limits (Linux; Node raises the soft
 * limit to the hard one at start), or undefined where it cannot be read or is unlimited.
 */
export function openFileLimit(limits?: string): number | undefined {
  let text = limits;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/self/limits", "utf8");
    } catch {
      return undefined;
    }
  }
  // "Max open files            1024                 1048576              files"
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** Half of what the limit leaves after RESERVED_DESCRIPTORS, within MIN_ and MAX_TCP_CONNECTIONS. */
export function tcpConnectionCap(limit: number | undefined): number {
  if (limit === undefined) return MAX_TCP_CONNECTIONS;
  const share = Math.floor((limit - RESERVED_DESCRIPTORS) / 2);
  return Math.min(MAX_TCP_CONNECTIONS, Math.max(MIN_TCP_CONNECTIONS, share));
}
