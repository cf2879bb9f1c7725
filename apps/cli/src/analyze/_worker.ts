/**
 * A worker thread of parallel `analyze` (parallel.ts): reads the ranges it is given (chunk.ts),
 * keeps each one's records until told to join them, and joins them with the state it is sent.
 * Joins are what the other threads wait for: a range is read a few MiB at a time, so a join that
 * comes in meanwhile runs between two of them.
 */
import { parentPort, workerData } from "node:worker_threads";
import { type HeldChunk, joinChunk, readChunk } from "./chunk.ts";
import type { FromWorker, ToWorker, WorkerSetup } from "./parallel.ts";

const setup = workerData as WorkerSetup;
const port = parentPort!;
const held = new Map<number, HeldChunk>();
const post = (message: FromWorker): void => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  try {
    switch (message.type) {
      case "read":
        readChunk(
          message.task,
          (bytes) => post({ type: "progress", index: message.task.index, bytes }),
          () => new Promise((resolve) => setImmediate(resolve)),
        ).then(
          ({ read, held: records }) => {
            held.set(read.index, records);
            post({ type: "read", read });
          },
          (error: unknown) => post({ type: "error", message: describe(error) }),
        );
        return;
      case "join": {
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
