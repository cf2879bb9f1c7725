/**
 * `analyze` on every core: the files are cut into ranges (chunk.ts) read by this thread and
 * worker threads (range-reader.ts), one range after another, and merged here into the report one
 * thread reading every file in order would give (read-logs.ts, which stays the reader of small inputs and of stdin).
 *
 * - A plain file is cut into ranges (rangeStarts: one per thread, up to 64 MiB); each range
 *   starts at the first record its reader finds at or after its nominal start and is accepted
 *   only when that is exactly where the range before it ended (its reader read on to the next record's start): otherwise it is read again
 *   from there. A .gz file is one range (one decompressing reader per file), and so is a syslog
 *   file (its parser gives a process's records out of file order).
 * - Tallies are sums, minimums and maximums of the ranges' (VolumeTally.merge).
 * - The outcome join follows each session through the stream, but a session forgets its past
 *   at its next transaction: each range is joined on its own as it is read (RangeJoin), keeping
 *   only its edge (what sessions logged before their first new transaction in it), and merged
 *   with the join's state at its start once the range before it is (mergeRange, in the worker
 *   that read it): the same decisions and state as one join in order. Where the merge cannot
 *   tell (a prepared transaction, MISC entries that other sessions wait on, the caps), the range
 *   is read again joined from that state. A range whose state is known when it is handed out
 *   (the first, a range read again) is joined from it as it is read.
 *
 * Memory: per reader, the range it reads and at most MAX_HELD ranges (MAX_HELD_BYTES of them)
 * read and not yet merged, each its own join's state and its edge: bounded by the sessions open
 * and the records of a session's unfinished transaction, not by the input's size (where the log
 * carries no virtual transaction id, a session that never BEGINs is all edge: at most its range). The tallies hold one
 * entry per distinct key (class, command, audit type, object, user, database, SQLSTATE) per range
 * until merged, and the join its open sessions and transactions (bounded by its caps).
 */
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { type VolumeReport, VolumeTally } from "@auditpipe/meter/volume";
import type { LogFormat } from "@auditpipe/parse";
import {
  type ChunkJoined,
  type ChunkRead,
  type ChunkTask,
  endJoin,
  type HeldChunk,
  type JoinState,
  joinChunk,
  PROBE_BYTES,
  RangeRecords,
  readChunk,
} from "./chunk.ts";
import { type LoggingSigns, mergeSigns, noSigns, outcomeHints } from "./outcomes.ts";
import { PARALLEL_MIN_BYTES, startWorker, takeWorkers } from "./prestart.ts";
import { rangeReader } from "./range-reader.ts";
import { type AnalyzeOptions, type FileSummary, fileStart } from "./read-logs.ts";

/** Inputs smaller than this are read in this thread (a worker's start-up costs more than it saves). */
export { PARALLEL_MIN_BYTES };

/**
 * A range's size at most. A range read ahead of the join holds its edge until merged, and in a log
 * without virtual transaction ids whose sessions never BEGIN that is all of its records: this
 * bounds what a thread holds (with MAX_HELD_BYTES).
 */
export const MAX_RANGE_BYTES: number = 64 << 20;
/** A range's size at least, where a file is cut in more than one (smaller ones share little work). */
export const MIN_RANGE_BYTES: number = 8 << 20;
/**
 * Ranges a reader holds read and not yet merged, and their bytes at most: it reads no further
 * range until one is merged (it may always hold one). A held range is its join's state and its
 * edge (a few sessions' records; see MAX_RANGE_BYTES), so a reader may run ahead.
 */
const MAX_HELD = 4;
const MAX_HELD_BYTES = 64 << 20;

/**
 * Where a plain file of `size` bytes is cut for `jobs` threads (nominal starts, the first 0): as
 * few ranges as give each thread an equal share, each at most MAX_RANGE_BYTES and at least
 * MIN_RANGE_BYTES. Few ranges, because each costs more than its own start: a thread that both
 * joins a range as it reads it (the first) and holds one for the merge runs both ways of joining,
 * and V8 compiles and deoptimizes the shared code again for each (a trace of the reference
 * csvlog, 2 threads: ~0.2 s of CPU from 2 ranges to 8, most of it V8's compiler threads).
 */
