/**
 * The deliver stage: hands sources' batches to the sink, at most `maxInFlight` at once over all
 * sources, retries each failed write with the one backoff (backoff.ts) until the sink
 * acknowledges it, and tells each source what was acknowledged in the source's own order: a
 * source hears "everything before `end` is stored" only once every earlier batch of it is too,
 * whatever order the writes finish in. The source checkpoints on that and on nothing else
 * (Vector's OrderedFinalizer); Delivery keeps no state on disk.
 */
import { backoffDelay } from "./backoff.ts";
import type { Batch, Sink } from "./types.ts";

/**
 * Batches handed to the sink and not yet acknowledged, over all sources, unless told otherwise.
 * Sources read and parse on while fewer are out, so the next batch is parsed while the previous
 * ones are gzipped and written; memory stays bounded (this many batches, each compressed once
 * its sink released the NDJSON, plus each source's open one and one read's worth).
 */
export const DEFAULT_MAX_IN_FLIGHT = 3;
/** The first retry of a failed write waits about this long; each next one twice as long. */
const FIRST_RETRY_DELAY_MS = 200;
/** Retries back off up to this, with jitter. */
const MAX_RETRY_DELAY_MS = 30_000;
/** A retry waiting out its backoff sees stop() within this long. */
const STOP_CHECK_MS = 500;

/** What Delivery reports as it goes; every method optional. The sidecar wires these to its meter. */
export interface DeliveryObserver {
  sinkAck?(sink: string, entries: number, bytes: number, latencyMs: number): void;
  sinkError?(sink: string, error: unknown): void;
}

/** Logs a failed write with the source and range (never the batch's contents). */
export interface DeliveryLogger {
  error(obj: object, msg: string): void;
}

export interface DeliveryOptions {
  /** Where batches go; write() resolving is the acknowledgement. */
  sink: Sink;
  /** Batches handed to the sink and not yet acknowledged, over all sources; default DEFAULT_MAX_IN_FLIGHT. */
  maxInFlight?: number;
  observer?: DeliveryObserver;
  logger?: DeliveryLogger;
  /** Called whenever a write settles, so a source waiting for room (or idle) looks again. */
  onSettled?: () => void;
}

/** One source as Delivery sees it: the batches it has ready, and what it must hear back. */
export interface DeliverySource {
  /** For logs: where the batches come from (a file path). */
  readonly name: string;
  /** Closed batches in source order; Delivery takes them from the front. */
  readonly ready: Batch[];
  /**
   * Batches are about to be handed to the sink (they are in the queue's `inflight` already):
   * record their ends durably first, so a replay after a crash cuts the same ranges (write-ahead).
   */
  handingOver(): Promise<void>;
  /** The sink acknowledged everything before `end`, in order: the source may checkpoint it. */
  acknowledged(end: number): void;
  /**
   * The sink is done with a batch's memory: it may hold a later batch. Called once a batch: when
   * the sink released its NDJSON (compressed it), or at its acknowledgement; a batch that covers no
   * bytes always at its acknowledgement (a lane counts it shipped there).
   */
  recycle(batch: Batch): void;
}

/** A batch handed to the sink: written (and retried) while the source reads on. */
export interface InFlightBatch {
  batch: Batch;
  /** `writing` until the sink acknowledged it, or Delivery gave up on it while stopping. */
  state: "writing" | "acked" | "abandoned";
  /** The source was given the batch's memory back (recycle) before the acknowledgement. */
  recycled?: boolean;
  /** Settles (never rejects) when the state leaves `writing`. */
  written: Promise<void>;
}

/** One source's batches in the sink's hands, in order: acknowledgements are taken from the front. */
export class DeliveryQueue {
  readonly inflight: InFlightBatch[] = [];
  readonly source: DeliverySource;
  private readonly delivery: Delivery;

  constructor(delivery: Delivery, source: DeliverySource) {
    this.delivery = delivery;
    this.source = source;
  }

  /**
   * Hands the source's ready batches to the sink while there is room, and takes acknowledgements
   * from the front. Returns when the source may read on (nothing ready is left waiting), or with
   * `drain`, when nothing of it is in flight; stopping, never past the deadline.
   */
  deliver(drain = false): Promise<void> {
    return this.delivery.deliver(this, drain);
  }

  /** Batches handed to the sink that have not settled yet. */
  get writing(): InFlightBatch[] {
    return this.inflight.filter((f) => f.state === "writing");
  }
}

export class Delivery {
  private readonly sink: Sink;
  private readonly maxInFlight: number;
  private readonly observer: DeliveryObserver;
  /** Sink writes under way, over all sources. */
  private readonly writes = new Set<Promise<void>>();
  private stopping = false;
  private stopDeadline = Number.POSITIVE_INFINITY;
  private readonly options: DeliveryOptions;

