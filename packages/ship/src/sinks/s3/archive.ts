/**
 * The S3 archive, composed: the sink with its durable spool, the manifest journal that records
 * every object the store acknowledged and signs the hourly manifests, and the client they share.
 * One factory, so the sidecar (and anything else that archives) only says where and how.
 */
import { randomUUID } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import { backoffDelay } from "../../backoff.ts";
import { SinkError, SinkErrorCode, sinkErrorReason } from "../../errors.ts";
import { CoverageBacklog } from "../../manifest/_coverage-backlog.ts";
import { ManifestError } from "../../manifest/errors.ts";
import { type ManifestHealth, ManifestJournal } from "../../manifest/journal.ts";
import type { ManifestSigningKey } from "../../manifest/signing.ts";
import type { CoverageEvent, ManifestRun } from "../../manifest/types.ts";
import { createS3Client } from "./client.ts";
import type { S3SinkOptions, SinkLogger } from "./config.ts";
import { S3Sink } from "./sink.ts";

/** A logger that can name the component a line comes from (pino fits). */
export interface S3ArchiveLogger extends SinkLogger {
  child(bindings: Record<string, unknown>): SinkLogger;
}

/** Where and how to archive. The sink's options, less the hooks the archive wires itself. */
export interface S3ArchiveOptions
  extends Omit<S3SinkOptions, "onUploaded" | "onRewrite" | "ready" | "logger"> {
  /** Where the manifest journal, chain head and outbox are kept: a persistent volume. Required. */
  manifestDir: string;
  /** Signs every manifest (Ed25519). Required. */
  signingKey: ManifestSigningKey;
  /** How often the journal checks this host's recent uploads; default 1 min, 0 never. */
  selfCheckIntervalMs?: number;
  /** How long close() waits for the open hour's manifest (a stop must end in bounded time); default 2.5 s. */
  stopManifestMs?: number;
  /** The writer's version, named in every manifest of this run (`run.version`); default "unknown". */
  version?: string;
  logger?: S3ArchiveLogger;
}

/** The open hour's manifest at a stop may take this long: SIGTERM must end within 10 s. */
export const DEFAULT_STOP_MANIFEST_MS = 2_500;
/** The journal's opener retries with the one backoff, from about this… */
const OPEN_RETRY_BASE_MS = 1_000;
/** …up to this. */
const OPEN_RETRY_MAX_MS = 30_000;

const silentLogger: S3ArchiveLogger = { info() {}, warn() {}, error() {}, child: () => silentLogger };

const errorFields = (error: unknown): { code: string | undefined; name: string | undefined } => ({
  code: (error as { code?: string } | null)?.code,
  name: (error as Error | null)?.name,
});

/**
 * An S3 archive: `sink` is what sources write to. The journal opens in the background, so an
 * archive whose store is down at start-up still takes writes (they spool); an upload the store
 * acknowledges meanwhile waits for the journal before its write() resolves, so no object goes
 * unrecorded. close() stops the sink, writes the open hour's manifest (bounded, and not while the
 * store is failing) and closes the journal.
 */
export class S3Archive {
  readonly sink: S3Sink;
  private readonly client: Promise<S3Client>;
  private readonly options: S3ArchiveOptions;
  /** This process, as its manifests name it. */
  readonly run: ManifestRun;
  private readonly logger: S3ArchiveLogger;
  private journalValue: ManifestJournal | undefined;
  private readonly journalReady: Promise<ManifestJournal>;
  private resolveJournal: (journal: ManifestJournal) => void = () => {};
  private rejectJournal: (error: Error) => void = () => {};
  private opening: Promise<void> = Promise.resolve();
  /** Why the journal could not be opened (or its chain opened) on the last try; null once open. */
  private openError: { code: string; error: unknown } | null = null;
  private closed = false;
  /** Ends the opener's wait between attempts: close() must not sit out a backoff. */
  private wakeOpener: (() => void) | undefined;
  /** Coverage events taken before the journal opened, kept on disk until it does. */
  private readonly backlog: CoverageBacklog;
  private backlogDrained = false;

