import { type SpawnOptions, spawn, spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer } from "node:net";

/** Synchronous clean-ups run when the test process exits, however it exits. */
const exitCleanups = new Set<() => void>();
let hooked = false;

function runExitCleanups(): void {
  for (const cleanup of exitCleanups) {
    try {
      cleanup();
    } catch {
      // Best effort: the process is going away.
    }
  }
  exitCleanups.clear();
}

/** Registers a synchronous clean-up for process exit; returns a function that unregisters it. */
export function onExit(cleanup: () => void): () => void {
  if (!hooked) {
    hooked = true;
    process.once("exit", runExitCleanups);
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      const onSignal = (): void => {
        // A process that handles the signal itself (`auditpipe demo` stops its servers in order on
        // Ctrl-C) keeps them until it does; the exit hook still cleans up whatever is left.
        if (process.listenerCount(signal) > 1) return;
        process.off(signal, onSignal);
        runExitCleanups();
        process.kill(process.pid, signal);
      };
      process.on(signal, onSignal);
    }
  }
  exitCleanups.add(cleanup);
  return () => exitCleanups.delete(cleanup);
}

/** Removes a directory tree, ignoring a tree that is already gone. */
export function removeTree(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** A free TCP port on loopback, as the kernel hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("could not allocate a free port"));
      });
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns true or the deadline passes, then throws `describe()`'s message. */
export async function waitUntil(
  probe: () => Promise<boolean> | boolean,
  timeoutMs: number,
  describe: () => string,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(describe());
    await sleep(intervalMs);
  }
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, collecting its output; never rejects on a non-zero exit. */
export function run(
  command: string,
  args: string[],
  options: SpawnOptions & { input?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    // A child that exits without reading all of its input (killed by the Ctrl-C that stops the
    // demo, or one that reads none) makes the write fail with EPIPE: its exit status tells the rest.
    child.stdin?.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") reject(error);
    });
    child.stdin?.end(options.input ?? "");
  });
}

/** uid/gid of an OS user by name, or undefined when there is no such user. */
export function lookupUser(name: string): { uid: number; gid: number } | undefined {
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}
