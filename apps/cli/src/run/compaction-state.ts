/**
 * What the sidecar's compaction keeps in `<state>/compaction/`, whichever way the files are made
 * (its child, or `auditpipe compact` elsewhere, adopted): `journaled.json`, the SHA-256 journaled
 * per host-hour (written after the manifest journal's fsync), and `announced.json`, the SHA-256s
 * of rebuilt files announced per hour and not yet confirmed by their own listing.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type CompactedFile, writeFileDurably } from "@auditpipe/ship";

/** What the sidecar journals of a compaction record (keys relative to the archive root). */
export interface RecordView {
  hour: string;
  key: string;
  sha256: string;
  size: number;
  rows: number;
  rowsDigest: string;
  sources: { key: string; sha256: string }[];
}

const joinKey = (prefix: string, key: string): string => (prefix === "" ? key : `${prefix}/${key}`);

/** A compaction record (keys relative to the archive root) as the manifest lists it (keys with the prefix). */
export function toCompactedFile(prefix: string, r: RecordView): CompactedFile {
  return {
    key: joinKey(prefix, r.key),
    sha256: r.sha256,
    size: r.size,
    rows: r.rows,
    rowsDigest: r.rowsDigest,
    sources: r.sources.map((s) => ({ key: joinKey(prefix, s.key), sha256: s.sha256 })),
    hour: r.hour,
  };
}

/** The sidecar's compaction state files, each written durably (temp, fsync, rename). */
export interface CompactionState {
  journaled(): Promise<Record<string, string>>;
  /** SHA-256s of files announced per hour and not confirmed yet by their own listing. */
  announced(): Promise<Record<string, string[]>>;
  /** Adopt mode: the entity tag of each compaction record settled, by key (read again only when it changes). */
  seen(): Promise<Record<string, string>>;
  writeJournaled(value: Record<string, string>): Promise<void>;
  writeAnnounced(value: Record<string, string[]>): Promise<void>;
  writeSeen(value: Record<string, string>): Promise<void>;
}

export function compactionState(stateDir: string): CompactionState {
  const dir = join(stateDir, "compaction");
  const journaledPath = join(dir, "journaled.json");
  const announcedPath = join(dir, "announced.json");
  const seenPath = join(dir, "adopt-seen.json");
  const read = async <T>(path: string): Promise<Record<string, T>> => {
    try {
      return JSON.parse(await readFile(path, "utf8")) as Record<string, T>;
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return {};
      throw error;
    }
  };
  const write = async (path: string, value: object): Promise<void> => {
    await mkdir(dir, { recursive: true });
    await writeFileDurably(path, `${JSON.stringify(value, null, 2)}\n`);
  };
  return {
    journaled: () => read<string>(journaledPath),
    announced: () => read<string[]>(announcedPath),
    seen: () => read<string>(seenPath),
    writeJournaled: (value) => write(journaledPath, value),
    writeAnnounced: (value) => write(announcedPath, value),
    writeSeen: (value) => write(seenPath, value),
  };
}