  private constructor(options: S3ArchiveOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    this.backlog = new CoverageBacklog(options.manifestDir);
    this.run = {
      id: randomUUID(),
      startedAt: new Date().toISOString(),
      version: options.version ?? "unknown",
    };
    this.journalReady = new Promise<ManifestJournal>((resolve, reject) => {
      this.resolveJournal = resolve;
      this.rejectJournal = reject;
    });
    this.journalReady.catch(() => undefined); // rejected only by close(); the hook reports it
    const {
      manifestDir: _dir,
      signingKey: _key,
      selfCheckIntervalMs: _selfCheck,
      stopManifestMs: _stop,
      version: _version,
      ...sink
    } = options;
    this.sink = new S3Sink({
      ...sink,
      // No upload of this run before the chain's signed open record: what the store holds from
      // before it (since the last close) is then never taken for the sidecar's.
      ready: async () => {
        // The journal's last open attempt failed: fail the upload attempt with its reason (the
        // store unreachable is UNREACHABLE, as for an upload), rather than wait for a retry.
        if (!this.journalValue && this.openError) throw this.openError.error;
        await this.journalReady;
      },
      // Journaled (fsynced) before the write resolves: a crash never loses an object's manifest line.
      onUploaded: async (object) => (await this.journalReady).record(object),
      // A key that holds other bytes of ours: the new hash is signed into the chain first.
      onRewrite: async (object) => (await this.journalReady).announceRewrite(object),
      logger: this.logger.child({ component: "s3" }),
    });
    // The journal's client: same store, same settings; manifests go under <prefix>/_manifests/<host>/.
    const o = this.sink.options;
    this.client = createS3Client({
      region: o.region,
      endpoint: o.endpoint,
      forcePathStyle: o.forcePathStyle,
      connectTimeoutMs: o.timeouts.connectMs,
      requestTimeoutMs: o.timeouts.requestMs,
    });
  }

  /**
   * Builds the archive, starts opening its journal in the background and opens the sink's spool
   * (whose leftovers from an earlier run start uploading). Throws AUDITPIPE_ERR_SINK_CONFIG for a
   * bad option, or the spool's error.
   */
  static async open(options: S3ArchiveOptions): Promise<S3Archive> {
    if (!options.manifestDir) throw new TypeError("S3Archive: `manifestDir` is required");
    if (!options.signingKey) throw new TypeError("S3Archive: `signingKey` is required");
    const archive = new S3Archive(options);
    archive.opening = archive.openJournal();
    try {
      await archive.sink.start();
    } catch (error) {
      await archive.close();
      throw error;
    }
    return archive;
  }

  /** The manifest journal, once open. */
  journal(): ManifestJournal | undefined {
    return this.journalValue;
  }

  /**
   * Journals a coverage event (ManifestJournal.recordCoverage): resolved once it is fsynced, so a
   * source that awaits it before its range is acknowledged never loses the event in a crash. Until
   * the journal opens (the store down at start-up) the event waits in a backlog file beside the
   * journal instead, so the source's batches still reach the spool.
   */
  async recordCoverage(event: CoverageEvent): Promise<void> {
    if (this.journalValue && !this.backlogDrained) await this.drainBacklog();
    await this.backlog.record(event);
  }

  /** Hands the backlog to the open journal; a failure is left for the next recording to retry. */
  private async drainBacklog(): Promise<void> {
    const journal = this.journalValue;
    if (!journal || this.backlogDrained) return;
    const { events, skipped } = await this.backlog.drainInto(journal);
    this.backlogDrained = true;
    if (events > 0 || skipped > 0)
      this.logger.info(
        { events, skipped },
        "coverage events taken before the manifest chain opened are journaled",
      );
  }

  /** The journal's health (conflict, self-check), once open. */
  manifestHealth(): ManifestHealth | undefined {
    return this.journalValue?.health();
  }

  /**
   * Why the archive cannot do its job now, for /readyz: codes and kinds, never the bucket,
   * endpoint, spool path or a key (anyone may read /readyz; the log names them). Empty when ready.
   */
  problems(): string[] {
    const h = this.sink.health();
    const problems =
      h.state === "ok" ? [] : [`sink s3 ${h.state}: ${h.code} (${sinkErrorReason(h.code ?? "")})`];
    // Said once: a store that does not answer is the sink's problem above already.
    if (!this.journalValue && this.openError && h.state === "ok")
      problems.push(`manifest chain not open: ${this.openError.code}; uploads wait, retrying`);
    const m = this.manifestHealth();
    if (m && m.refused.length > 0)
      problems.push(
        `manifest chain: ${m.refused.length} manifest(s) signed by this sidecar's key are not where they belong (copied to another key or a future hour); not continued from`,
      );
    if (m?.conflict)
      problems.push(
        "manifest conflict: the hour's manifest in the bucket is not this sidecar's; not continued from",
      );
    if (m && m.selfCheck.length > 0) {
      const byKind = new Map<string, number>();
      for (const f of m.selfCheck) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
      const counts = [...byKind].map(([kind, n]) => `${n} ${kind}`).join(", ");
      problems.push(`self-check: the bucket differs from what this sidecar uploaded (${counts})`);
    }
    return problems;
  }

