/**
 * The syslog destination: PostgreSQL's backends call libc's syslog(), which sends each message
 * to the /dev/log socket; a syslog daemon there writes them to a file bench reads. bench does not
 * take /dev/log over (the machine's own logging lives there): it needs a daemon already
 * listening, and the file it writes PostgreSQL's messages to (--syslog-file).
 */
import { existsSync, statSync } from "node:fs";
import { AUDITPIPE_ERR_BENCH_NO_SYSLOG, BenchError } from "@auditpipe/overhead";
import type pg from "pg";
import { writeMarker } from "./log-range.ts";

/** glibc's _PATH_LOG: where syslog(3) sends. */
export const SYSLOG_SOCKET = "/dev/log";
/** How long the first message may take to reach the daemon's file. */
const PROBE_TIMEOUT_MS = 15_000;

/** What a syslog daemon needs, for the messages that say it is missing. */
export const SYSLOG_NEEDS =
  'a syslog daemon listening on /dev/log that writes PostgreSQL\'s messages (program name postgres) to a file of their own with no rate limit on its local socket — rsyslog: module(load="imuxsock" SysSock.RateLimit.Interval="0") and if $programname == \'postgres\' then /var/log/postgresql-bench.log — and that file passed as --syslog-file FILE';

/** Why syslog cannot be measured here (nothing on the socket), or null when something is there. */
export function syslogSocketProblem(socket: string = SYSLOG_SOCKET): string | null {
  let isSocket = false;
  try {
    isSocket = statSync(socket).isSocket();
  } catch {}
  if (isSocket) return null;
  return `--log-destination syslog: nothing listens on ${socket}, where PostgreSQL's syslog() writes (${existsSync(socket) ? "it is not a socket" : "it does not exist"}); needs ${SYSLOG_NEEDS}`;
}

/**
 * After the server was switched to syslog: one record through it, waited for in the daemon's
 * file, so a daemon that drops PostgreSQL's messages or writes them elsewhere stops the bench
 * before it measures, instead of every syslog run counting nothing.
 */
export async function probeSyslog(client: pg.Client, file: string): Promise<void> {
  const deadline = Date.now() + PROBE_TIMEOUT_MS;
  const fail = (why: string): BenchError =>
    new BenchError(
      AUDITPIPE_ERR_BENCH_NO_SYSLOG,
      `--syslog-file ${file}: ${why}: is the daemon on ${SYSLOG_SOCKET} writing PostgreSQL's messages (program name postgres) there? bench needs ${SYSLOG_NEEDS}`,
    );
  // The daemon creates the file on its first message.
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw fail(`nothing was written to it within ${PROBE_TIMEOUT_MS / 1000} s`);
    await client.query("DO $$ BEGIN RAISE LOG 'auditpipe-bench-syslog-probe'; END $$");
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    await writeMarker(client, async () => ({ path: file }), null);
  } catch (error) {
    throw fail((error as Error).message);
  }
}
