/**
 * The worker threads of a parallel `analyze`, started before the command's modules load. A
 * worker takes ~0.15 s from its creation to its first record (Node's bootstrap of a fresh
 * isolate, then the bundle), and parallel.ts creates it only once the command's modules are
 * loaded and the input planned: the main thread reads alone meanwhile. Started here, as the
 * command is dispatched (main.ts), a worker's start overlaps the main thread's own.
 *
 * From the command line alone, before its flags are checked: a guess. A worker started for a run
 * that turns out serial (a usage error, an input too small or compressed) is stopped unused (its
 * start-up CPU spent, nothing else); a run the guess missed starts its workers as before. The
 * report never depends on it: a started worker waits for its setup (ToWorker `setup`) and then
 * reads what it is sent, as one parallel.ts starts does. This module loads nothing but Node's.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

/** Inputs smaller than this in all are read by one thread (analyze's parallel threshold). */
export const PARALLEL_MIN_BYTES: number = 24 << 20;

/** analyze's flags that take a value (the next argument, unless given as --flag=value). */
const VALUE_FLAGS = new Set(["--format", "--prefix", "--pgaudit-log", "--jobs"]);

/** Started and not yet taken. */
let started: { worker: Worker; exited: boolean }[] = [];

/** The worker module and how to start it (source under vitest and `--conditions`, or the bundle). */
export function workerUrl(): { url: URL; execArgv?: string[] } {
  const here = import.meta.url;
  if (here.endsWith(".ts"))
    return { url: new URL("./_worker.ts", here), execArgv: ["--conditions=@auditpipe/source"] };
  return { url: new URL(here.includes("/chunks/") ? "../analyze-worker.js" : "./analyze-worker.js", here) };
}

/** A worker of parallel `analyze`, without its setup: it waits for ToWorker `setup`. */
export function startWorker(): Worker {
  const { url, execArgv } = workerUrl();
  return new Worker(url, execArgv ? { execArgv } : {});
}

/**
 * Starts the workers `analyze ARGV` will read with, when the command line says it will read on
 * more than one thread (see the module comment). Unreferenced until taken: they keep no process
 * alive.
 */
export function prestartWorkers(argv: string[]): void {
  const count = workersFor(argv);
  for (let i = 0; i < count; i++) {
    const worker = startWorker();
    const entry = { worker, exited: false };
    worker.unref();
    // Until taken, a failure is only noted: take() skips it and parallel.ts starts another.
    worker.on("error", () => {});
    worker.once("exit", () => {
      entry.exited = true;
    });
    started.push(entry);
  }
}

/**
 * Up to `count` workers started by prestartWorkers, referenced again; any others are stopped
 * (also when `count` is 0: the run is serial).
 */
export function takeWorkers(count: number): Worker[] {
  const taken: Worker[] = [];
  for (const entry of started) {
    if (!entry.exited && taken.length < count) {
      entry.worker.ref();
      taken.push(entry.worker);
    } else if (!entry.exited) void entry.worker.terminate();
  }
  started = [];
  return taken;
}

/**
 * Workers a parallel `analyze ARGV` would start: jobs - 1 where the inputs are plain files of
 * PARALLEL_MIN_BYTES or more in all; 0 for help, standard input, a glob, a .gz file, a file that
 * is not there or anything else the guess cannot read plainly.
 */
export function workersFor(argv: string[]): number {
  let jobs = 0;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      files.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith("-") && arg !== "-") {
      const eq = arg.indexOf("=");
      const name = eq < 0 ? arg : arg.slice(0, eq);
      if (name === "--json") continue;
      if (!VALUE_FLAGS.has(name)) return 0; // --help, or a flag the guess does not know
      const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) return 0;
      if (name === "--jobs") {
        if (!/^[1-9][0-9]{0,3}$/.test(value)) return 0; // a usage error follows
        jobs = Number(value);
      }
      continue;
    }
    files.push(arg);
  }
  const threads = jobs > 0 ? jobs : availableParallelism();
  if (threads < 2 || files.length === 0) return 0;
  let total = 0;
  for (const file of files) {
    const size = plainFileSize(file);
    if (size === undefined) return 0;
    total += size;
  }
  return total >= PARALLEL_MIN_BYTES ? threads - 1 : 0;
}

/** The size of a plain (not gzip) regular file; undefined for anything else. */
function plainFileSize(file: string): number | undefined {
  if (file === "-" || file === "/dev/stdin") return undefined;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return undefined;
    const fd = openSync(file, "r");
    try {
      const head = Buffer.alloc(2);
      const n = readSync(fd, head, 0, 2, 0);
      if (n === 2 && head[0] === 0x1f && head[1] === 0x8b) return undefined;
    } finally {
      closeSync(fd);
    }
    return stat.size;
  } catch {
    return undefined;
  }
}
