/**
 * What reads and joins ranges for parallel `analyze` (parallel.ts), wherever it runs: a worker
 * thread (_worker.ts) or the coordinating thread itself. It reads the ranges it is given
 * (chunk.ts), keeps each one's edge until told the join's state at its start, and merges it with
 * that state. Merges are what the other threads wait for: a range is read a MiB at a time, so a
 * merge (or, in the coordinating thread, a worker's message) asked for meanwhile runs between two
 * reads.
 */
import { type HeldChunk, joinChunk, RangeRecords, readChunk } from "./chunk.ts";
import type { FromWorker, ToWorker } from "./parallel.ts";

/** Progress is told every few MiB: a message costs a worker more than a read's parsing would suggest. */
const PROGRESS_BYTES = 4 << 20;

/** Lets what came in meanwhile (messages, I/O) run. */
const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A reader's handler of the coordinator's messages; what it reports goes to `post`. "end" is the
 * caller's (a worker closes its port).
 */
export function rangeReader(
  miscLogged: boolean | undefined,
  post: (message: FromWorker) => void,
): (message: ToWorker) => void {
  const held = new Map<number, HeldChunk>();
  return (message) => {
    try {
      switch (message.type) {
        case "read": {
          const { task, join } = message;
          let unposted = 0;
          const records = new RangeRecords(task.index, task.format, miscLogged, join, task.miscPairs);
          readChunk(
            join ? { ...task, start: join.start, exactStart: true } : task,
            (bytes) => {
              unposted += bytes;
              if (unposted < PROGRESS_BYTES) return;
              post({ type: "progress", index: task.index, bytes: unposted });
              unposted = 0;
            },
            pause,
            records,
          ).then(
            (read) => {
              if (unposted > 0) post({ type: "progress", index: task.index, bytes: unposted });
              post({ type: "read", read });
              const joined = records.joined();
              if (joined) post({ type: "joined", joined });
              else held.set(read.index, records.heldRecords()!);
            },
            (error: unknown) => post({ type: "error", message: describe(error) }),
          );
          return;
        }
        case "join": {
          const records = held.get(message.index);
          if (records === undefined) throw new Error(`range ${message.index} is not held here`);
          held.delete(message.index);
          const joined = joinChunk(records, message.state, miscLogged);
          post(joined ? { type: "joined", joined } : { type: "refused", index: message.index });
          return;
        }
        case "drop":
          held.delete(message.index);
          return;
        case "end":
        case "setup": // a worker's, handled by _worker.ts
          return;
      }
    } catch (error) {
      post({ type: "error", message: describe(error) });
    }
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
