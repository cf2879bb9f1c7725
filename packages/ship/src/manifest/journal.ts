import { type FileHandle, mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { writeFileDurably } from "../durable-write.ts";
import { adoptManifest, isWanted, type WantedManifest } from "./_adopt.ts";
import { entryId, listedIds, manifestContent, objectsOf } from "./_entries.ts";
import { coverageEventProblem, decodeManifest, encodeManifest, isCompactedFile } from "./_format.ts";
import { floorHour, HOUR_MS, hourLabel, manifestKey, normalizePrefix } from "./_keys.ts";
import { headManifestFromOutbox, newestOwnInBucket } from "./_resume.ts";
import { getBytes, type ListedObject, putIfAbsent, sha256Hex } from "./_s3.ts";
import { checkOwnUploads, type SelfCheckFinding } from "./_self-check.ts";
import {
  type ChainHead,
  encodeRecord,
  JOURNAL_FILE,
  type JournalEntry,
  type JournalRecord,
  readHead,
  readJournal,
  readOutbox,
  writeHead,
  writeOutbox,
} from "./_state.ts";
import { ManifestError, ManifestErrorCode } from "./errors.ts";
import { type ManifestSigningKey, signatureProblem } from "./signing.ts";
import type {
  ChainRecord,
  CompactedFile,
  CoverageEvent,
  Manifest,
  ManifestLogger,
  ManifestRun,
  UploadedObject,
} from "./types.ts";

/**
 * Why manifests are written now: hours that are over (`due`); at a stop, every hour up to now,
 * the last with a `close` record; at a start, the same with an `open` record; before a rewrite or
 * after the self-check found foreign objects, the same without a record, so what was journaled
 * (the rewrite's announcement, the objects disowned) is signed at once.
 */
type Occasion = "due" | "stop" | "start" | "announce";

export type { SelfCheckFinding } from "./_self-check.ts";

/** What /readyz and the metrics need from the journal. */
export interface ManifestHealth {
  /** The hour's manifest in the bucket is not this sidecar's: reported, never continued from. */
  conflict: { key: string; reason: string } | null;
  /**
   * Manifests in the bucket signed by this sidecar's key that were not continued from, found when
   * the state dir had no chain head: copied to a key that is not theirs, or for an hour not begun.
   */
  refused: { key: string; reason: string }[];
  /** What the last check of this sidecar's own recent uploads found (empty when clean). */
  selfCheck: SelfCheckFinding[];
  /** When the last self-check finished, or null before the first. */
  selfCheckedAt: Date | null;
}

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
  /**
   * Signs every manifest (Ed25519). A manifest found in the bucket for an hour being closed is
   * adopted only when it is byte for byte what this journal saved before its PUT, or carries a
   * valid signature by this key.
   */
  signingKey?: ManifestSigningKey;
  /** How often `startTimer()` checks this sidecar's own recent uploads; default 1 min, 0 never. */
  selfCheckIntervalMs?: number;
  /** The process writing the manifests: named in each one (`run`). */
  run?: ManifestRun;
  /**
   * Keys the sink is uploading now (stored, perhaps, not recorded yet): the self-check does not
   * take them for someone else's. The sink's `uploading()`.
   */
  uploading?: () => ReadonlySet<string>;
  logger?: ManifestLogger;
}

/** Uploads acknowledged a little after the hour ended still belong to it; 5 minutes covers a slow PUT. */
export const DEFAULT_MANIFEST_GRACE_MS: number = 5 * 60_000;
/** How often `startTimer()` looks for hours to close by default. */
export const DEFAULT_CLOSE_INTERVAL_MS: number = 60_000;
/** How often `startTimer()` checks the sidecar's own uploads of the open hours by default. */
export const DEFAULT_SELF_CHECK_INTERVAL_MS: number = 60_000;
/** Store and sidecar clocks may disagree by this much around the end of the last closed hour. */
const SELF_CHECK_SKEW_MS = 5 * 60_000;

