/** A worker thread of parallel `analyze` (parallel.ts): a range reader (range-reader.ts) on its port. */
import { parentPort, workerData } from "node:worker_threads";
import type { ToWorker, WorkerSetup } from "./parallel.ts";
import { rangeReader } from "./range-reader.ts";

const setup = workerData as WorkerSetup;
const port = parentPort!;
const handle = rangeReader(setup.miscLogged, (message) => port.postMessage(message));

port.on("message", (message: ToWorker) => {
  if (message.type === "end") port.close();
  else handle(message);
});
