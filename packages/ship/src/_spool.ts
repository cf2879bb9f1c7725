import { createHash } from "node:crypto";
import { open, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Compression } from "./compression.ts";
import { ensureDir, writeFileDurably } from "./durable-write.ts";
import { SinkError, SinkErrorCode } from "./errors.ts";
import type { SourceRange } from "./types.ts";

/** What is needed to upload a spooled object after a restart, and to describe it once uploaded. */
export interface SpoolEntryMeta {
  /** The full object key in the bucket. */
  key: string;
  /** SHA-256 of the body, hex. */
  sha256: string;
  /** Body bytes. */
  size: number;
  /** Shipped records in the body. */
  entries: number;
  range: SourceRange;
  contentEncoding: Compression;
}

export interface SpoolEntry extends SpoolEntryMeta {
  /** The spool file. */
  readonly path: string;
  /** Bytes on disk (header + body): what counts against the spool's limit. */
  readonly diskBytes: number;
  /** When it was spooled (ms since the epoch): the drain goes oldest first. */
  readonly spooledAt: number;
}

export interface SpoolLogger {
  warn(obj: object, msg: string): void;
}

/** Spool files end in this; temp files carry `.tmp-` after it and are removed at open. */
const SPOOL_SUFFIX = ".spool";
/** First line of a spool file: a version tag, then the JSON header on the second line. */
const MAGIC = "auditpipe-spool 1\n";
/** A header larger than this is not ours (the header is a key, a hash and a range). */
const MAX_HEADER_BYTES = 64 * 1024;

function spoolError(action: string, dir: string, error: unknown): SinkError {
  const code = (error as { code?: unknown } | null)?.code;
  const reason = typeof code === "string" ? code : error instanceof Error ? error.message : String(error);
  return new SinkError(
    SinkErrorCode.SPOOL,
    `could not ${action} in the spool directory ${dir} (${reason}): check free space and permissions; ` +
      "the batch is not acknowledged, so the source keeps it and writes it again",
    { retryable: true, storeCode: typeof code === "string" ? code : undefined },
  );
}

/**
 * The durable spool: each compressed object is written here (temp file, fsync, rename, fsync of
 * the directory) before it is uploaded, and deleted only after the store acknowledged it. One file
 * per object key, named after the key, so a batch written again after a crash finds its spooled
 * copy instead of adding a second one. The spool never drops anything: when it holds `maxBytes`,
 * put() waits until an upload frees room (the source then stops reading; PostgreSQL's own files
 * hold the rest).
 */
export class Spool {
  readonly dir: string;
  readonly maxBytes: number;
  private readonly entries = new Map<string, SpoolEntry>(); // by key
  private readonly putting = new Map<string, Promise<SpoolEntry>>();
  private used = 0;
  private waiters: (() => void)[] = [];
  private closed = false;

  private constructor(dir: string, maxBytes: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
  }

  /**
   * Opens (creating) a spool directory: removes half-written temp files, indexes the spooled
   * objects, and sets aside (renames to `.corrupt`) a file whose header or length is wrong.
   */
  static async open(dir: string, maxBytes: number, logger?: SpoolLogger): Promise<Spool> {
    const spool = new Spool(dir, maxBytes);
    try {
      await ensureDir(dir);
      for (const name of await readdir(dir)) {
        const path = join(dir, name);
        if (name.includes(`${SPOOL_SUFFIX}.tmp-`)) {
          await rm(path, { force: true }); // a write cut short by a crash: never acknowledged
          continue;
        }
        if (!name.endsWith(SPOOL_SUFFIX)) continue;
        const entry = await readHeader(path);
        if (!entry) {
          logger?.warn(
            { file: path },
            "spool file is damaged; set aside as .corrupt (its range is re-read by the source)",
          );
          await rename(path, `${path}.corrupt`).catch(() => undefined);
          continue;
        }
        spool.entries.set(entry.key, entry);
        spool.used += entry.diskBytes;
      }
    } catch (error) {
      throw spoolError("open the spool", dir, error);
    }
    return spool;
  }

  /** Bytes the spool holds on disk. */
  bytes(): number {
    return this.used;
  }

  /** Objects the spool holds. */
  files(): number {
    return this.entries.size;
  }

  get(key: string): SpoolEntry | undefined {
    return this.entries.get(key);
  }

  /** Everything spooled, oldest first. */
  list(): SpoolEntry[] {
    return [...this.entries.values()].sort((a, b) => a.spooledAt - b.spooledAt || (a.key < b.key ? -1 : 1));
  }

