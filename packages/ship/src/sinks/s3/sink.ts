import { createHash } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import { Spool, type SpoolEntry, type SpoolEntryMeta } from "../../_spool.ts";
import { backoffDelay } from "../../backoff.ts";
import { compress, ndjsonExtension } from "../../compression.ts";
import { SinkError, SinkErrorCode } from "../../errors.ts";
import { objectKey } from "../../partitioner.ts";
import type { Batch, Sink } from "../../types.ts";
import { classifyS3Error, type Target } from "./_errors.ts";
import { attemptDeadlineMs, KEY_EXISTS, putObject, storedObject } from "./_upload.ts";
import { createS3Client } from "./client.ts";
import {
  type ResolvedS3SinkOptions,
  resolveS3SinkOptions,
  S3_SINK_NAME,
  type S3SinkOptions,
  type SinkLogger,
  type UploadedObject,
} from "./config.ts";

/** For /readyz and metrics. */
export interface S3SinkHealth {
  /** ok: the last upload worked; retrying: failing for less than the write budget; failing: longer, or an error retrying cannot fix. */
  state: "ok" | "retrying" | "failing";
  /** The last error's stable code (AUDITPIPE_ERR_SINK_...), while not ok. */
  code?: string;
  message?: string;
  spoolBytes: number;
  spoolFiles: number;
}

/**
 * What the sink holds of a batch whose NDJSON it released: the compressed body until it is
 * spooled, then nothing (the spool has it), then `stored` once uploaded and `onUploaded` returned.
 */
type Released =
  | { state: "compressed"; meta: SpoolEntryMeta; body: Buffer }
  | { state: "spooled" }
  | { state: "stored" };

const silentLogger: SinkLogger = { info() {}, warn() {}, error() {} };

/**
 * Ships batches to S3 (or any S3-compatible store) through a durable spool. write(batch):
 * encode + compress (deterministic bytes), spool (temp, fsync, rename; waits while the spool is
 * full), upload (retrying retryable failures with backoff and jitter for up to `writeBudgetMs`),
 * call onUploaded, delete the spool file, resolve. When write() rejects the batch stays spooled and
 * a background drain keeps uploading it; the source's own retry of the same range then finds it.
 * Once compressed, the batch's NDJSON is released (write()'s `release`): a retry goes by the body
 * kept until spooled, the spool, or what this process stored, never by the NDJSON.
 *
 * start() opens the spool and starts uploading what an earlier process left in it, oldest first;
 * the first write() calls it when the caller did not.
 */
export class S3Sink implements Sink {
  readonly name: string = S3_SINK_NAME;
  readonly options: Readonly<ResolvedS3SinkOptions>;
  private readonly onUploaded: S3SinkOptions["onUploaded"];
  private readonly hooks: Pick<S3SinkOptions, "onRewrite" | "onAttemptFailed" | "ready">;
  private readonly logger: SinkLogger;
  private readonly target: Target;
  private s3: Promise<S3Client> | undefined;
  private opening: Promise<Spool> | undefined;
  private spool: Spool | undefined;
  /** One upload attempt per key at a time; a second caller joins it. */
  private readonly attempts = new Map<string, Promise<UploadedObject>>();
  /** Keys a write() is uploading (with its own retries): the drain leaves them alone. */
  private readonly writers = new Map<string, number>();
  /**
   * Keys whose batch's NDJSON a write() released, until a write() of the key resolves: a retry
   * cannot compress the batch again (its memory holds a later one), so it goes by this only.
   */
  private readonly released = new Map<string, Released>();
  private draining: Promise<void> | undefined;
  private readonly closing = new AbortController();
  private failure: SinkError | undefined;
  private failingSince = 0;

  constructor(options: S3SinkOptions) {
    this.options = resolveS3SinkOptions(options);
    this.onUploaded = options.onUploaded;
    this.hooks = {
      onRewrite: options.onRewrite,
      onAttemptFailed: options.onAttemptFailed,
      ready: options.ready,
    };
    this.logger = options.logger ?? silentLogger;
    this.target = {
      bucket: this.options.bucket,
      endpoint: this.options.endpoint,
      region: this.options.region,
      spoolDir: this.options.spoolDir,
    };
  }

  /** Created on first use, so constructing a sink does no I/O, reads no credentials and loads no SDK. */
  private client(): Promise<S3Client> {
    const o = this.options;
    this.s3 ??= createS3Client({
      region: o.region,
      endpoint: o.endpoint,
      forcePathStyle: o.forcePathStyle,
      connectTimeoutMs: o.timeouts.connectMs,
      requestTimeoutMs: o.timeouts.requestMs,
      maxAttempts: 1, // write() retries with the one backoff; health() sees every failure
    });
    return this.s3;
  }