export function rangeStarts(size: number, jobs: number, lead = 0): number[] {
  const even = jobs * Math.ceil(size / (jobs * MAX_RANGE_BYTES));
  const n = Math.max(1, Math.min(even, Math.floor(size / MIN_RANGE_BYTES)));
  // One range per thread: the last, this thread's, is `lead` bytes longer (see WORKER_START_BYTES).
  const extra = n === jobs && n > 1 && lead < size / n ? lead : 0;
  return Array.from({ length: n }, (_, i) => Math.floor((i * (size - extra)) / n));
}

/**
 * What this thread reads while the workers start (~0.05-0.08 s to load the worker's bundle into a
 * fresh isolate, at ~150 MB/s): where the first file is cut in one range per thread, the last
 * range, which this thread reads from the start, is that much longer, so that all end together.
 */
const WORKER_START_BYTES = 8 << 20;

export interface ParallelOptions extends AnalyzeOptions {
  /** Worker threads; default the cores Node may use (availableParallelism). */
  jobs?: number;
  /** Nominal range size (tests cut small fixtures into many ranges). */
  chunkBytes?: number;
  /** How far before a range's nominal start its first record is looked for (default PROBE_BYTES). */
  probeBytes?: number;
  /** Read the ranges in this thread, one after another (tests: the cutting and merging without threads). */
  inline?: boolean;
  /** Malformed stretches passed to onMalformed per range; the others go to onMalformedNotShown. */
  keepMalformed?: number;
  onMalformedNotShown?: (count: number) => void;
  /** A range started elsewhere than where the range before it ended, and is read again from `from`. */
  onReread?: (file: string, from: number) => void;
  /** A range was joined as it was read, from the state known when it was handed out. */
  onJoinWhileRead?: (file: string) => void;
  /** A range's merge could not tell (see the module comment): it is read again, joined in order. */
  onRejoin?: (file: string) => void;
}

/** Messages between the coordinator and a worker (_worker.ts). */
export type ToWorker =
  | { type: "read"; task: ChunkTask; join?: JoinFrom }
  | { type: "join"; index: number; state: JoinState | undefined }
  | { type: "drop"; index: number }
  | { type: "end" }
  /** First, to every worker: what it reads with (a worker may be started before it is known: prestart.ts). */
  | { type: "setup"; setup: WorkerSetup };
export type FromWorker =
  | { type: "read"; read: ChunkRead }
  | { type: "joined"; joined: ChunkJoined }
  /** The range's merge could not tell: it must be read again, joined from the state. */
  | { type: "refused"; index: number }
  | { type: "progress"; index: number; bytes: number }
  | { type: "error"; message: string };

/** The join's state at a range's start, known before the range is read: it is read from `start` (where the range before ended) and joined as it is read. */
export interface JoinFrom {
  state: JoinState | undefined;
  start: number;
  /** Its merge was refused: this read is for the join only (read and counted already). */
  again?: boolean;
}

/** Data every worker starts with. */
export interface WorkerSetup {
  miscLogged: boolean | undefined;
}

/** Where a file stands in the read: what it was found to be, and the ranges it was cut into. */
interface FilePlan {
  file: string;
  summary: FileSummary;
  tasks: ChunkTask[];
}

/**
 * What each file is (format, prefix: the prefix guess may refuse the input), found in this
 * thread, and the ranges it is cut into: a gzip or syslog file is one range, read whole.
 */