  /**
   * Spools a body under its key and returns the entry; if the key is already spooled (a replay of
   * the same range), the existing file is kept and returned. Waits while the spool is full; one
   * object is always let in when the spool is empty, however large, or nothing could move.
   */
  async put(meta: SpoolEntryMeta, body: Uint8Array): Promise<SpoolEntry> {
    const existing = this.entries.get(meta.key) ?? this.putting.get(meta.key);
    if (existing) return existing;
    const header = Buffer.from(`${MAGIC}${JSON.stringify({ ...meta, spooledAt: Date.now() })}\n`, "utf8");
    const diskBytes = header.length + body.byteLength;
    const pending = this.write(meta, header, body, diskBytes);
    this.putting.set(meta.key, pending);
    try {
      return await pending;
    } finally {
      this.putting.delete(meta.key);
    }
  }

  /** The body of a spooled object, checked against its SHA-256. */
  async read(entry: SpoolEntry): Promise<Buffer> {
    let file: Buffer;
    try {
      const handle = await open(entry.path, "r");
      try {
        file = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (error) {
      throw spoolError("read a spooled object", this.dir, error);
    }
    const body = file.subarray(file.length - entry.size);
    if (createHash("sha256").update(body).digest("hex") !== entry.sha256) {
      await this.quarantine(entry.key);
      throw new SinkError(
        SinkErrorCode.SPOOL,
        `spooled object ${entry.path} does not match its checksum (disk damage?); it is set aside and its range is re-read by the source`,
      );
    }
    return body;
  }

  /** Deletes a spooled object (after the store acknowledged it) and lets a waiting put() in. */
  async remove(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.used -= entry.diskBytes;
    // No fsync: if the delete is lost in a crash, the object is uploaded again to the same key.
    await rm(entry.path, { force: true });
    this.wakeWaiters();
  }

  /** Sets a damaged file aside so it stops blocking the spool. */
  async quarantine(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.used -= entry.diskBytes;
    await rename(entry.path, `${entry.path}.corrupt`).catch(() => undefined);
    this.wakeWaiters();
  }

  /** Wakes every waiting put() with a CLOSED error. */
  close(): void {
    this.closed = true;
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private async write(
    meta: SpoolEntryMeta,
    header: Buffer,
    body: Uint8Array,
    diskBytes: number,
  ): Promise<SpoolEntry> {
    // Backpressure: wait for room; the reservation is taken in the same tick as the check.
    while (this.used > 0 && this.used + diskBytes > this.maxBytes) {
      if (this.closed)
        throw new SinkError(SinkErrorCode.CLOSED, "the sink was closed while waiting for spool space");
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.closed)
      throw new SinkError(SinkErrorCode.CLOSED, "the sink was closed while waiting for spool space");
    this.used += diskBytes;
    const path = join(this.dir, spoolFileName(meta.key));
    try {
      // Its temp file is `<path>.tmp-…`, which open() removes after a crash.
      await writeFileDurably(path, [header, body]);
    } catch (error) {
      this.used -= diskBytes;
      this.wakeWaiters();
      throw spoolError("write a batch", this.dir, error);
    }
    const spooledAt = (JSON.parse(header.subarray(MAGIC.length).toString("utf8")) as { spooledAt: number })
      .spooledAt;
    const entry: SpoolEntry = { ...meta, path, diskBytes, spooledAt };
    this.entries.set(meta.key, entry);
    return entry;
  }
}

/**
 * The spool file of a key: a short hash of the whole key (keys of different partitions or hosts
 * share a base name) and the key's base name, for people looking at the directory.
 */
export function spoolFileName(key: string): string {
  const hash = createHash("sha256").update(key).digest("hex").slice(0, 16);
  return `${hash}-${basename(key)}${SPOOL_SUFFIX}`;
}

async function readHeader(path: string): Promise<SpoolEntry | undefined> {
  const handle = await open(path, "r");
  try {
    const { size } = await stat(path);
    const buffer = Buffer.alloc(Math.min(size, MAX_HEADER_BYTES));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const head = buffer.subarray(0, bytesRead);
    if (!head.subarray(0, MAGIC.length).equals(Buffer.from(MAGIC))) return undefined;
    const end = head.indexOf(0x0a, MAGIC.length);
    if (end < 0) return undefined;
    const meta = JSON.parse(head.subarray(MAGIC.length, end).toString("utf8")) as SpoolEntryMeta & {
      spooledAt: number;
    };
    if (typeof meta.key !== "string" || typeof meta.size !== "number" || end + 1 + meta.size !== size)
      return undefined;
    return { ...meta, path, diskBytes: size };
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}