  /**
   * Opens the spool and starts uploading what it holds (left by an earlier process), oldest first,
   * in the background. Resolves once the spool is open; flush() waits for the upload. Idempotent.
   */
  async start(): Promise<void> {
    await this.open();
  }

  /** Resolves when everything spooled now has been uploaded (retrying as long as it takes, until close()). */
  async flush(): Promise<void> {
    const spool = await this.open();
    const keys = spool.list().map((e) => e.key);
    while (keys.some((k) => spool.get(k))) {
      this.closedCheck();
      this.kick();
      await this.sleep(50);
    }
    // An entry leaves the spool's index before its upload attempt has returned (and cleared the
    // failure health() reports), and may have left it before this flush listed the spool: wait
    // for every attempt still running.
    await Promise.allSettled([...this.attempts.values()]);
  }

  /** Keys being uploaded now: perhaps stored, and `onUploaded` not called or not returned yet. */
  uploading(): ReadonlySet<string> {
    return new Set(this.attempts.keys());
  }

  /** Bytes waiting in the spool (a gauge: it grows while the store is down). */
  spoolBytes(): number {
    return this.spool?.bytes() ?? 0;
  }

  /** Objects waiting in the spool. */
  spoolFiles(): number {
    return this.spool?.files() ?? 0;
  }

  health(): S3SinkHealth {
    const spool = { spoolBytes: this.spoolBytes(), spoolFiles: this.spoolFiles() };
    const f = this.failure;
    if (!f) return { state: "ok", ...spool };
    const long = Date.now() - this.failingSince >= this.options.retry.writeBudgetMs;
    return {
      state: f.retryable && !long ? "retrying" : "failing",
      code: f.code,
      message: f.message,
      ...spool,
    };
  }

  async write(batch: Batch, release?: () => void): Promise<void> {
    this.closedCheck();
    const key = this.keyOf(batch);
    const held = this.released.get(key);
    if (held) {
      await this.writeReleased(key, held);
      return;
    }
    // Nothing to store (no entry, outcome line or attempt); the range is still acknowledged.
    if (batch.ndjson.length === 0) return;
    const spool = await this.open();
    const o = this.options;
    let body: Buffer | undefined;
    let entry = spool.get(key);
    if (!entry) {
      body = await compress(batch.ndjson, o.compression);
      const meta = {
        key,
        sha256: createHash("sha256").update(body).digest("hex"),
        size: body.length,
        entries: batch.entries,
        range: batch.range,
        contentEncoding: o.compression,
      };
      // The compressed body is all the write needs from here on (kept for a retry until spooled).
      if (release) {
        this.released.set(key, { state: "compressed", meta, body });
        release();
      }
      entry = await spool.put(meta, body); // waits while the spool is full: backpressure
      this.closedCheck();
    }
    if (release) {
      this.released.set(key, { state: "spooled" });
      release();
    }
    await this.upload(entry, body);
    this.released.delete(key);
  }

  /**
   * A write() of a batch whose NDJSON an earlier one released: spool the body it kept, upload
   * what is spooled, or acknowledge what this process stored; never read the NDJSON again.
   */
  private async writeReleased(key: string, held: Released): Promise<void> {
    const spool = await this.open();
    let entry = spool.get(key);
    let body: Buffer | undefined;
    if (held.state === "compressed") {
      body = held.body;
      entry ??= await spool.put(held.meta, body);
      this.closedCheck();
      this.released.set(key, { state: "spooled" });
    }
    if (entry) await this.upload(entry, body);
    else if (held.state !== "stored")
      // Spooled, then gone from the spool but not stored: set aside as damaged (Spool.read). The
      // batch's bytes are gone; the source re-reads the range from its checkpoint on the next start.
      throw new SinkError(
        SinkErrorCode.SPOOL,
        `the spooled object ${key} was set aside as damaged after the batch's memory was released: ` +
          "its range is re-read from the checkpoint when the sidecar restarts",
      );
    this.released.delete(key);
  }

  /** write()'s upload of a spooled object, the drain kept off it meanwhile. */
  private async upload(entry: SpoolEntry, body: Buffer | undefined): Promise<void> {
    const spool = this.spool!;
    const key = entry.key;
    this.writers.set(key, (this.writers.get(key) ?? 0) + 1);
    try {
      await this.uploadWithRetry(entry, body);
    } finally {
      const n = (this.writers.get(key) ?? 1) - 1;
      if (n > 0) this.writers.set(key, n);
      else this.writers.delete(key);
      if (spool.get(key)) this.kick(); // left spooled: the drain takes it over
    }
  }

