import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rsyslogdBinary } from "./paths.ts";
import { isRoot, onExit, removeTree, sleep, waitUntil } from "./process.ts";
import { refuseInUnitTier } from "./tiers.ts";

/** Where PostgreSQL's syslog(3) writes: glibc's _PATH_LOG. */
const DEV_LOG = "/dev/log";
/** One test at a time may own /dev/log; others wait for this lock. */
const DEV_LOG_LOCK = join(tmpdir(), "auditpipe-dev-log.lock");
const LOCK_WAIT_MS = 300_000;
/**
 * The timeout of a test that calls startRsyslog: it may first wait up to LOCK_WAIT_MS for another
 * test's /dev/log (the syslog outage test holds it for over a minute), then run its own work.
 */
export const SYSLOG_TEST_TIMEOUT_MS: number = LOCK_WAIT_MS + 300_000;
const START_TIMEOUT_MS = 15_000;

export interface SyslogForward {
  protocol: "udp" | "tcp";
  port: number;
  /** Wire format; default `rfc5424`. */
  format?: "rfc3164" | "rfc5424";
  /** TCP framing; default `octet-counted` (RFC 6587), or `traditional` (LF-terminated). */
  framing?: "octet-counted" | "traditional";
  /**
   * Keep messages while the receiver is down and retry every second, never giving up (an
   * in-memory action queue, `action.resumeRetryCount="-1"`), as docs/syslog.md recommends.
   * Default: rsyslog's own, which drops what fails and retries only after 30 s.
   */
  retry?: boolean;
}

export interface RsyslogOptions {
  /** Only messages whose program name (syslog ident) is one of these are written; default `["postgres"]`. */
  programs?: string[];
  /** Also forward the same messages to loopback receivers. */
  forward?: SyslogForward[];
}

