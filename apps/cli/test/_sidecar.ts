import { type ChildProcess, type ChildProcessByStdio, spawn } from "node:child_process";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { waitUntil } from "@auditpipe/testkit";

const CLI = join(import.meta.dirname, "..", "src", "_run.ts");
/** The built launcher (`pnpm build` first): what `npx auditpipe` runs. */
const BIN = join(import.meta.dirname, "..", "bin", "auditpipe.js");
const ROOT = join(import.meta.dirname, "..", "..", "..");

export interface SidecarProcess {
  child: ChildProcess;
  /** Everything it wrote to stderr (pino JSON lines). */
  stderr(): string;
  /** The API's base URL, once it logged it. */
  url(): Promise<string>;
  /**
   * The port of its first `--syslog tcp://127.0.0.1:0` listener, once it logged it. The API binds
   * before any source starts, so the URL comes first: the syslog line follows once the journal is
   * open and its follower started.
   */
  syslogTcpPort(): Promise<number>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Any `auditpipe` command as a real process from the repository root, stdout and stderr piped:
 * from source (Node strips the types), or with `built`, through the built launcher `bin/auditpipe.js`.
 */
export function spawnCli(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  options: SpawnOptions = {},
): ChildProcessByStdio<null, Readable, Readable> {
  const node = options.built
    ? options.direct
      ? [options.bin ?? BIN, ...argv]
      : [process.execPath, options.bin ?? BIN, ...argv]
    : [process.execPath, "--conditions=@auditpipe/source", CLI, ...argv];
  // With a umask: through a shell that sets it and execs node (same process, the umask inherited).
  const shell =
    options.umask === undefined
      ? node
      : ["/bin/sh", "-c", `umask ${options.umask.toString(8)} && exec "$0" "$@"`, ...node];
  // prlimit execs the command: the child's PID is the CLI's own.
  const [command, ...args] =
    options.nofile === undefined
      ? shell
      : ["prlimit", `--nofile=${options.nofile}:${options.nofile}`, "--", ...shell];
  return spawn(command!, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
  });
}

export interface SpawnOptions {
  /** Through the built launcher `bin/auditpipe.js` instead of the TypeScript source. */
  built?: boolean;
  /** With `built`: another build's launcher (benchmarks comparing two builds in one run). */
  bin?: string;
  /**
   * With `built`: the launcher run as a command, by its `#!` line, as an installed `auditpipe` is
   * (the `node` on PATH), rather than given to this Node.js.
   */
  direct?: boolean;
  /** Run as this OS user (the test runs as root): e.g. `postgres`, the owner of the log files. */
  user?: { uid: number; gid: number };
  /** Its open-file limit, soft and hard (util-linux's `prlimit --nofile`). */
  nofile?: number;
  /** The process's umask (e.g. 0o022, a login shell's); default: the test process's. */
  umask?: number;
}

/**
 * Starts `auditpipe run` from source as a real process (so it can be SIGTERMed or killed -9); with
 * `built`, through the built launcher `bin/auditpipe.js` instead (benchmarks: no TypeScript loader).
 */
export function spawnSidecar(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: SpawnOptions = {},
): SidecarProcess {
  return spawnServer(["run", ...args], env, options);
}

/** Any command that serves the API (`run`, `serve`), its stderr kept and its URL read from its log. */
export function spawnServer(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  options: SpawnOptions = {},
): SidecarProcess {
  const child = spawnCli(argv, env, options);
  let err = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    stderr: () => err,
    exited,
    async url() {
      await waitUntil(
        () => /"url":"http:[^"]+"/.test(err) || child.exitCode !== null,
        30_000,
        () => `${argv[0]} did not start listening:\n${err}`,
      );
      const url = /"url":"(http:[^"]+)"/.exec(err)?.[1];
      if (!url) throw new Error(`${argv[0]} exited before listening:\n${err}`);
      return url;
    },
    async syslogTcpPort() {
      const listening = /"listen":\["tcp:\/\/127\.0\.0\.1:(\d+)"/;
      await waitUntil(
        () => listening.test(err) || child.exitCode !== null,
        30_000,
        () => `sidecar did not start receiving syslog:\n${err}`,
      );
      const port = Number(listening.exec(err)?.[1]);
      if (!(port > 0)) throw new Error(`sidecar exited before receiving syslog:\n${err}`);
      return port;
    },
  };
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return (await response.json()) as T;
}

/**
 * One sample of a Prometheus text page, by its series as printed (`name` or `name{label="v"}`);
 * NaN when the page has no such line.
 */
export function metricValue(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}
