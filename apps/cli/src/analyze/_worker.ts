/**
 * A worker thread of parallel `analyze` (parallel.ts): reads the ranges it is given (chunk.ts),
 * keeps each one's records until told to join them, and joins them with the state it is sent.
 * Joins are what the other threads wait for: a range is read a few MiB at a time, so a join that
 * comes in meanwhile runs between two of them.
 */
import { parentPort, workerData } from "node:worker_threads";
import { type HeldChunk, joinChunk, RangeRecords, readChunk } from "./chunk.ts";
import type { FromWorker, ToWorker, WorkerSetup } from "./parallel.ts";

const setup = workerData as WorkerSetup;
const port = parentPort!;
const held = new Map<number, HeldChunk>();
/** The range being read: a join for it starts joining it as it is read. */
let reading: RangeRecords | undefined;
const post = (message: FromWorker): void => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  try {
    switch (message.type) {
      case "read": {
        const { task, join } = message;
        const records = new RangeRecords(task.index, task.format, setup.miscLogged);
        if (join) records.joinFrom(join.state);
        reading = records;
        readChunk(
          join ? { ...task, start: join.start, exactStart: true } : task,
          (bytes) => post({ type: "progress", index: task.index, bytes }),
          () => new Promise((resolve) => setImmediate(resolve)),
          records,
          (start) => post({ type: "started", index: task.index, start }),
        ).then(
          (read) => {
            reading = undefined;
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
        if (reading?.index === message.index) {
          reading.joinFrom(message.state);
          return;
        }
        const records = held.get(message.index);
        if (records === undefined) throw new Error(`range ${message.index} is not held here`);
        held.delete(message.index);
        post({ type: "joined", joined: joinChunk(records, message.state, setup.miscLogged) });
        return;
      }
      case "drop":
        held.delete(message.index);
        return;
      case "end":
        port.close();
        return;
    }
  } catch (error) {
    post({ type: "error", message: describe(error) });
  }
});

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
