import { link, mkdir, rm, rmdir, stat, unlink } from "node:fs/promises";
import { createConnection, createServer, type Server } from "node:net";
import { join } from "node:path";
import { ensureDir } from "@auditpipe/ship";

/**
 * One sidecar per state directory. Two on one directory both followed the same files (thousands
 * of duplicates) and raced on the checkpoint file's rename.
 *
 * Node has no flock() and no fcntl(), and every npm package that offers them builds native code.
 * The lock is instead a unix socket in the state directory that the holder listens on: the
 * kernel closes it when the process dies however it dies (kill -9, OOM), so a connection to a
 * dead holder's socket is refused at once, and a live holder answers with its PID. That is the
 * property of an flock (released by the kernel) without a PID file's guesswork (a PID reused by
 * another process, PID namespaces in containers, a stale file after a crash).
 *
 * Taking it is atomic: the socket is bound under a name of its own and then hard-linked to the
 * lock's name (link() fails if the name exists). A stale socket is removed under a small mkdir()
 * mutex, after checking again that it is still refused, so two sidecars starting at once cannot
 * both take it. Only one host's processes can be told apart this way: a state directory on a
 * network file system shared by two machines is not protected (give each sidecar its own state).
 */

export const STATE_LOCK_FILE = "auditpipe.lock";
export const STATE_LOCKED = "AUDITPIPE_ERR_STATE_LOCKED" as const;
/** A unix socket's path fits in 108 bytes on Linux and 104 on macOS, its final NUL included. */
const MAX_SOCKET_PATH_BYTES = 103;
/** A holder that accepted the connection but did not answer within this long is taken as alive. */
const ANSWER_TIMEOUT_MS = 2_000;
/** A takeover mutex older than this was left by a process that died in the middle of one. */
const STALE_MUTEX_MS = 10_000;
/** Taking the lock (a dead holder's socket being replaced by another starter) gives up after this long. */
const TAKE_TIMEOUT_MS = 30_000;

/** The state directory is held by another live process (or cannot be locked). */
export class StateLockError extends Error {
  readonly code: typeof STATE_LOCKED = STATE_LOCKED;
  /** The holder's PID, when it answered. */
  readonly holderPid?: number;
  constructor(message: string, holderPid?: number) {
    super(message);
    this.holderPid = holderPid;
    this.name = "StateLockError";
  }
}

export interface StateLock {
  /** Gives the directory up (at shutdown; a process that dies gives it up by itself). */
  release(): Promise<void>;
}

type Holder = { state: "alive"; pid?: number } | { state: "dead" } | { state: "absent" };

/** Takes the state directory's lock, or throws a StateLockError naming the holder's PID. */
export async function lockStateDir(dir: string): Promise<StateLock> {
  await ensureDir(dir).catch((error: unknown) => {
    throw new Error(`--state ${dir}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const lockPath = join(dir, STATE_LOCK_FILE);
  const ownPath = `${lockPath}.${process.pid}`;
  if (Buffer.byteLength(ownPath) > MAX_SOCKET_PATH_BYTES)
    throw new StateLockError(
      `--state ${dir}: the path is too long for the state lock (a unix socket path holds at most ${MAX_SOCKET_PATH_BYTES} bytes); use a shorter state directory`,
    );
  await rm(ownPath, { force: true }); // left by an earlier process that had this PID
  const server = await listen(ownPath);
  try {
    const deadline = Date.now() + TAKE_TIMEOUT_MS;
    for (;;) {
      try {
        await link(ownPath, lockPath);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await ask(lockPath);
      if (holder.state === "alive")
        throw new StateLockError(
          holder.pid === undefined
            ? `--state ${dir} is in use by another auditpipe run (it did not say its PID); one sidecar per state directory`
            : `--state ${dir} is in use by another auditpipe run, PID ${holder.pid}; one sidecar per state directory (stop it, or give this one its own --state)`,
          holder.pid,
        );
      if (holder.state === "dead") await removeStale(lockPath);
      if (Date.now() > deadline)
        throw new StateLockError(
          `--state ${dir}: could not take the state lock within ${TAKE_TIMEOUT_MS / 1000} s`,
        );
    }
  } catch (error) {
    await close(server);
    await rm(ownPath, { force: true });
    throw error;
  }
  await unlink(ownPath); // the socket answers through the lock's name now
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      // The name goes first: a process starting in between finds no lock rather than a dead one.
      await rm(lockPath, { force: true });
      await close(server);
    },
  };
}

function listen(path: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      socket.on("error", () => {});
      socket.end(`${JSON.stringify({ pid: process.pid })}\n`);
    });
    server.once("error", (error) =>
      reject(new StateLockError(`cannot create the state lock ${path}: ${error.message}`)),
    );
    server.listen(path, () => {
      server.unref(); // the lock never keeps the process alive
      resolve(server);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Who holds the lock's socket: a live process (and its PID), a dead one, or nobody. */
function ask(path: string): Promise<Holder> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    let answer = "";
    let connected = false;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ state: "alive" });
    }, ANSWER_TIMEOUT_MS);
    socket.setEncoding("utf8");
    socket.on("connect", () => {
      connected = true;
    });
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("end", () => {
      clearTimeout(timer);
      const pid = Number(/"pid":(\d+)/.exec(answer)?.[1]);
      resolve(Number.isSafeInteger(pid) && pid > 0 ? { state: "alive", pid } : { state: "alive" });
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (connected) resolve({ state: "alive" });
      else if (error.code === "ENOENT") resolve({ state: "absent" });
      else resolve({ state: "dead" }); // ECONNREFUSED: nobody listens, the holder died
    });
  });
}

/** Removes a dead holder's socket, unless another process is already doing so or took the lock since. */
async function removeStale(lockPath: string): Promise<void> {
  const mutex = `${lockPath}.takeover`;
  try {
    await mkdir(mutex);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const since = await stat(mutex).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > STALE_MUTEX_MS) await rmdir(mutex).catch(() => {});
    else await new Promise((resolve) => setTimeout(resolve, 20)); // another process is taking over
    return;
  }
  try {
    if ((await ask(lockPath)).state === "dead") await rm(lockPath, { force: true });
  } finally {
    await rmdir(mutex).catch(() => {});
  }
}