  /**
   * Stops the sink (the spool stays for the next start), writes the open hour's manifest with the
   * chain's close record (for at most `manifestMs`, default the `stopManifestMs` option), closes
   * the journal.
   */
  async close(options: { manifestMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wakeOpener?.();
    this.rejectJournal(new Error("the archive closed before its manifest journal opened"));
    const deadline =
      Date.now() + (options.manifestMs ?? this.options.stopManifestMs ?? DEFAULT_STOP_MANIFEST_MS);
    const healthy = this.sink.health().state === "ok";
    await this.sink.close();
    // A journal opening right now may have written its open record: let it finish (within the
    // budget) so that record gets its close too.
    await this.until(this.opening, deadline);
    await this.stopJournal(healthy, Math.max(0, deadline - Date.now()));
    await this.until(this.opening, deadline);
    await this.client.then(
      (client) => client.destroy(),
      () => undefined,
    );
  }

  /** Waits for `p`, but not past `deadline`. */
  private async until(p: Promise<unknown>, deadline: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      p.catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      }),
    ]);
    clearTimeout(timer);
  }

  private async openJournal(): Promise<void> {
    const logger = this.logger.child({ component: "manifest" });
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        const journal = await ManifestJournal.open({
          client: await this.client,
          bucket: this.sink.options.bucket,
          prefix: this.sink.options.prefix,
          host: this.sink.options.host,
          stateDir: this.options.manifestDir,
          signingKey: this.options.signingKey,
          run: this.run,
          uploading: () => this.sink.uploading(),
          ...(this.options.selfCheckIntervalMs === undefined
            ? {}
            : { selfCheckIntervalMs: this.options.selfCheckIntervalMs }),
          logger,
        });
        if (this.closed) {
          await journal.close().catch(() => undefined);
          return;
        }
        // The run's signed open record, before any upload of the run (the sink waits for it).
        try {
          await journal.openChain();
        } catch (error) {
          await journal.close().catch(() => undefined);
          throw error;
        }
        this.journalValue = journal;
        this.openError = null;
        await this.drainBacklog().catch((error: unknown) =>
          this.logger.error(
            { err: errorFields(error) },
            "cannot journal the coverage events taken before the chain opened yet; the next event retries",
          ),
        );
        // Closed meanwhile: close() writes the close record; no timer, no upload of this run.
        if (!this.closed) {
          journal.startTimer();
          this.resolveJournal(journal);
        }
        return;
      } catch (error) {
        const code = errorFields(error).code ?? errorFields(error).name ?? "unknown";
        // A manifest state or key problem is no store error: uploads wait for someone to act.
        const reason =
          error instanceof ManifestError
            ? new SinkError(
                SinkErrorCode.NOT_OPEN,
                `the manifest chain cannot be opened (${code}): uploads wait; the log says what to do`,
                { retryable: true },
              )
            : error;
        this.openError = { code, error: reason };
        this.logger.warn(
          { attempt, err: errorFields(error) },
          "cannot open the manifest journal yet; retrying",
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoffDelay(attempt, OPEN_RETRY_BASE_MS, OPEN_RETRY_MAX_MS));
          this.wakeOpener = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  /**
   * At a stop, after the sink: the open hour's manifest (partial), so a stopped sidecar leaves a
   * verifiable archive, then the journal closed. Skipped when the store is failing and bounded
   * otherwise, so a stop still ends in time; the journal keeps the hour and the next start writes it.
   */
  private async stopJournal(storeHealthy: boolean, waitMs: number): Promise<void> {
    const journal = this.journalValue;
    if (!journal) return;
    const logger = this.logger;
    if (!storeHealthy)
      logger.warn({}, "the store is failing: the open hour's manifest is left to the next start");
    const closing = (async () => {
      if (storeHealthy)
        await journal
          .closeOpen()
          .catch((error: unknown) =>
            logger.error(
              { err: errorFields(error) },
              "could not write the open hour's manifest at the stop; the next start writes it",
            ),
          );
      await journal.close();
    })().catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), waitMs);
    });
    if ((await Promise.race([closing, late])) === "late")
      logger.error({ waitedMs: waitMs }, "the store is slow: stopping without the open hour's manifest");
    clearTimeout(timer);
  }
}
