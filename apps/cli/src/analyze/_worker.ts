/**
 * A worker thread of parallel `analyze` (parallel.ts): a range reader (range-reader.ts) on its
 * port, set up by the first message (it may be started before its setup is known: prestart.ts).
 */
import { parentPort } from "node:worker_threads";
import type { FromWorker, ToWorker } from "./parallel.ts";
import { rangeReader } from "./range-reader.ts";

const port = parentPort!;
let handle: ((message: ToWorker) => void) | undefined;

port.on("message", (message: ToWorker) => {
  if (message.type === "end") port.close();
  else if (message.type === "setup")
    handle = rangeReader(message.setup.miscLogged, (out: FromWorker) => port.postMessage(out));
  else handle!(message);
});