export interface RsyslogDaemon {
  /** Files rsyslog writes: RFC 3164 (traditional), RFC 5424, and rsyslog's default high-precision file format. */
  readonly files: { rfc3164: string; rfc5424: string; rsyslogFile: string };
  readonly dir: string;
  /** Waits until `file` contains `text` (rsyslog writes asynchronously). */
  waitForText(file: string, text: string, timeoutMs?: number): Promise<void>;
  /** Stops rsyslogd, restores what /dev/log was before, removes its files; safe to call twice. */
  stop(): Promise<void>;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function acquireDevLogLock(): Promise<() => void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(DEV_LOG_LOCK, "wx");
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(DEV_LOG_LOCK, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number(readFileSync(DEV_LOG_LOCK, "utf8").trim() || "0");
      if (holder && !pidAlive(holder)) {
        rmSync(DEV_LOG_LOCK, { force: true }); // stale: its owner died without cleaning up
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${DEV_LOG_LOCK} held by pid ${holder}`);
      await sleep(200);
    }
  }
}

const TEMPLATES = {
  rfc3164: "RSYSLOG_TraditionalForwardFormat",
  rfc5424: "RSYSLOG_SyslogProtocol23Format",
};

function config(dir: string, options: RsyslogOptions, files: RsyslogDaemon["files"]): string {
  const programs = options.programs ?? ["postgres"];
  const filter = programs.map((p) => `$programname == '${p.replaceAll("'", "\\'")}'`).join(" or ");
  const forwards = (options.forward ?? []).map((f) => {
    const framing = f.protocol === "tcp" ? ` TCP_Framing="${f.framing ?? "octet-counted"}"` : "";
    const retry = f.retry
      ? ` queue.type="LinkedList" action.resumeRetryCount="-1" action.resumeInterval="1"`
      : "";
    return `  action(type="omfwd" target="127.0.0.1" port="${f.port}" protocol="${f.protocol}"${framing}${retry} template="${TEMPLATES[f.format ?? "rfc5424"]}")`;
  });
  return [
    `global(workDirectory="${join(dir, "work")}" maxMessageSize="64k")`,
    // No rate limit: a pgbench run writes thousands of lines a second and the tests count every one.
    `module(load="imuxsock" SysSock.Use="on" SysSock.Name="${DEV_LOG}" SysSock.RateLimit.Interval="0" SysSock.Unlink="on")`,
    `if (${filter}) then {`,
    `  action(type="omfile" file="${files.rfc3164}" template="RSYSLOG_TraditionalFileFormat")`,
    `  action(type="omfile" file="${files.rfc5424}" template="RSYSLOG_SyslogProtocol23Format")`,
    `  action(type="omfile" file="${files.rsyslogFile}" template="RSYSLOG_FileFormat")`,
    ...forwards,
    "}",
    "",
  ].join("\n");
}

/**
 * Starts a private rsyslogd that owns /dev/log for the test's duration (what was there is put
 * back on stop or exit) and writes what PostgreSQL sends in RFC 3164 and RFC 5424 files.
 * Needs root, as binding /dev/log does.
 */
export async function startRsyslog(options: RsyslogOptions = {}): Promise<RsyslogDaemon> {
  refuseInUnitTier("startRsyslog");
  const bin = rsyslogdBinary();
  if (!isRoot())
    throw new Error("startRsyslog needs root: it binds /dev/log, where PostgreSQL's syslog(3) writes");
  const releaseLock = await acquireDevLogLock();
  const devLogBefore = devLogIdentity(); // checked again in stop(), still under the lock
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-rsyslog-"));
  mkdirSync(join(dir, "work"));
  const files = {
    rfc3164: join(dir, "rfc3164.log"),
    rfc5424: join(dir, "rfc5424.log"),
    rsyslogFile: join(dir, "rsyslog-file.log"),
  };
  const saved = `${DEV_LOG}.auditpipe-saved-${process.pid}`;
  let hadDevLog = false;
  let child: ChildProcess | undefined;

  const restoreDevLog = (): void => {
    try {
      if (existsSync(DEV_LOG) || isDanglingLink(DEV_LOG)) rmSync(DEV_LOG, { force: true });
    } catch {}
    if (hadDevLog) renameSync(saved, DEV_LOG);
    hadDevLog = false;
  };
  const unregister = onExit(() => {
    if (child?.exitCode === null) child.kill("SIGKILL");
    restoreDevLog();
    removeTree(dir);
    releaseLock();
  });

  try {
    if (existsSync(DEV_LOG) || isDanglingLink(DEV_LOG)) {
      renameSync(DEV_LOG, saved);
      hadDevLog = true;
    }
    const confFile = join(dir, "rsyslog.conf");
    writeFileSync(confFile, config(dir, options, files));
    const output: string[] = [];
    child = spawn(bin, ["-n", "-f", confFile, "-i", join(dir, "rsyslogd.pid")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.setEncoding("utf8").on("data", (d: string) => output.push(d));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => output.push(d));
    const started = child;
    await waitUntil(
      () => started.exitCode !== null || isSocket(DEV_LOG),
      START_TIMEOUT_MS,
      () => `rsyslogd did not create ${DEV_LOG} within ${START_TIMEOUT_MS / 1000}s:\n${output.join("")}`,
    );
    if (started.exitCode !== null)
      throw new Error(`rsyslogd exited at start (code ${started.exitCode}):\n${output.join("")}`);

    let stopped = false;
    return {
      files,
      dir,
      async waitForText(file, text, timeoutMs = 10_000) {
        await waitUntil(
          () => existsSync(file) && readFileSync(file, "utf8").includes(text),
          timeoutMs,
          () => `rsyslog did not write ${JSON.stringify(text)} to ${file} within ${timeoutMs} ms`,
        );
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        if (started.exitCode === null) {
          const exited = new Promise<void>((resolve) => started.once("exit", () => resolve()));
          started.kill("SIGTERM");
          await exited;
        }
        restoreDevLog();
        const devLogAfter = devLogIdentity();
        removeTree(dir);
        releaseLock();
        unregister();
        if (devLogAfter !== devLogBefore)
          throw new Error(`/dev/log was not put back: ${devLogBefore} before, ${devLogAfter} after`);
      },
    };
  } catch (error) {
    if (child?.exitCode === null) child.kill("SIGKILL");
    restoreDevLog();
    removeTree(dir);
    releaseLock();
    unregister();
    throw error;
  }
}

/** What /dev/log is (device:inode, or "absent"), to tell it was put back. */
function devLogIdentity(): string {
  try {
    const s = lstatSync(DEV_LOG);
    return `${s.dev}:${s.ino}`;
  } catch {
    return "absent";
  }
}

function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink() && !existsSync(path);
  } catch {
    return false;
  }
}
