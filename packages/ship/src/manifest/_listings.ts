import { checkChain, type LoadedChains, type StoredManifest } from "./_chain.ts";
import { HOUR_MS, hourLabel } from "./_keys.ts";
import type { Manifest, UploadedObject } from "./types.ts";
import type { VerifiedChain, VerifyFinding } from "./verify-types.ts";

/** What a manifest says a key holds: an uploaded object, or a compacted file (`entries`: its rows). */
export type ListedFile = Pick<
  UploadedObject,
  "key" | "sha256" | "size" | "entries" | "versionId" | "supersedes"
> & {
  /** When it was stored; the newest listing of a key is what the bucket must hold. */
  uploadedAt?: string;
  compacted?: true;
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
  /** End of the chain's newest manifest hour: later uploads are pending. */
  chainEnd: number;
}

/** What the downloaded manifests say about the verified hours. */
export interface ChainReading {
  /** What the links of the in-range manifests show. */
  findings: VerifyFinding[];
  chains: VerifiedChain[];
  windows: Map<string, Window>;
  /** Every key a downloaded manifest lists, by its newest listing. */
  latest: Map<string, Listing>;
  /** Keys the in-range manifests list: each is downloaded and hashed. */
  toCheck: Set<string>;
  /** Manifests in range. */
  manifests: number;
  /** An in-range manifest links to a manifest that was not downloaded. */
  linksOlder: boolean;
}

/**
 * Until when a chain's newest manifest covers uploads: the end of its hour, or, for a partial
 * manifest written at a stop, when it was written (uploads after it are pending, not extra).
 */
function coveredUntil(newest: StoredManifest): number {
  const m = newest.manifest;
  const created = typeof m === "string" || m.partial !== true ? Number.NaN : Date.parse(m.created);
  return Number.isNaN(created) ? newest.hourMs + HOUR_MS : Math.min(created, newest.hourMs + HOUR_MS);
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
        compacted: true,
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
        chainEnd: coveredUntil(newest),
      });
    const olderKeys = new Set(older.map((k) => k.key));
    for (const m of chain) {
      if (typeof m.manifest === "string") continue;
      const previous = m.manifest.previous?.key;
      if (inRange(m.hourMs) && previous !== undefined && olderKeys.has(previous)) reading.linksOlder = true;
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