async function planRanges(
  files: string[],
  options: ParallelOptions,
  jobs: number,
): Promise<{ plans: FilePlan[]; tasks: ChunkTask[] }> {
  const chunkBytes = options.chunkBytes;
  const keepMalformed = options.keepMalformed ?? Number.POSITIVE_INFINITY;
  const plans: FilePlan[] = [];
  const tasks: ChunkTask[] = [];
  for (const file of files) {
    const size = statSync(file).size;
    const start = await fileStart(file, options);
    if (start === undefined) continue; // nothing in it: no summary, as analyzeFiles
    const { summary, gzip } = start;
    const whole = gzip || summary.format === "syslog";
    const plan: FilePlan = { file, summary, tasks: [] };
    const starts =
      size === 0
        ? []
        : whole
          ? [0]
          : chunkBytes === undefined
            ? rangeStarts(size, jobs, tasks.length === 0 ? WORKER_START_BYTES : 0)
            : Array.from({ length: Math.max(1, Math.ceil(size / chunkBytes)) }, (_, i) => i * chunkBytes);
    for (let i = 0; i < starts.length; i++) {
      const at = starts[i]!;
      const task: ChunkTask = {
        index: tasks.length,
        file,
        size,
        gzip,
        format: summary.format,
        prefix: summary.prefix,
        start: at,
        end: starts[i + 1] ?? size,
        exactStart: at === 0,
        keepMalformed: Number.isFinite(keepMalformed) ? keepMalformed : 1e9,
        probeBytes: options.probeBytes ?? PROBE_BYTES,
      };
      plan.tasks.push(task);
      tasks.push(task);
    }
    plans.push(plan);
  }
  return { plans, tasks };
}

/**
 * The volume report of `files` (the files of one log stream, in order), read on `jobs` threads:
 * the same report, file summaries and malformed stretches as analyzeFiles, in the same order.
 * Options that hand every entry to a callback (onEntry, outcomes.onOutcome/onAttempt) need one
 * thread: analyzeFiles serves them.
 */
export async function analyzeFilesParallel(files: string[], options: ParallelOptions): Promise<VolumeReport> {
  const miscLogged = options.outcomes?.miscLogged;
  const total = files.reduce((sum, f) => sum + statSync(f).size, 0);
  const jobs = Math.max(1, options.jobs ?? availableParallelism());
  const { plans, tasks } = await planRanges(files, options, jobs);
  const tally = new VolumeTally();
  const signs: LoggingSigns = noSigns();
  const prefixes = new Set<string>();
  for (const { summary } of plans)
    if ((summary.format === "stderr" || summary.format === "syslog") && summary.prefix !== undefined)
      prefixes.add(summary.prefix);
  const planOf = new Map<number, FilePlan>();
  for (const plan of plans) for (const t of plan.tasks) planOf.set(t.index, plan);

  const runner: Runner = options.inline
    ? new InlineRunner(miscLogged)
    : new ThreadRunner(Math.max(1, Math.min(jobs, tasks.length)), {
        miscLogged,
      });
  let done = 0;
  const progressOf = new Map<number, number>();
  const onProgress = (index: number, bytes: number): void => {
    progressOf.set(index, (progressOf.get(index) ?? 0) + bytes);
    done += bytes;
    options.onProgress?.(Math.min(done, total), total);
  };

  try {
    await coordinate(tasks, runner, onProgress, {
      accepted(read, task) {
        tally.merge(read.tally);
        mergeSigns(signs, read.signs);
        const plan = planOf.get(task.index)!;
        plan.summary.records += read.records;
        plan.summary.malformed += read.malformed;
        for (const error of read.shown) options.onMalformed?.(task.file, error);
        if (read.hidden > 0) options.onMalformedNotShown?.(read.hidden);
      },
      joinWhileRead(task) {
        options.onJoinWhileRead?.(task.file);
      },
      rejoin(task) {
        options.onRejoin?.(task.file);
      },
      reread(task) {
        options.onReread?.(task.file, task.start);
        // Its bytes are read again: count them once.
        const counted = progressOf.get(task.index) ?? 0;
        progressOf.delete(task.index);
        done -= counted;
      },
      joined(joined) {
        tally.merge(joined.tally);
        const file = tasks[joined.index]!.file;
        for (const event of joined.events) options.outcomes?.onEvent?.(event, file);
      },
      ended(states) {
        for (const state of states) tally.merge(endJoin(state, miscLogged));
      },
    });
  } finally {
    await runner.close();
  }
  // Bytes between a range's nominal start and its first record were read by the range before.
  if (done < total) options.onProgress?.(total, total);
  for (const plan of plans) options.onFileRead?.(plan.file, plan.summary);
  const report = tally.report();
  options.onOutcomeHints?.(outcomeHints(signs, prefixes, report.unknownReasons));
  return report;
}

