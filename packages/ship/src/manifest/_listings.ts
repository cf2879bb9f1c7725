import { checkChain, type LoadedChains, type StoredManifest } from "./_chain.ts";
import { HOUR_MS, hourLabel } from "./_keys.ts";
import type { CompactedFile, Manifest, UploadedObject } from "./types.ts";
import type { VerifiedChain, VerifyFinding } from "./verify-types.ts";

/** What a manifest says a key holds: an uploaded object, or a compacted file (`entries`: its rows). */
export type ListedFile = Pick<
  UploadedObject,
  "key" | "sha256" | "size" | "entries" | "versionId" | "supersedes"
> & {
  /** When it was stored; the newest listing of a key is what the bucket must hold. */
  uploadedAt?: string;
  compacted?: true;
  /** For a compacted file: the manifest's whole entry (sources, rows digest), for checkCompacted. */
  file?: CompactedFile;
};

/** Where a key was last listed: what the bucket must hold now. */
export interface Listing {
  object: ListedFile;
  manifest: string;
  host: string;
}

/** The window of upload times one host's verified manifests cover. */
export interface Window {
  start: number;
  end: number;
  /** Until when the chain's newest manifest covers uploads (its hour's end, or when a partial one was written). */
  chainEnd: number;
  /**
   * `chainEnd` is in the store's clock, exact: the newest manifest is an open record, stored
   * before any upload of its run was sent, so nothing stored before it is that run's.
   */
  exact: boolean;
  /**
   * The newest manifest is a trusted `close` record (version 1: a partial manifest, which only a
   * stop wrote): the sidecar stopped cleanly, and nothing stored under its keys since is its own.
   */
  closed: boolean;
  /** The chain's newest manifest. */
  newest: string;
}

/** What the downloaded manifests say about the verified hours. */
export interface ChainReading {
  /** What the links of the in-range manifests show. */
  findings: VerifyFinding[];
  chains: VerifiedChain[];
  windows: Map<string, Window>;
  /** Every key a downloaded manifest lists, by its newest listing. */
  latest: Map<string, Listing>;
  /** Keys a trusted manifest names as found under its host's keys, not written by it: the manifest. */
  foreign: Map<string, string>;
  /** Keys the in-range manifests list: each is downloaded and hashed. */
  toCheck: Set<string>;
  /** Manifests in range. */
  manifests: number;
  /** An in-range manifest links to a manifest that was not downloaded. */
  linksOlder: boolean;
}

/**
 * Until when a chain's newest manifest covers uploads: the end of its hour, or, for a partial
 * manifest (a stop, a start, an announced rewrite), when it was written.
 */
function coveredUntil(
  newest: StoredManifest,
  untrusted: ReadonlySet<string>,
): { chainEnd: number; exact: boolean } {
  const m = newest.manifest;
  if (typeof m !== "string" && m.chain === "open" && !untrusted.has(newest.key))
    return { chainEnd: newest.lastModified, exact: true };
  const created = typeof m === "string" || m.partial !== true ? Number.NaN : Date.parse(m.created);
  const chainEnd = Number.isNaN(created)
    ? newest.hourMs + HOUR_MS
    : Math.min(created, newest.hourMs + HOUR_MS);
  return { chainEnd, exact: false };
}

/** A clean stop's manifest: a `close` record, or in version 1 (no records) a partial manifest. */
function closes(m: StoredManifest): boolean {
  const stored = m.manifest;
  if (typeof stored === "string") return false;
  return stored.version === 1 ? stored.partial === true : stored.chain === "close";
}

/** Every key a manifest lists: its objects, then its compacted files (version 2). */
function listedFiles(m: Manifest): ListedFile[] {
  return [
    ...m.objects,
    ...(m.compacted ?? []).map(
      (f): ListedFile => ({
        key: f.key,
        sha256: f.sha256,
        size: f.size,
        entries: f.rows,
        ...(f.versionId === undefined ? {} : { versionId: f.versionId }),
        ...(f.supersedes === undefined ? {} : { supersedes: f.supersedes }),
        compacted: true,
        file: f,
      }),
    ),
  ];
}

/** Checks the links of every chain and collects what the manifests list, for the hours `inRange` selects. */
export function readChains(
  loaded: LoadedChains,
  inRange: (hourMs: number) => boolean,
  /** Manifests whose signature is not a trusted one: their links count, their listings do not. */
  untrusted: ReadonlySet<string> = new Set(),
): ChainReading {
  const reading: ChainReading = {
    findings: [],
    chains: [],
    windows: new Map(),
    latest: new Map(),
    foreign: new Map(),
    toCheck: new Set(),
    manifests: 0,
    linksOlder: false,
  };
  const { latest, toCheck } = reading;
  for (const [host, chain] of [...loaded.chains].sort(([a], [b]) => a.localeCompare(b))) {
    const older = loaded.older.get(host) ?? [];
    reading.findings.push(...checkChain(host, chain, inRange, older));
    const selected = chain.filter((m) => inRange(m.hourMs));
    reading.manifests += selected.length;
    const first = selected[0];
    const last = selected.at(-1);
    const newest = chain.at(-1) as StoredManifest;
    reading.chains.push({
      host,
      manifests: selected.length,
      first: first ? hourLabel(first.hourMs) : null,
      last: last ? hourLabel(last.hourMs) : null,
      head: newest.key,
    });
    if (first && last)
      reading.windows.set(host, {
        start: first.hourMs,
        end: last.hourMs + HOUR_MS,
        ...coveredUntil(newest, untrusted),
        closed: closes(newest) && !untrusted.has(newest.key),
        newest: newest.key,
      });
    const olderKeys = new Set(older.map((k) => k.key));
    for (const m of chain) {
      if (typeof m.manifest === "string") continue;
      const previous = m.manifest.previous?.key;
      if (inRange(m.hourMs) && previous !== undefined && olderKeys.has(previous)) reading.linksOlder = true;
      for (const f of untrusted.has(m.key) ? [] : (m.manifest.foreign ?? []))
        reading.foreign.set(f.key, m.key);
      for (const object of untrusted.has(m.key) ? [] : listedFiles(m.manifest)) {
        // The newest listing (a replay that rewrote the key) is what the bucket must hold: by
        // upload time for objects, by chain order (oldest first here) for compacted files.
        const seen = latest.get(object.key);
        if (
          !seen ||
          Date.parse(seen.object.uploadedAt ?? "") <= Date.parse(object.uploadedAt ?? "") ||
          object.compacted
        )
          latest.set(object.key, { object, manifest: m.key, host });
        if (inRange(m.hourMs)) toCheck.add(object.key);
      }
    }
  }
  return reading;
}