const silentLogger: ManifestLogger = { info() {}, warn() {}, error() {} };

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
  private readonly signingKey: ManifestSigningKey | undefined;
  private readonly selfCheckIntervalMs: number;
  private readonly run: ManifestRun | undefined;
  private readonly uploading: () => ReadonlySet<string>;
  private readonly logger: ManifestLogger;
  /** Entries not in a manifest yet, by manifest hour; mirrors the journal file. */
  private readonly pending = new Map<number, JournalEntry[]>();
  private head: ChainHead | null;
  /** The head manifest, when known (written by this process, or its saved bytes). */
  private headManifest: Manifest | null = null;
  /** Hours up to this one are closed or being closed: records go to a later hour. */
  private frozenThrough: number | null;
  private file: FileHandle | null = null;
  /** Journal file operations, one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** closeDue() runs, one at a time. */
  private closing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private selfCheckTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly openedAt: number;
  private conflict: ManifestHealth["conflict"] = null;
  private refused: ManifestHealth["refused"] = [];
  /** The key of the manifest being PUT now: the self-check must not take it for someone else's. */
  private writing: string | null = null;
  private selfCheckFindings: SelfCheckFinding[] = [];
  private selfCheckedAt: Date | null = null;
  private readonly verifiedUploads = new Map<string, string>();
  /** Manifests the self-check read back, by key: their ETag and what they list. */
  private readonly readBack = new Map<string, { etag: string; objects: UploadedObject[] }>();
  private readonly reported = new Set<string>();

  private constructor(options: ManifestJournalOptions, head: ChainHead | null) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = normalizePrefix(options.prefix);
    this.host = options.host;
    this.stateDir = options.stateDir;
    this.now = options.now ?? ((): Date => new Date());
    this.graceMs = options.graceMs ?? DEFAULT_MANIFEST_GRACE_MS;
    this.signingKey = options.signingKey;
    this.selfCheckIntervalMs = options.selfCheckIntervalMs ?? DEFAULT_SELF_CHECK_INTERVAL_MS;
    this.run = options.run;
    this.uploading = options.uploading ?? ((): ReadonlySet<string> => new Set());
    this.logger = options.logger ?? silentLogger;
    this.head = head;
    // A partial head (written at a stop) leaves its hour open: later uploads continue it.
    this.frozenThrough = head ? (head.partial ? head.hourMs - HOUR_MS : head.hourMs) : null;
    this.openedAt = this.now().getTime();
  }

  /**
   * Reads the journal and chain head from `stateDir`. Without a head there (first start, or a
   * lost state dir) the chain continues from the newest manifest of this host in the bucket
   * (with a signing key: the newest one it signed), else it starts at the first hour the journal sees.
   */
  static async open(options: ManifestJournalOptions): Promise<ManifestJournal> {
    for (const field of ["bucket", "host", "stateDir"] as const)
      if (!options[field]) throw new TypeError(`ManifestJournal: \`${field}\` is required`);
    if (options.host.includes("/")) throw new TypeError("ManifestJournal: `host` cannot contain '/'");
    const prefix = normalizePrefix(options.prefix ?? "");
    const archive = { bucket: options.bucket, prefix, host: options.host };
    await mkdir(options.stateDir, { recursive: true });
    let head = await readHead(options.stateDir, archive);
    let refused: ManifestHealth["refused"] = [];
    if (head === null) {
      const now = (options.now ?? ((): Date => new Date()))().getTime();
      ({ head, refused } = await newestOwnInBucket({ ...options, prefix, now }));
      if (head) {
        options.logger?.warn(
          { manifest: head.key },
          "no manifest chain head in the state dir: continuing the chain found in the bucket",
        );
        await writeHead(options.stateDir, archive, head);
      }
    }
    const journal = new ManifestJournal(options, head);
    journal.refused = refused;
    journal.headManifest = await headManifestFromOutbox(options.stateDir, head);
    const { records, skipped } = await readJournal(options.stateDir);
    if (skipped > 0)
      journal.logger.warn({ skipped }, "manifest journal: unreadable lines skipped (a torn last append)");
    const listed = journal.headManifest ? listedIds(journal.headManifest) : new Set<string>();
    for (const r of records) {
      if (head === null || r.hourMs > head.hourMs) journal.add(r);
      // The rest of a partial hour, less what its manifest lists (a crash before the rewrite).
      else if (head.partial && r.hourMs === head.hourMs && !listed.has(entryId(r))) journal.add(r);
    }
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
      const ms = Number.isNaN(uploaded) ? this.now().getTime() : uploaded;
      const hourMs = this.openHour(ms);
      if (hourMs !== floorHour(ms))
        // Acknowledged after its hour closed (a sink stalled past the grace period): it goes to
        // the first open hour rather than into a manifest that is already written.
        this.logger.warn(
          { key: object.key, uploadedAt: object.uploadedAt, hour: hourLabel(hourMs) },
          "upload recorded after its hour closed: listed in the next open hour",
        );
      await this.append([{ hourMs, object }]);
    });
  }

  /**
   * Journals a coverage event (a source followed, a range given up, a server start or stop, an
   * audit-setting change, incomplete syslog messages): appended and fsynced before it resolves,
   * listed in the `coverage` of the manifest of the hour it is recorded in, and signed with it.
   * The same event twice in an hour is listed once. Rejects with a TypeError naming what is wrong.
   */
  recordCoverage(event: CoverageEvent): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    const problem = coverageEventProblem(event);
    if (problem) return Promise.reject(new TypeError(`ManifestJournal.recordCoverage: ${problem}`));
    return this.enqueue(async () => {
      const hourMs = this.openHour(this.now().getTime());
      const id = entryId({ coverage: event });
      if ((this.pending.get(hourMs) ?? []).some((e) => entryId(e) === id)) return;
      await this.append([{ hourMs, coverage: event }]);
    });
  }

  /**
   * Journals a compacted (Parquet) file made from landing objects: appended and fsynced before it
   * resolves, listed in the `compacted` of the manifest of the hour it is recorded in; verify
   * checks the file's SHA-256. Record it once the store acknowledged the file.
   */
  recordCompaction(file: CompactedFile): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    if (!isCompactedFile(file))
      return Promise.reject(
        new TypeError(
          "ManifestJournal.recordCompaction: key, a hex sha256, size, rows, sources [{key, sha256}] and hour (YYYY-MM-DDTHH) are required",
        ),
      );
    return this.enqueue(() =>
      this.append([{ hourMs: this.openHour(this.now().getTime()), compacted: file }]),
    );
  }

  /**
   * Writes the manifest of every hour that is over (now ≥ hour end + grace), oldest first.
   * Call it on a timer and at shutdown. A failed PUT rejects; the next call retries the hour.
   */
  closeDue(): Promise<void> {
    return this.serially("due");
  }

  /**
   * At a clean stop, after the last upload: closeDue(), then the hours not due yet up to now, the
   * current one as a partial manifest (`partial: true`) carrying the chain's `close` record, so a
   * stopped sidecar leaves a verifiable archive and nothing stored under its keys after it passes
   * for its own. A restart in the same hour continues it as `<hour>.1.json`, `<hour>.2.json`…,
   * each linked to the one before.
   */
  closeOpen(): Promise<void> {
    return this.serially("stop");
  }

  /**
   * At a start, before the first upload: every hour up to now written (as closeOpen() does), then
   * a signed `open` record, an empty partial manifest of the current hour (the last manifest, when
   * it had nothing to list). From it on, uploads are the new run's; between a `close` and the next
   * `open` nothing under this host's keys is the sidecar's.
   */
  openChain(): Promise<void> {
    return this.serially("start");
  }

  /**
   * Before a key that holds other bytes of this sidecar is overwritten (a replay whose bytes
   * differ): the object is journaled with `supersedes` (the SHA-256 it replaces) and every hour up
   * to now is written at once, the current one as a partial manifest listing it, so the new hash
   * is in the signed chain before the store holds it, and verify takes either for this listing.
   */
  announceRewrite(object: UploadedObject & { supersedes: string }): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    if (typeof object?.key !== "string" || !/^[0-9a-f]{64}$/.test(object.supersedes ?? ""))
      return Promise.reject(
        new TypeError("ManifestJournal.announceRewrite: key and a hex supersedes are required"),
      );
    return this.enqueue(() =>
      this.append([{ hourMs: this.openHour(this.now().getTime()), object: { ...object } }]),
    ).then(() => this.serially("announce"));
  }

  /**
   * Before a compacted file's key that holds other bytes of this sidecar is overwritten (an hour
   * compacted anew after it grew): as announceRewrite does for landing objects, the new file is
   * journaled with `supersedes` (the SHA-256 the key holds now) and every hour up to now written at
   * once, so the new hash is in the signed chain before the store holds it. Record the file with
   * recordCompaction (without `supersedes`) once it is stored: that listing ends the announcement.
   */
  announceCompaction(file: CompactedFile & { supersedes: string }): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    if (!isCompactedFile(file) || typeof file.supersedes !== "string")
      return Promise.reject(
        new TypeError(
          "ManifestJournal.announceCompaction: a compacted file (see recordCompaction) and a hex supersedes are required",
        ),
      );
    return this.enqueue(() =>
      this.append([{ hourMs: this.openHour(this.now().getTime()), compacted: { ...file } }]),
    ).then(() => this.serially("announce"));
  }

  /** Calls closeDue() every `intervalMs` and the self-check on its own interval (errors logged, retried); unref'd. */
  startTimer(intervalMs: number = DEFAULT_CLOSE_INTERVAL_MS): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      this.closeDue().catch((error: unknown) =>
        this.logger.error(
          { err: error, code: (error as { code?: string }).code },
          "writing the hour's manifest failed; retrying on the next tick",
        ),
      );
    }, intervalMs);
    this.timer.unref();
    if (this.selfCheckIntervalMs > 0) {
      this.selfCheckTimer = setInterval(() => {
        this.checkOwnUploads().catch((error: unknown) =>
          this.logger.warn({ err: error }, "self-check of recent uploads failed; retrying on the next tick"),
        );
      }, this.selfCheckIntervalMs);
      this.selfCheckTimer.unref();
    }
  }

  /** Closes what is due, then the journal file. The open hour stays in the journal for the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    if (this.selfCheckTimer) clearInterval(this.selfCheckTimer);
    this.timer = null;
    this.selfCheckTimer = null;
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
  get chainHead(): { key: string; sha256: string; hour: string; sequence: number; partial: boolean } | null {
    return this.head
      ? {
          key: this.head.key,
          sha256: this.head.sha256,
          hour: hourLabel(this.head.hourMs),
          sequence: this.head.sequence,
          partial: this.head.partial,
        }
      : null;
  }

  health(): ManifestHealth {
    return {
      conflict: this.conflict,
      refused: this.refused,
      selfCheck: this.selfCheckFindings,
      selfCheckedAt: this.selfCheckedAt,
    };
  }

  /**
   * Compares this host's objects in the bucket, stored since the last closed hour, with the
   * journal: a foreign, altered or missing object, or a manifest for an hour not closed yet, is
   * found now instead of at the next manifest. Runs on startTimer()'s self-check interval.
   */
  async checkOwnUploads(): Promise<SelfCheckFinding[]> {
    const known = (): Map<string, UploadedObject> => {
      const map = new Map<string, UploadedObject>();
      const all = [...(this.headManifest?.objects ?? []), ...objectsOf([...this.pending.values()].flat())];
      for (const o of all) {
        const seen = map.get(o.key);
        if (!seen || Date.parse(seen.uploadedAt) <= Date.parse(o.uploadedAt)) map.set(o.key, o);
      }
      return map;
    };
    const now = this.now().getTime();
    const head = this.head;
    const firstOpen = head
      ? head.partial
        ? head.hourMs
        : head.hourMs + HOUR_MS
      : Math.min(this.openedAt, ...this.pending.keys());
    // Around the end of the last closed hour the store's and the sidecar's clocks may disagree:
    // reach back before it only when what the head manifest lists is known (and is that hour's);
    // without that list, stay clear of the boundary.
    const since =
      head === null || (this.headManifest !== null && !head.partial)
        ? firstOpen - SELF_CHECK_SKEW_MS
        : this.headManifest === null
          ? firstOpen + SELF_CHECK_SKEW_MS
          : firstOpen;
    const findings = await checkOwnUploads({
      client: this.client,
      bucket: this.bucket,
      prefix: this.prefix,
      host: this.host,
      now,
      since,
      recentKeys: new Set(known().keys()),
      journaled: async () => {
        await this.queue;
        return known();
      },
      verified: this.verifiedUploads,
      // Read once the listing is done: a manifest written meanwhile is this sidecar's.
      head: () => (this.head ? { hourMs: this.head.hourMs, sequence: this.head.sequence } : null),
      writing: () => this.writing,
      listedIn: (manifests) => this.listedIn(manifests),
      uploading: this.uploading,
    });
    const disowned: JournalRecord[] = [];
    for (const f of findings) {
      const id = `${f.kind}:${f.key}`;
      if (this.reported.has(id)) continue;
      this.reported.add(id);
      this.logger.error(
        { kind: f.kind, key: f.key, reason: f.reason },
        "self-check: the bucket differs from what this sidecar uploaded",
      );
      if (f.kind === "foreign")
        disowned.push({
          hourMs: this.openHour(now),
          foreign: { key: f.key, storedAt: f.storedAt ?? "", seenAt: new Date(now).toISOString() },
        });
    }
    // Signed into the chain now, in a partial manifest: verify reports them without waiting for
    // the hour to end, whether this sidecar runs on, stops or is gone by then. Journaled first, so
    // a failed PUT is written with the next manifest.
    // Also when an earlier attempt failed: foreign entries still journaled are not signed yet.
    const unsigned = [...this.pending.values()].some((entries) => entries.some((e) => "foreign" in e));
    if ((disowned.length > 0 || unsigned) && !this.closed) {
      if (disowned.length > 0) await this.enqueue(() => this.append(disowned));
      await this.serially("announce").catch((error: unknown) =>
        this.logger.warn(
          { err: { code: (error as { code?: string }).code, name: (error as Error).name } },
          "could not sign the self-check's findings into a manifest now: retried at the next self-check",
        ),
      );
    }
    this.selfCheckFindings = findings;
    this.selfCheckedAt = new Date(now);
    return findings;
  }

  /**
   * What this host's manifests list, read back from the bucket (each once per ETag): only those
   * signed by this journal's key (with one), so a forged manifest never vouches for an object.
   */
  private async listedIn(manifests: readonly ListedObject[]): Promise<Map<string, UploadedObject>> {
    const listed = new Map<string, UploadedObject>();
    const own = this.signingKey ? new Map([[this.signingKey.keyId, this.signingKey.publicKey]]) : null;
    for (const o of manifests) {
      let cached = this.readBack.get(o.key);
      if (cached?.etag !== o.etag) {
        const bytes = await getBytes(this.client, this.bucket, o.key);
        const m = bytes ? decodeManifest(bytes) : "gone";
        const trusted =
          typeof m !== "string" && m.host === this.host && (!own || signatureProblem(m, own) === null);
        cached = { etag: o.etag, objects: trusted ? m.objects : [] };
        this.readBack.set(o.key, cached);
      }
      for (const object of cached.objects) {
        const seen = listed.get(object.key);
        if (!seen || Date.parse(seen.uploadedAt) <= Date.parse(object.uploadedAt))
          listed.set(object.key, object);
      }
    }
    const keep = new Set(manifests.map((o) => o.key));
    for (const key of this.readBack.keys()) if (!keep.has(key)) this.readBack.delete(key);
    return listed;
  }

  private serially(occasion: Occasion): Promise<void> {
    if (this.closed) return Promise.reject(new ManifestError(ManifestErrorCode.CLOSED, "journal is closed"));
    const run = this.closing.then(() => this.closeHours(occasion));
    this.closing = run.catch(() => {});
    return run;
  }

  /** The hour the next manifest is for: the head's own when it is partial. */
  private nextHour(): number {
    if (this.head) return this.head.partial ? this.head.hourMs : this.head.hourMs + HOUR_MS;
    return Math.min(...this.pending.keys()); // Infinity: no chain and nothing journaled yet
  }

  private async closeHours(occasion: Occasion): Promise<void> {
    const now = this.now().getTime();
    const lastDue = floorHour(now - this.graceMs - HOUR_MS);
    const record: ChainRecord | undefined =
      occasion === "stop" ? "close" : occasion === "start" ? "open" : undefined;
    let recorded = false;
    let wrote = false;
    try {
      for (let h = this.nextHour(); Number.isFinite(h) && h <= lastDue; h = this.nextHour()) {
        await this.closeHour(h, false);
        wrote = true;
      }
      const open = occasion !== "due";
      for (let h = this.nextHour(); open && Number.isFinite(h) && h <= floorHour(now); h = this.nextHour()) {
        const partial = h + HOUR_MS > now;
        // The run's open record lists nothing: what the hour holds so far goes in a manifest before it.
        const empty = (this.pending.get(h) ?? []).length === 0;
        const chain = partial && (record === "close" || (record === "open" && empty)) ? record : undefined;
        recorded = (await this.closeHour(h, partial, chain)).chain === record && record !== undefined;
        wrote = true;
        if (partial) break;
      }
      if (record === "open" && !recorded) {
        const hourMs = Number.isFinite(this.nextHour())
          ? Math.max(this.nextHour(), floorHour(now))
          : floorHour(now);
        await this.closeHour(hourMs, true, "open");
        wrote = true;
      }
    } finally {
      if (wrote) await this.enqueue(() => this.rewrite());
    }
  }

  /** Writes one manifest (with a chain record when given); resolves to the manifest now at its key. */
  private async closeHour(hourMs: number, partial: boolean, chain?: ChainRecord): Promise<Manifest> {
    // Freeze the hour (unless partial) and take its objects inside the queue, so no append is half done.
    const entries = await this.enqueue(async () => {
      if (!partial) this.frozenThrough = Math.max(this.frozenThrough ?? hourMs, hourMs);
      return [...(this.pending.get(hourMs) ?? [])];
    });
    const sequence = this.head?.hourMs === hourMs ? this.head.sequence + 1 : 0;
    const key = manifestKey(this.prefix, this.host, hourMs, sequence);
    const previous = this.head ? { key: this.head.key, sha256: this.head.sha256 } : null;
    const wanted: WantedManifest = {
      host: this.host,
      hour: hourLabel(hourMs),
      sequence,
      partial,
      previous,
      chain,
    };
    // A retry after a crash sends the bytes saved before the first attempt, so "already in the
    // bucket" can be told apart from "someone else's" byte for byte.
    const saved = await readOutbox(this.stateDir);
    const reused = saved ? decodeManifest(saved) : "none";
    let body: Uint8Array;
    let written: Manifest;
    if (saved && typeof reused !== "string" && isWanted(reused, wanted)) {
      body = saved;
      written = reused;
    } else {
      const { objects, coverage, compacted, foreign } = manifestContent(entries);
      body = encodeManifest({
        host: this.host,
        hourMs,
        created: this.now(),
        previous,
        objects,
        ...(coverage ? { coverage } : {}),
        compacted,
        foreign,
        sequence,
        partial,
        ...(chain ? { chain } : {}),
        ...(this.run ? { run: this.run } : {}),
        ...(this.signingKey ? { signer: this.signingKey } : {}),
      });
      written = decodeManifest(body) as Manifest;
      await writeOutbox(this.stateDir, body);
    }
    let sha256 = sha256Hex(body);
    this.writing = key;
    const head: ChainHead = { key, sha256, hourMs, sequence, partial: false };
    try {
      if (!(await putIfAbsent(this.client, this.bucket, key, body))) {
        const adopted = await adoptManifest({
          client: this.client,
          bucket: this.bucket,
          key,
          body,
          wanted,
          signingKey: this.signingKey,
          logger: this.logger,
        }).catch((error: unknown) => {
          if (error instanceof ManifestError) this.conflict = { key, reason: error.message };
          throw error;
        });
        sha256 = adopted.sha256;
        written = adopted.manifest;
      }
      Object.assign(head, { sha256, partial: written.partial === true });
      await writeHead(this.stateDir, { bucket: this.bucket, prefix: this.prefix, host: this.host }, head);
      this.head = head;
    } finally {
      this.writing = null;
    }
    this.headManifest = written;
    this.conflict = null;
    // What the manifest does not list stays in the hour when it continues, else moves on.
    const listed = listedIds(written);
    const rest = entries.filter((e) => !listed.has(entryId(e)));
    if (rest.length > 0 && !head.partial) {
      await this.enqueue(() => this.append(rest.map((e) => ({ ...e, hourMs: hourMs + HOUR_MS }))));
      this.pending.delete(hourMs);
    } else {
      await this.enqueue(async () => {
        const left = (this.pending.get(hourMs) ?? []).filter((e) => !listed.has(entryId(e)));
        if (left.length > 0 && head.partial) this.pending.set(hourMs, left);
        else this.pending.delete(hourMs);
      });
    }
    this.logger.info(
      { manifest: key, objects: written.objects.length, sha256, partial: head.partial, chain: written.chain },
      written.chain === "open"
        ? "manifest chain opened: uploads of this run follow"
        : written.chain === "close"
          ? "manifest chain closed at the stop"
          : written.objects.length === 0
            ? "hour closed: empty manifest written"
            : "hour closed: manifest written",
    );
    return written;
  }

  private enqueue<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op);
    this.queue = run.catch(() => {});
    return run;
  }

  /** The hour a record made at `ms` goes to: its own, or the first open one when it is closed. */
  private openHour(ms: number): number {
    const hourMs = floorHour(ms);
    return this.frozenThrough !== null && hourMs <= this.frozenThrough
      ? this.frozenThrough + HOUR_MS
      : hourMs;
  }

  private add(r: JournalRecord): void {
    const { hourMs, ...entry } = r;
    const list = this.pending.get(hourMs);
    if (list) list.push(entry);
    else this.pending.set(hourMs, [entry]);
  }

  /** Appends and fsyncs; only then are the records part of the journal in memory. */
  private async append(records: JournalRecord[]): Promise<void> {
    if (!this.file) {
      if (this.closed) throw new ManifestError(ManifestErrorCode.CLOSED, "journal is closed");
      // A rewrite that failed part-way (EMFILE, ENOSPC) left no handle; the file on disk is the
      // old journal or the new one, both correct to append to.
      this.file = await open(join(this.stateDir, JOURNAL_FILE), "a");
    }
    await this.file.appendFile(records.map(encodeRecord).join(""));
    await this.file.sync();
    for (const r of records) this.add(r);
  }

  /** Replaces the journal file with what is pending (atomically), then reopens it for appends. */
  private async rewrite(): Promise<void> {
    const lines: string[] = [];
    for (const hourMs of [...this.pending.keys()].sort((a, b) => a - b))
      for (const entry of this.pending.get(hourMs) ?? []) lines.push(encodeRecord({ ...entry, hourMs }));
    await this.file?.close();
    this.file = null;
    const path = join(this.stateDir, JOURNAL_FILE);
    await writeFileDurably(path, lines.join(""));
    this.file = await open(path, "a");
  }
}