  /** Stops retries and the drain; what is spooled stays on disk for the next start. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    this.spool?.close();
    await Promise.allSettled([this.draining, ...this.attempts.values()]);
    const s3 = this.s3;
    this.s3 = undefined;
    await s3?.then(
      (client) => client.destroy(),
      () => undefined,
    );
  }

  /** `<prefix>/dt=YYYY-MM-DD/hour=HH/<host>/<source>-<first>-<last>.ndjson.zst` (`.gz` with gzip). */
  keyOf(batch: Pick<Batch, "range" | "firstTs">): string {
    const o = this.options;
    const key = objectKey(batch, { host: o.host, extension: ndjsonExtension(o.compression) });
    return o.prefix ? `${o.prefix}/${key}` : key;
  }

  private open(): Promise<Spool> {
    this.opening ??= Spool.open(this.options.spoolDir, this.options.spoolMaxBytes, this.logger).then(
      (spool) => {
        this.spool = spool;
        if (spool.files() > 0) {
          this.logger.info(
            { spoolDir: spool.dir, files: spool.files(), bytes: spool.bytes() },
            "uploading objects left in the spool by an earlier run, oldest first",
          );
          this.kick();
        }
        return spool;
      },
      (error: unknown) => {
        this.opening = undefined; // try again on the next call
        throw error;
      },
    );
    return this.opening;
  }

  private closedCheck(): void {
    if (this.closing.signal.aborted)
      throw new SinkError(SinkErrorCode.CLOSED, "S3Sink: write() after close()");
  }