interface Events {
  accepted(read: ChunkRead, task: ChunkTask): void;
  joinWhileRead(task: ChunkTask): void;
  rejoin(task: ChunkTask): void;
  reread(task: ChunkTask): void;
  joined(joined: ChunkJoined): void;
  /** Every range joined: the join's final state per format. */
  ended(states: JoinState[]): void;
}

/** What runs ranges: worker threads, or this thread (tests). */
interface Runner {
  /** Whether a range of `bytes` may be handed out now (`urgent`: the join waits for it). */
  canRead(urgent: boolean, bytes: number): boolean;
  /** Reads a range; with `join`, returns whether it joins it as it reads (then it reports read, then joined). */
  read(task: ChunkTask, join?: JoinFrom): boolean;
  join(index: number, state: JoinState | undefined): void;
  drop(index: number): void;
  /** The next thing a worker reports. */
  next(): Promise<FromWorker>;
  close(): Promise<void>;
}

/**
 * Hands out ranges in order, accepts each once the one before it in its file is accepted (reading
 * it again from where that one ended when it started elsewhere), and passes the join's state from
 * each range to the next.
 *
 * Kept whole (~120 lines): one state machine whose steps (dispatch, accept, join) share the queue,
 * the accepted and joined counters and the join's states; apart, each would take all of them.
 */
async function coordinate(
  tasks: ChunkTask[],
  runner: Runner,
  progress: (index: number, bytes: number) => void,
  events: Events,
): Promise<void> {
  const queue: ChunkTask[] = [...tasks];
  const reads = new Map<number, ChunkRead>();
  /** Per file: where its next range must start (the end of its last accepted range). */
  const expected = new Map<string, number>();
  /** Ranges accepted; those that turned out empty are joined as they are (nothing to join). */
  let accepted = 0;
  const empty = new Set<number>();
  let joined = 0;
  let joining = false;
  const states = new Map<LogFormat, JoinState>();

  /**
   * Where range `index` must start when every range before it is accepted and joined (the join's
   * state at its start is known); undefined otherwise, or when nothing of it is left to read.
   */
  const knownStart = (index: number): number | undefined => {
    if (joining || joined !== index || accepted !== index) return undefined;
    const task = tasks[index]!;
    const must = task.start === 0 ? 0 : expected.get(task.file)!;
    return must < task.end ? must : undefined;
  };
  /** Where accepted ranges started. */
  const starts = new Map<number, number>();
  /** A range whose merge was refused, to read again joined from the state, and those being read so. */
  let rejoin: ChunkTask | undefined;
  const again = new Set<number>();
  const dispatch = (): void => {
    if (rejoin !== undefined && runner.canRead(true, 0)) {
      runner.read(rejoin, { state: states.get(rejoin.format), start: rejoin.start, again: true });
      rejoin = undefined;
    }
    while (queue.length > 0 && runner.canRead(queue[0]!.index === joined, queue[0]!.end - queue[0]!.start)) {
      const next = queue.shift()!;
      // The MISC pairs known so far: they only grow, so the range's start knows them too.
      const task = { ...next, miscPairs: states.get(next.format)?.miscPairs };
      const start = knownStart(task.index);
      if (start === undefined) runner.read(task);
      else if (runner.read(task, { state: states.get(task.format), start })) {
        joining = true;
        events.joinWhileRead(task);
      }
    }
  };
  const accept = (): void => {
    while (accepted < tasks.length && reads.has(accepted)) {
      const task = tasks[accepted]!;
      const read = reads.get(accepted)!;
      const must = task.start === 0 ? 0 : expected.get(task.file)!;
      if (read.start === must) {
        events.accepted(read, task);
        expected.set(task.file, read.end);
        starts.set(task.index, read.start);
      } else if (must >= task.end) {
        // The range before ran over all of this one: nothing of it is left to read.
        runner.drop(task.index);
        empty.add(task.index);
      } else {
        runner.drop(task.index);
        reads.delete(task.index);
        const again = { ...task, start: must, exactStart: true };
        events.reread(again);
        tasks[task.index] = again;
        queue.unshift(again);
        return;
      }
      reads.delete(accepted);
      accepted++;
    }
  };
  const join = (): void => {
    while (!joining && joined < accepted) {
      if (empty.has(joined)) {
        joined++;
        continue;
      }
      const task = tasks[joined]!;
      runner.join(joined, states.get(task.format));
      joining = true;
    }
  };

  dispatch();
  while (joined < tasks.length) {
    const message = await runner.next();
    switch (message.type) {
      case "error":
        throw new Error(message.message);
      case "progress":
        if (!again.has(message.index)) progress(message.index, message.bytes);
        break;
      case "read":
        if (again.has(message.read.index)) break; // read and counted the first time
        reads.set(message.read.index, message.read);
        accept();
        break;
      case "refused": {
        const task = tasks[message.index]!;
        rejoin = { ...task, start: starts.get(task.index)!, exactStart: true };
        again.add(task.index);
        events.rejoin(task);
        break;
      }
      case "joined": {
        again.delete(message.joined.index);
        const task = tasks[message.joined.index]!;
        states.set(task.format, message.joined.state);
        events.joined(message.joined);
        joining = false;
        joined++;
        break;
      }
    }
    join();
    dispatch();
  }
  events.ended([...states.values()]);
}