  constructor(options: DeliveryOptions) {
    this.options = options;
    this.sink = options.sink;
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.observer = options.observer ?? {};
  }

  /** A queue for one source: its batches are acknowledged to it in its order. */
  queue(source: DeliverySource): DeliveryQueue {
    return new DeliveryQueue(this, source);
  }

  /**
   * Stopping: retries give up and nothing more is handed over after `deadline` (epoch ms); what
   * is not acknowledged by then stays unacknowledged (the source re-reads it next start). The
   * first call sets the deadline.
   */
  stopBy(deadline: number): void {
    if (this.stopping) return;
    this.stopping = true;
    this.stopDeadline = deadline;
  }

  /** See DeliveryQueue.deliver. */
  async deliver(queue: DeliveryQueue, drain: boolean): Promise<void> {
    for (;;) {
      this.collectAcks(queue);
      const ready = queue.source.ready;
      const pastDeadline = this.stopping && Date.now() > this.stopDeadline;
      if (ready.length > 0 && this.writes.size < this.maxInFlight && !pastDeadline) {
        await this.dispatch(queue);
        continue;
      }
      const mine = queue.writing;
      if (!drain && (ready.length === 0 || pastDeadline)) return;
      if (drain && mine.length === 0 && (ready.length === 0 || pastDeadline)) return;
      // Backpressure (a batch is ready and the sink has enough) or draining: wait for a write.
      const waitFor = drain && mine.length > 0 ? mine.map((f) => f.written) : [...this.writes];
      if (waitFor.length === 0) return;
      if (!this.stopping) {
        await Promise.race(waitFor);
        continue;
      }
      // Stopping: never past the deadline. A sink that retries inside write() (S3 with its spool,
      // an endpoint down) does not return at it, and waiting on made SIGTERM overrun its 10 s;
      // what is still being written is re-read from the checkpoint on the next start.
      const left = this.stopDeadline - Date.now();
      if (left <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ...waitFor,
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }

  /** Acknowledged batches at the front of the queue: the source hears how far it is acknowledged. */
  private collectAcks(queue: DeliveryQueue): void {
    let end: number | undefined;
    while (queue.inflight[0]?.state === "acked") end = queue.inflight.shift()!.batch.range.end;
    if (end !== undefined) queue.source.acknowledged(end);
  }

  /** Hands ready batches to the sink after the source recorded every in-flight end (write-ahead). */
  private async dispatch(queue: DeliveryQueue): Promise<void> {
    const batches = queue.source.ready.splice(0, this.maxInFlight - this.writes.size);
    const started = batches.map(
      (batch): InFlightBatch => ({ batch, state: "writing", written: Promise.resolve() }),
    );
    queue.inflight.push(...started);
    try {
      await queue.source.handingOver();
    } catch (error) {
      // Their ends could not be recorded (a replay must cut the same ranges): not handed over;
      // they wait, first in line, for the next try.
      queue.inflight.splice(queue.inflight.length - started.length, started.length);
      queue.source.ready.unshift(...batches);
      throw error;
    }
    for (const f of started) {
      const written = this.write(queue.source, f);
      f.written = written;
      this.writes.add(written);
      void written.finally(() => {
        this.writes.delete(written);
        this.options.onSettled?.();
      });
    }
  }

  /** Writes one batch, retrying with backoff until acknowledged (or, stopping, past the deadline). */
  private async write(source: DeliverySource, f: InFlightBatch): Promise<void> {
    const sink = this.sink;
    const batch = f.batch;
    // The sink needs the NDJSON no longer (it holds the compressed object): its memory goes back to
    // the source now, not at the acknowledgement, so batches waiting on the store hold their
    // compressed bytes only.
    const release = (): void => {
      if (f.recycled || batch.range.end === batch.range.start) return;
      f.recycled = true;
      source.recycle(batch);
    };
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      try {
        await sink.write(batch, release);
        f.state = "acked";
        if (!f.recycled) source.recycle(batch);
        this.observer.sinkAck?.(sink.name, batch.entries, batch.bytes, Date.now() - started);
        return;
      } catch (error) {
        this.observer.sinkError?.(sink.name, error);
        this.options.logger?.error(
          {
            sink: sink.name,
            file: source.name,
            range: [batch.range.start, batch.range.end],
            attempt,
            err: describe(error),
          },
          "sink write failed; retrying",
        );
        const delay = backoffDelay(attempt, FIRST_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS);
        const until = Date.now() + delay;
        // Sleep in short steps, so a stop() during a long backoff is seen within STOP_CHECK_MS.
        while (Date.now() < until && !(this.stopping && Date.now() >= until - delay + STOP_CHECK_MS))
          await new Promise((resolve) => setTimeout(resolve, Math.min(100, until - Date.now())));
        if (this.stopping && Date.now() > this.stopDeadline) {
          f.state = "abandoned"; // not acknowledged: re-read from the checkpoint next start
          return;
        }
      }
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