  /** write()'s own upload: retryable failures are retried with backoff until the write budget runs out. */
  private async uploadWithRetry(entry: SpoolEntry, body: Buffer | undefined): Promise<void> {
    const { retry } = this.options;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      if (!this.spool?.get(entry.key)) return; // the drain uploaded it meanwhile
      try {
        await this.attempt(entry, body);
        return;
      } catch (error) {
        this.closedCheck();
        const e = classifyS3Error(error, this.target);
        if (!e.retryable) throw e;
        const elapsed = Date.now() - started;
        if (elapsed >= retry.writeBudgetMs)
          throw new SinkError(
            e.code,
            `${e.message}; gave up on this write after ${Math.round(elapsed / 1000)} s (${attempt} attempts): ` +
              `the batch stays in the spool (${this.options.spoolDir}) and is uploaded in the background`,
            { retryable: true, storeCode: e.storeCode, httpStatus: e.httpStatus, requestId: e.requestId },
          );
        this.logger.warn(
          {
            sink: this.name,
            key: entry.key,
            attempt,
            code: e.code,
            storeCode: e.storeCode,
            httpStatus: e.httpStatus,
          },
          "upload failed; retrying",
        );
        await this.sleep(this.backoff(attempt));
      }
    }
  }

  /** One upload of a spooled object, shared by every caller that asks while it runs. */
  private attempt(entry: SpoolEntry, body?: Buffer): Promise<UploadedObject> {
    const running = this.attempts.get(entry.key);
    if (running) return running;
    const p = this.attemptOnce(entry, body).then(
      (uploaded) => {
        this.failure = undefined;
        return uploaded;
      },
      (error: unknown) => {
        const e = classifyS3Error(error, this.target);
        if (!this.failure) this.failingSince = Date.now();
        this.failure = e;
        if (!this.closing.signal.aborted) this.hooks.onAttemptFailed?.(e);
        throw e;
      },
    );
    this.attempts.set(entry.key, p);
    p.then(
      () => this.attempts.delete(entry.key),
      () => this.attempts.delete(entry.key),
    );
    return p;
  }

  private async attemptOnce(entry: SpoolEntry, given?: Buffer): Promise<UploadedObject> {
    const spool = this.spool!;
    const body = given ?? (await spool.read(entry));
    const o = this.options;
    await this.waitReady();
    const deadline = AbortSignal.timeout(attemptDeadlineMs(o, body.length));
    const signal = AbortSignal.any([deadline, this.closing.signal]);
    const { versionId } = await this.store(entry, body, signal);
    const uploaded: UploadedObject = {
      key: entry.key,
      sha256: entry.sha256,
      size: entry.size,
      entries: entry.entries,
      range: entry.range,
      contentEncoding: entry.contentEncoding,
      uploadedAt: new Date().toISOString(),
      // Recorded so verify can tell the version stored from a later overwrite (Object Lock).
      ...(versionId === undefined ? {} : { versionId }),
    };
    try {
      await this.onUploaded?.(uploaded);
    } catch (error) {
      throw new SinkError(
        SinkErrorCode.HOOK_FAILED,
        `onUploaded failed for ${entry.key} (${error instanceof Error ? error.message : String(error)}); ` +
          "the object is stored but the batch stays spooled and is offered again",
        { retryable: false },
      );
    }
    // Before the spool forgets the key: a retry of a released batch then knows it is stored.
    if (this.released.has(entry.key)) this.released.set(entry.key, { state: "stored" });
    await spool.remove(entry.key);
    return uploaded;
  }

  /**
   * Puts the body under its key, unless the key holds it already (a retry whose first try was
   * stored, a replay: same SHA-256), and never over other bytes this sink wrote before the
   * rewrite is announced (`onRewrite`). Small bodies go up with `If-None-Match: *` and are looked
   * at only when the key exists; with Object Lock (a versioned bucket, where writing again keeps a
   * second locked copy) and for multipart bodies the key is looked at first.
   */
  private async store(
    entry: SpoolEntry,
    body: Buffer,
    signal: AbortSignal,
  ): Promise<{ versionId: string | undefined }> {
    const o = this.options;
    const client = await this.client();
    const lookFirst = o.objectLock !== undefined || body.length > o.multipartThresholdBytes;
    if (!lookFirst) {
      const put = await putObject(client, o, entry, body, signal, true);
      if (put !== KEY_EXISTS) return put;
    }
    const existing = await storedObject(client, o, entry.key, signal);
    if (existing && existing.sha256 === entry.sha256) return { versionId: existing.versionId };
    if (existing?.sha256 !== undefined) await this.announceRewrite(entry, existing.sha256);
    const put = await putObject(client, o, entry, body, signal);
    return put === KEY_EXISTS ? { versionId: undefined } : put;
  }

  /** The key holds other bytes this sink wrote: tell the archive before they are replaced. */
  private async announceRewrite(entry: SpoolEntry, supersedes: string): Promise<void> {
    this.logger.warn(
      { sink: this.name, key: entry.key, sha256: entry.sha256, supersedes },
      "the key holds other bytes this sink wrote before (a replay whose bytes differ): rewriting it",
    );
    try {
      await this.hooks.onRewrite?.({
        key: entry.key,
        sha256: entry.sha256,
        size: entry.size,
        entries: entry.entries,
        range: entry.range,
        contentEncoding: entry.contentEncoding,
        uploadedAt: new Date().toISOString(),
        supersedes,
      });
    } catch (error) {
      throw new SinkError(
        SinkErrorCode.HOOK_FAILED,
        `onRewrite failed for ${entry.key} (${error instanceof Error ? error.message : String(error)}); ` +
          "the key is not overwritten before the rewrite is on record: retrying",
        { retryable: true },
      );
    }
  }

  /** Waits (at most the connect timeout) for `ready`: the archive's chain is open. */
  private async waitReady(): Promise<void> {
    const ready = this.hooks.ready;
    if (!ready) return;
    const signal = AbortSignal.any([
      AbortSignal.timeout(this.options.timeouts.connectMs),
      this.closing.signal,
    ]);
    await new Promise<void>((resolve, reject) => {
      const late = (): void =>
        reject(
          new SinkError(
            SinkErrorCode.NOT_OPEN,
            `the manifest chain of bucket "${this.options.bucket}" is not open yet (its journal cannot be opened; ` +
              "the log says why): uploads wait and are retried",
            { retryable: true },
          ),
        );
      signal.addEventListener("abort", late, { once: true });
      ready().then(resolve, reject);
    });
  }

  /** Wakes the background drain of spooled objects no write() is uploading. */
  private kick(): void {
    if (this.closing.signal.aborted || this.draining || !this.spool) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    const spool = this.spool!;
    let failures = 0;
    while (!this.closing.signal.aborted) {
      const next = spool.list().find((e) => !this.writers.has(e.key));
      if (!next) return;
      try {
        const uploaded = await this.attempt(next);
        failures = 0;
        this.logger.info(
          { sink: this.name, key: uploaded.key, entries: uploaded.entries },
          "spooled object uploaded",
        );
      } catch (error) {
        if (this.closing.signal.aborted) return;
        const e = classifyS3Error(error, this.target);
        failures++;
        this.logger.error(
          {
            sink: this.name,
            key: next.key,
            attempt: failures,
            code: e.code,
            storeCode: e.storeCode,
            httpStatus: e.httpStatus,
          },
          e.message,
        );
        // An error retrying cannot fix waits the longest: someone has to act first.
        await this.sleep(e.retryable ? this.backoff(failures) : this.options.retry.maxDelayMs);
      }
    }
  }

  private backoff(attempt: number): number {
    return backoffDelay(attempt, this.options.retry.baseDelayMs, this.options.retry.maxDelayMs);
  }

  /** A sleep that close() cuts short. */
  private sleep(ms: number): Promise<void> {
    const signal = this.closing.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