/** Ranges read and joined in this thread, one message at a time. */
class InlineRunner implements Runner {
  private readonly held = new Map<number, HeldChunk>();
  private readonly out: (() => Promise<FromWorker[]>)[] = [];
  private readonly miscLogged: boolean | undefined;
  private buffered: FromWorker[] = [];

  constructor(miscLogged: boolean | undefined) {
    this.miscLogged = miscLogged;
  }

  /** One range at a time: read, then joined before the next is read (as one worker with nothing held). */
  canRead(urgent: boolean): boolean {
    return urgent || (this.out.length === 0 && this.held.size === 0 && this.buffered.length === 0);
  }

  /** A range's known state is taken on every other range (tests: both ways of joining, and ranges read again). */
  read(task: ChunkTask, join?: JoinFrom): boolean {
    const live = join !== undefined && (join.again === true || task.index % 2 === 0);
    this.out.push(async () => {
      const messages: FromWorker[] = [];
      const records = new RangeRecords(
        task.index,
        task.format,
        this.miscLogged,
        live ? join : undefined,
        task.miscPairs,
      );
      const read = await readChunk(
        live ? { ...task, start: join.start, exactStart: true } : task,
        (bytes) => messages.push({ type: "progress", index: task.index, bytes }),
        undefined,
        records,
      );
      messages.push({ type: "read", read });
      const joined = records.joined();
      if (joined) messages.push({ type: "joined", joined });
      else this.held.set(task.index, records.heldRecords()!);
      return messages;
    });
    return live;
  }

  join(index: number, state: JoinState | undefined): void {
    this.out.push(async () => {
      const held = this.held.get(index)!;
      this.held.delete(index);
      const joined = joinChunk(held, state, this.miscLogged);
      return [joined ? { type: "joined", joined } : { type: "refused", index }];
    });
  }

  drop(index: number): void {
    this.held.delete(index);
  }

  async next(): Promise<FromWorker> {
    while (this.buffered.length === 0) {
      // Joins first, as a worker's are (they are what the others wait for).
      const job = this.out.shift();
      if (!job) throw new Error("analyze: nothing left to run (a range was lost)");
      this.buffered = await job();
    }
    return this.buffered.shift()!;
  }

  async close(): Promise<void> {}
}

/** The worker entry: the source next to this file, or the bundle's `analyze-worker.js` next to main.js. */

/**
 * Ranges read and joined by `jobs` threads: this one and jobs - 1 workers. This thread's own work
 * (handing out ranges, merging tallies, progress) is small and runs between its reads (a MiB at a
 * time), so it reads ranges too rather than start one more worker (a worker's start-up, loading
 * the bundle into a fresh isolate, costs ~0.07 s of CPU).
 */
