import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * zstd on a worker thread. @bokuweb/zstd-wasm runs synchronously on the calling thread: ~50 ms per
 * 8 MiB batch during which the sidecar's main thread neither read, parsed nor answered the API.
 * gzip already runs on libuv's pool. The worker is CommonJS evaluated from this string (the
 * library is CommonJS too), so it loads the same way from the TypeScript sources and the build.
 * Bodies go through one SharedArrayBuffer: posted as messages, each was a new 8 MiB buffer in a
 * worker whose small heap was rarely collected, and those piled up (~80 MB more peak RSS).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const zstd = require(workerData.library);
const ready = zstd.init();
let input;
parentPort.on("message", ({ id, shared, length, level }) => {
  if (shared) input = shared;
  ready
    .then(() => {
      const out = zstd.compress(Buffer.from(input, 0, length), level);
      parentPort.postMessage({ id, out }, [out.buffer]); // a copy the library made: moved, not copied again
    })
    .catch((error) => parentPort.postMessage({ id, error: String((error && error.message) || error) }));
});
`;

type Reply = { id: number; out: Uint8Array } | { id: number; error: string };

interface Pending {
  resolve(body: Buffer): void;
  reject(error: Error): void;
}

export class ZstdThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /**
   * One body on the worker at a time: each posted body is a copy (the caller keeps its own, to
   * retry with), and three 8 MiB batches queued there at once put the peak RSS over 200 MB.
   */
  private queue: Promise<unknown> = Promise.resolve();
  /** Where the body being compressed is put for the worker (one at a time: see `queue`). */
  private input: SharedArrayBuffer | undefined;

  /** Compresses on the worker, one body at a time; the same bytes as the library gives on this thread. */
  compress(body: Uint8Array, level: number): Promise<Buffer> {
    const run = this.queue.then(
      () => this.post(body, level),
      () => this.post(body, level),
    );
    this.queue = run.catch(() => {});
    return run;
  }

  private post(body: Uint8Array, level: number): Promise<Buffer> {
    const worker = this.start();
    const id = this.nextId++;
    let shared: SharedArrayBuffer | undefined;
    if (!this.input || this.input.byteLength < body.byteLength) {
      // Grown in 1 MiB steps; sent to the worker once, when it changes.
      this.input = new SharedArrayBuffer(Math.ceil(Math.max(1, body.byteLength) / (1 << 20)) << 20);
      shared = this.input;
    }
    new Uint8Array(this.input).set(body);
    return new Promise<Buffer>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref(); // keeps the process up only while work is out
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, shared, length: body.byteLength, level });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const library = createRequire(import.meta.url).resolve("@bokuweb/zstd-wasm");
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { library },
      // Its JavaScript holds one message at a time; the wasm memory is outside these limits.
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    worker.unref();
    worker.on("message", (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      if ("error" in reply) p.reject(new Error(`zstd compression failed: ${reply.error}`));
      else p.resolve(Buffer.from(reply.out.buffer, reply.out.byteOffset, reply.out.byteLength));
    });
    const down = (error: Error): void => {
      if (this.worker === worker) {
        this.worker = undefined; // the next call starts another, and sends it the input buffer
        this.input = undefined;
      }
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    };
    worker.on("error", (error) => down(new Error(`zstd worker failed: ${error.message}`)));
    worker.on("exit", (code) => down(new Error(`zstd worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }
}
