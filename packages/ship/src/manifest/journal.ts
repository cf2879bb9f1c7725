import { type FileHandle, mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { writeFileDurably } from "./_durable.ts";
import { decodeManifest, encodeManifest } from "./_format.ts";
import {
  floorHour,
  HOUR_MS,
  hourLabel,
  manifestFolder,
  manifestKey,
  normalizePrefix,
  parseManifestKey,
} from "./_keys.ts";
import { getBytes, listObjects, putIfAbsent, sha256Hex } from "./_s3.ts";
import {
  type ChainHead,
  encodeRecord,
  JOURNAL_FILE,
  type JournalRecord,
  readHead,
  readJournal,
  writeHead,
} from "./_state.ts";
import { ManifestError, ManifestErrorCode } from "./errors.ts";
import type { ManifestLogger, UploadedObject } from "./types.ts";

export interface ManifestJournalOptions {
  /** S3 client for the archive's bucket (the sink's client will do). */
  client: S3Client;
  /** The archive's bucket. */
  bucket: string;
  /** The archive's key prefix (the sink's); manifests go under `<prefix>/_manifests/<host>/`. */
  prefix: string;
  /** This sidecar's name, as in the object keys. One chain per host. */
  host: string;
  /** Where the journal and the chain head are kept (the sidecar's state dir). */
  stateDir: string;
  /** The clock that decides when an hour is over; tests inject one. */
  now?: () => Date;
  /** How long after its end an hour's manifest is written (late acknowledgements); default 5 min. */
  graceMs?: number;
  logger?: ManifestLogger;
}

/** Uploads acknowledged a little after the hour ended still belong to it; 5 minutes covers a slow PUT. */
export const DEFAULT_MANIFEST_GRACE_MS: number = 5 * 60_000;
/** How often `startTimer()` looks for hours to close by default. */
export const DEFAULT_CLOSE_INTERVAL_MS: number = 60_000;

const silentLogger: ManifestLogger = { info() {}, warn() {}, error() {} };

const sameObject = (a: UploadedObject, b: UploadedObject): boolean =>
  a.key === b.key && a.sha256 === b.sha256 && a.uploadedAt === b.uploadedAt;

/**
 * The sidecar's side of tamper evidence. `record()` journals every object S3 acknowledged
 * (appended and fsynced to the state dir before it resolves, so a crash never loses the fact
 * that an object was stored); `closeDue()` writes the manifest of every hour that is over,
 * each linking to the one before by key and SHA-256: a hash chain per host.
 *
 * An object belongs to the hour it was uploaded in (UTC), not to the hour of its entries: late
 * data and replays land in the hour they were stored, so a closed manifest never needs to change.
 * An hour with no uploads still gets a manifest, so a missing hour means a deleted manifest.
 */
export class ManifestJournal {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly host: string;
  private readonly stateDir: string;
  private readonly now: () => Date;
  private readonly graceMs: number;
  private readonly logger: ManifestLogger;
  /** Objects not in a manifest yet, by manifest hour; mirrors the journal file. */
  private readonly pending = new Map<number, UploadedObject[]>();
  private head: ChainHead | null;
  /** Hours up to this one are closed or being closed: records go to a later hour. */
  private frozenThrough: number | null;
  private file: FileHandle | null = null;
  /** Journal file operations, one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** closeDue() runs, one at a time. */
  private closing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(options: ManifestJournalOptions, head: ChainHead | null) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = normalizePrefix(options.prefix);
    this.host = options.host;
    this.stateDir = options.stateDir;
    this.now = options.now ?? ((): Date => new Date());
    this.graceMs = options.graceMs ?? DEFAULT_MANIFEST_GRACE_MS;
    this.logger = options.logger ?? silentLogger;
    this.head = head;
    this.frozenThrough = head?.hourMs ?? null;
  }

  /**
   * Reads the journal and chain head from `stateDir`. Without a head there (first start, or a
   * lost state dir) the chain continues from the newest manifest of this host in the bucket,
   * else it starts at the first hour the journal sees.
   */
  static async open(options: ManifestJournalOptions): Promise<ManifestJournal> {
    for (const field of ["bucket", "host", "stateDir"] as const)
      if (!options[field]) throw new TypeError(`ManifestJournal: \`${field}\` is required`);
    if (options.host.includes("/")) throw new TypeError("ManifestJournal: `host` cannot contain '/'");
    const prefix = normalizePrefix(options.prefix ?? "");
    const archive = { bucket: options.bucket, prefix, host: options.host };
    await mkdir(options.stateDir, { recursive: true });
    let head = await readHead(options.stateDir, archive);
    if (head === null) {
      head = await newestInBucket(options.client, options.bucket, prefix, options.host);
      if (head) {
        options.logger?.warn(
          { manifest: head.key },
          "no manifest chain head in the state dir: continuing the chain found in the bucket",
        );
        await writeHead(options.stateDir, archive, head);
      }
    }
    const journal = new ManifestJournal(options, head);
    const { records, skipped } = await readJournal(options.stateDir);
    if (skipped > 0)
      journal.logger.warn({ skipped }, "manifest journal: unreadable lines skipped (a torn last append)");
    for (const r of records) if (head === null || r.hourMs > head.hourMs) journal.add(r);
    await journal.rewrite(); // drops closed hours and a torn tail before anything is appended
    return journal;
  }

  /** Journals an object S3 acknowledged; resolves once the record is on disk (fsynced). */
  record(object: UploadedObject): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    if (typeof object?.key !== "string" || !/^[0-9a-f]{64}$/.test(object.sha256 ?? ""))
      return Promise.reject(new TypeError("ManifestJournal.record: key and a hex sha256 are required"));
    return this.enqueue(async () => {
      const uploaded = Date.parse(object.uploadedAt);
      let hourMs = floorHour(Number.isNaN(uploaded) ? this.now().getTime() : uploaded);
      if (this.frozenThrough !== null && hourMs <= this.frozenThrough) {
        // Acknowledged after its hour closed (a sink stalled past the grace period): it goes to
        // the first open hour rather than into a manifest that is already written.
        this.logger.warn(
          { key: object.key, uploadedAt: object.uploadedAt, hour: hourLabel(this.frozenThrough + HOUR_MS) },
          "upload recorded after its hour closed: listed in the next open hour",
        );
        hourMs = this.frozenThrough + HOUR_MS;
      }
      await this.append([{ hourMs, object }]);
    });
  }

  /**
   * Writes the manifest of every hour that is over (now ≥ hour end + grace), oldest first.
   * Call it on a timer and at shutdown. A failed PUT rejects; the next call retries the hour.
   */
  closeDue(): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    const run = this.closing.then(() => this.closeHours());
    this.closing = run.catch(() => {});
    return run;
  }

  /** Calls closeDue() every `intervalMs` (errors are logged, the next tick retries); unref'd. */
  startTimer(intervalMs: number = DEFAULT_CLOSE_INTERVAL_MS): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      this.closeDue().catch((error: unknown) =>
        this.logger.error({ err: error }, "writing the hour's manifest failed; retrying on the next tick"),
      );
    }, intervalMs);
    this.timer.unref();
  }

  /** Closes what is due, then the journal file. The open hour stays in the journal for the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    try {
      await this.closeDue();
    } finally {
      this.closed = true;
      await this.enqueue(async () => {
        await this.file?.close();
        this.file = null;
      });
    }
  }

  /** The last manifest written (what the next links to), or null before the first. */
  get chainHead(): { key: string; sha256: string; hour: string } | null {
    return this.head
      ? { key: this.head.key, sha256: this.head.sha256, hour: hourLabel(this.head.hourMs) }
      : null;
  }

  private async closeHours(): Promise<void> {
    const lastDue = floorHour(this.now().getTime() - this.graceMs - HOUR_MS);
    let first = this.head ? this.head.hourMs + HOUR_MS : Math.min(...this.pending.keys());
    if (!Number.isFinite(first)) return; // no chain and nothing journaled yet
    let wrote = false;
    try {
      for (; first <= lastDue; first += HOUR_MS) {
        await this.closeHour(first);
        wrote = true;
      }
    } finally {
      if (wrote) await this.enqueue(() => this.rewrite());
    }
  }

  private async closeHour(hourMs: number): Promise<void> {
    // Freeze the hour and take its objects inside the queue, so no append is half done.
    const objects = await this.enqueue(async () => {
      this.frozenThrough = Math.max(this.frozenThrough ?? hourMs, hourMs);
      return [...(this.pending.get(hourMs) ?? [])];
    });
    const key = manifestKey(this.prefix, this.host, hourMs);
    const previous = this.head ? { key: this.head.key, sha256: this.head.sha256 } : null;
    const body = encodeManifest({ host: this.host, hourMs, created: this.now(), previous, objects });
    let sha256 = sha256Hex(body);
    if (!(await putIfAbsent(this.client, this.bucket, key, body))) {
      sha256 = await this.adopt(key, hourMs, previous, objects);
    }
    const head = { key, sha256, hourMs };
    await writeHead(this.stateDir, { bucket: this.bucket, prefix: this.prefix, host: this.host }, head);
    this.head = head;
    this.pending.delete(hourMs);
    this.logger.info(
      { manifest: key, objects: objects.length, sha256 },
      objects.length === 0 ? "hour closed: empty manifest written" : "hour closed: manifest written",
    );
  }

  /**
   * The hour's manifest exists already: we wrote it and crashed before saving the head. Adopt it
   * when it continues our chain; objects journaled since (not in it) move to the next hour.
   */
  private async adopt(
    key: string,
    hourMs: number,
    previous: { key: string; sha256: string } | null,
    objects: UploadedObject[],
  ): Promise<string> {
    const bytes = await getBytes(this.client, this.bucket, key);
    const existing = bytes ? decodeManifest(bytes) : "gone again";
    const link = typeof existing === "string" ? undefined : existing.previous;
    const continues =
      typeof existing !== "string" &&
      existing.host === this.host &&
      existing.hour === hourLabel(hourMs) &&
      (link === null ? previous === null : link?.key === previous?.key && link?.sha256 === previous?.sha256);
    if (!bytes || typeof existing === "string" || !continues)
      throw new ManifestError(
        ManifestErrorCode.CONFLICT,
        `${key} exists and does not continue this chain (previous ${previous?.key ?? "none"}): ` +
          "another writer with the same host, or a state dir from another archive",
      );
    const missing = objects.filter((o) => !existing.objects.some((e) => sameObject(e, o)));
    if (missing.length > 0)
      await this.enqueue(() => this.append(missing.map((object) => ({ hourMs: hourMs + HOUR_MS, object }))));
    this.logger.warn(
      { manifest: key, moved: missing.length },
      "manifest already written before a restart: adopted",
    );
    return sha256Hex(bytes);
  }

  private enqueue<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op);
    this.queue = run.catch(() => {});
    return run;
  }

  private add(r: JournalRecord): void {
    const list = this.pending.get(r.hourMs);
    if (list) list.push(r.object);
    else this.pending.set(r.hourMs, [r.object]);
  }

  /** Appends and fsyncs; only then are the records part of the journal in memory. */
  private async append(records: JournalRecord[]): Promise<void> {
    if (!this.file) throw new ManifestError(ManifestErrorCode.CLOSED, "journal is closed");
    await this.file.appendFile(records.map(encodeRecord).join(""));
    await this.file.sync();
    for (const r of records) this.add(r);
  }

  /** Replaces the journal file with what is pending (atomically), then reopens it for appends. */
  private async rewrite(): Promise<void> {
    const lines: string[] = [];
    for (const hourMs of [...this.pending.keys()].sort((a, b) => a - b))
      for (const object of this.pending.get(hourMs) ?? []) lines.push(encodeRecord({ hourMs, object }));
    await this.file?.close();
    this.file = null;
    const path = join(this.stateDir, JOURNAL_FILE);
    await writeFileDurably(path, lines.join(""));
    this.file = await open(path, "a");
  }
}

/** The newest manifest of `host` in the bucket, as a chain head, or null when there is none. */
async function newestInBucket(
  client: S3Client,
  bucket: string,
  prefix: string,
  host: string,
): Promise<ChainHead | null> {
  const keys = (await listObjects(client, bucket, manifestFolder(prefix, host)))
    .map((o) => ({ key: o.key, parsed: parseManifestKey(prefix, o.key) }))
    .filter((o) => o.parsed?.host === host)
    .sort((a, b) => (a.parsed?.hourMs ?? 0) - (b.parsed?.hourMs ?? 0));
  const newest = keys.at(-1);
  if (!newest?.parsed) return null;
  const bytes = await getBytes(client, bucket, newest.key);
  if (!bytes) return null;
  return { key: newest.key, sha256: sha256Hex(bytes), hourMs: newest.parsed.hourMs };
}