class ThreadRunner implements Runner {
  /**
   * The readers (`held`: the ranges each holds, and their bytes); this thread's is the last, so
   * ranges go to the workers first.
   */
  private readonly slots: {
    send: (message: ToWorker) => void;
    reading: boolean;
    held: Map<number, number>;
  }[] = [];
  private readonly workers: Worker[] = [];
  /** Which reader holds a range read and not joined. */
  private readonly holder = new Map<number, number>();
  private readonly inbox: FromWorker[] = [];
  private wake: (() => void) | undefined;
  private closing = false;

  constructor(jobs: number, setup: WorkerSetup) {
    // Those started as the command was dispatched (prestart.ts), then any more.
    const started = takeWorkers(jobs - 1);
    for (let i = 0; i < jobs - 1; i++) {
      const worker = started[i] ?? startWorker();
      worker.postMessage({ type: "setup", setup } satisfies ToWorker);
      const receive = this.receiver(i);
      worker.on("message", receive);
      worker.on("error", (error) => this.push({ type: "error", message: error.message }));
      worker.on("exit", (code) => {
        if (code !== 0 && !this.closing)
          this.push({ type: "error", message: `an analyze worker exited with ${code}` });
      });
      this.workers.push(worker);
      this.slots.push({ send: (message) => worker.postMessage(message), reading: false, held: new Map() });
    }
    const handle = rangeReader(setup.miscLogged, this.receiver(jobs - 1));
    // Later, as a worker would: the coordinator is not re-entered while it hands out ranges.
    this.slots.push({
      send: (message) => setImmediate(() => handle(message)),
      reading: false,
      held: new Map(),
    });
  }

  /** Keeps track of what reader `i` reads and holds, and passes its messages on. */
  private receiver(i: number): (message: FromWorker) => void {
    return (message) => {
      const slot = this.slots[i]!;
      if (message.type === "read") {
        slot.reading = false;
        slot.held.set(message.read.index, message.read.end - message.read.start);
        this.holder.set(message.read.index, i);
      } else if (message.type === "joined" || message.type === "refused") {
        const index = message.type === "joined" ? message.joined.index : message.index;
        slot.held.delete(index);
        this.holder.delete(index);
      }
      this.push(message);
    };
  }

  private push(message: FromWorker): void {
    this.inbox.push(message);
    this.wake?.();
  }

  private free(urgent: boolean, bytes: number): number {
    return this.slots.findIndex((w) => {
      if (w.reading) return false;
      if (urgent || w.held.size === 0) return true;
      let held = bytes;
      for (const b of w.held.values()) held += b;
      return w.held.size < MAX_HELD && held <= MAX_HELD_BYTES;
    });
  }

  canRead(urgent: boolean, bytes: number): boolean {
    return this.free(urgent, bytes) >= 0;
  }

  read(task: ChunkTask, join?: JoinFrom): boolean {
    const i = this.free(true, 0);
    this.slots[i]!.reading = true;
    this.post(i, join === undefined ? { type: "read", task } : { type: "read", task, join });
    return join !== undefined;
  }

  /** To the worker that holds the range. */
  join(index: number, state: JoinState | undefined): void {
    this.post(this.holder.get(index)!, { type: "join", index, state });
  }

  drop(index: number): void {
    const i = this.holder.get(index);
    if (i === undefined) return;
    this.holder.delete(index);
    this.slots[i]!.held.delete(index);
    this.post(i, { type: "drop", index });
  }

  private post(i: number, message: ToWorker): void {
    this.slots[i]!.send(message);
  }

  async next(): Promise<FromWorker> {
    while (this.inbox.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = undefined;
    return this.inbox.shift()!;
  }

  /** Lets every worker end (closing its port ends it); stops those that do not within a second. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.workers.map(async (worker) => {
        const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
        worker.postMessage({ type: "end" } satisfies ToWorker);
        const timer = setTimeout(() => void worker.terminate(), 1000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
