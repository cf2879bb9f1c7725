import type { S3Client } from "@aws-sdk/client-s3";
import { decodeManifest } from "./_format.ts";
import { HOUR_MS, hourLabel, joinKey, MANIFEST_DIR, manifestFolder, parseManifestKey } from "./_keys.ts";
import { mapPool } from "./_pool.ts";
import { getBytes, listObjects, sha256Hex } from "./_s3.ts";
import type { Manifest } from "./types.ts";
import type { VerifyFinding } from "./verify-types.ts";

/** A manifest key as listed: its host and hour, before anything is downloaded. */
export interface ListedManifest {
  key: string;
  host: string;
  hourMs: number;
  /** Place within the hour: 0, or 1, 2… after a partial manifest written at a stop. */
  sequence: number;
  /** When the store says it was stored (its clock, not the sidecar's). */
  lastModified: number;
}

/** A manifest as found in the bucket: its key, the hash of its exact bytes and what they say. */
export interface StoredManifest extends ListedManifest {
  sha256: string;
  /** The parsed manifest, or why the bytes are not one. */
  manifest: Manifest | string;
}

/** The manifests a verification downloaded, and the older ones it could do without. */
export interface LoadedChains {
  /** By host, oldest first. */
  chains: Map<string, StoredManifest[]>;
  /** By host, oldest first: listed but not downloaded, all older than the host's chain above. */
  older: Map<string, ListedManifest[]>;
}

/** Manifests are small; fetch a few at a time. */
const MANIFEST_FETCHES = 8;

/** Items grouped by host, each group oldest first. */
function byHost<T extends ListedManifest>(items: Iterable<T>): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.host);
    if (group) group.push(item);
    else groups.set(item.host, [item]);
  }
  for (const group of groups.values()) group.sort((a, b) => a.hourMs - b.hourMs || a.sequence - b.sequence);
  return groups;
}

/** Every manifest key under `_manifests/` (of one host, or all), grouped by host, oldest first. */
export async function listChains(
  client: S3Client,
  bucket: string,
  prefix: string,
  host: string | undefined,
  findings: VerifyFinding[],
): Promise<Map<string, ListedManifest[]>> {
  const folder = host === undefined ? joinKey(prefix, `${MANIFEST_DIR}/`) : manifestFolder(prefix, host);
  const keys: ListedManifest[] = [];
  for (const o of await listObjects(client, bucket, folder)) {
    const parsed = parseManifestKey(prefix, o.key);
    if (parsed) keys.push({ key: o.key, ...parsed, lastModified: o.lastModified.getTime() });
    else findings.push({ kind: "extra", key: o.key, reason: "in _manifests/ but not named like a manifest" });
  }
  return byHost(keys);
}

/** Downloads and parses manifests; one deleted since the listing is left out, as if never listed. */
async function fetchManifests(
  client: S3Client,
  bucket: string,
  listed: readonly ListedManifest[],
): Promise<StoredManifest[]> {
  const loaded = await mapPool(listed, MANIFEST_FETCHES, async (k): Promise<StoredManifest | null> => {
    const bytes = await getBytes(client, bucket, k.key);
    if (bytes === null) return null;
    return { ...k, sha256: sha256Hex(bytes), manifest: decodeManifest(bytes) };
  });
  return loaded.filter((m) => m !== null);
}

/**
 * Downloads, per host, the manifests from the one before the first at or after `fromHour` on:
 * the first link is checked against that predecessor's bytes, and later manifests hold the links
 * to check and the newest listings. The older ones take no part in a link check of the range
 * (verify reads them with `loadOlder` when something else may depend on them); with `fromHour`
 * -Infinity everything is downloaded.
 */
export async function loadChains(
  client: S3Client,
  bucket: string,
  listing: Map<string, ListedManifest[]>,
  fromHour: number,
): Promise<LoadedChains> {
  const wanted: ListedManifest[] = [];
  const older = new Map<string, ListedManifest[]>();
  for (const [host, keys] of listing) {
    const firstInRange = keys.findIndex((k) => k.hourMs >= fromHour);
    const start = Math.max(0, (firstInRange === -1 ? keys.length : firstInRange) - 1);
    wanted.push(...keys.slice(start));
    if (start > 0) older.set(host, keys.slice(0, start));
  }
  const chains = byHost(await fetchManifests(client, bucket, wanted));
  // A predecessor deleted since the listing: the one before it takes its place, as in a full load.
  for (const [host, rest] of older) {
    let chain = chains.get(host);
    while (rest.length > 0 && (chain === undefined || (chain[0] as StoredManifest).hourMs >= fromHour)) {
      const [m] = await fetchManifests(client, bucket, [rest.pop() as ListedManifest]);
      if (!m) continue;
      chain = [m, ...(chain ?? [])];
      chains.set(host, chain);
    }
    if (rest.length === 0) older.delete(host);
  }
  return { chains, older };
}

/** Downloads what `loadChains` left out: the chains as a load from the start has them. */
export async function loadOlder(
  client: S3Client,
  bucket: string,
  loaded: LoadedChains,
): Promise<LoadedChains> {
  const older = await fetchManifests(client, bucket, [...loaded.older.values()].flat());
  const all = [...older, ...[...loaded.chains.values()].flat()];
  return { chains: byHost(all), older: new Map() };
}

const short = (sha: string): string => sha.slice(0, 12);

/**
 * The links of one host's chain, for the manifests `inRange` selects and the one right after
 * them (which vouches for the last): each must name the manifest of the hour before by key and
 * by the SHA-256 of its bytes. `older` are the host's
 * manifests listed before `chain` but not downloaded: a link to one of them is not a gap.
 */
export function checkChain(
  host: string,
  chain: StoredManifest[],
  inRange: (hourMs: number) => boolean,
  older: readonly ListedManifest[] = [],
): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  const byKey = new Set([...older, ...chain].map((m) => m.key));
  chain.forEach((m, i) => {
    const before = chain[i - 1];
    // The manifest right after the verified hours (with --to) is what vouches for the last of
    // them: its link is checked too, its contents are not.
    const vouching = !inRange(m.hourMs) && before !== undefined && inRange(before.hourMs);
    if (!inRange(m.hourMs) && !vouching) return;
    findings.push(...linkFindings(host, m, before, vouching, byKey));
  });
  findings.push(...forkFindings(chain, inRange));
  return findings;
}

/** One manifest's findings: readable, where its key says, linked to the one `before` it (if any). */
function linkFindings(
  host: string,
  m: StoredManifest,
  before: StoredManifest | undefined,
  vouching: boolean,
  byKey: ReadonlySet<string>,
): VerifyFinding[] {
  const stored = m.manifest;
  if (typeof stored === "string")
    return [
      {
        kind: "broken-chain",
        key: m.key,
        manifest: m.key,
        reason:
          vouching && before
            ? `not a readable manifest: ${stored}; it is what vouches for ${before.key}, the last verified one`
            : `not a readable manifest: ${stored}`,
      },
    ];
  const findings: VerifyFinding[] = [];
  if (
    !vouching &&
    (stored.host !== host || stored.hour !== hourLabel(m.hourMs) || (stored.sequence ?? 0) !== m.sequence)
  )
    findings.push({
      kind: "reordered",
      key: m.key,
      manifest: m.key,
      reason: `holds the manifest of host ${stored.host} hour ${stored.hour}${stored.sequence ? ` part ${stored.sequence}` : ""}: contents moved from another key`,
    });
  const prev = stored.previous;
  if (!before) {
    const first = oldestLinkFinding(m, prev, byKey);
    return first ? [...findings, first] : findings;
  }
  const link = previousLinkFinding(m, before, prev, byKey);
  if (link) findings.push(link);
  // A missing link (a gap) is reported already; hours missing after the verified ones are outside the range.
  if (link?.kind !== "gap") {
    const order = sequenceFinding(m, before, vouching);
    if (order) findings.push(order);
  }
  return findings;
}

/** The oldest manifest's link: to nothing, to one listed before it (reordered), or to one gone (expired?). */
function oldestLinkFinding(
  m: StoredManifest,
  prev: { key: string } | null,
  byKey: ReadonlySet<string>,
): VerifyFinding | undefined {
  if (prev && byKey.has(prev.key))
    return {
      kind: "reordered",
      key: m.key,
      manifest: m.key,
      reason: `the oldest manifest links to ${prev.key}, which is not before it`,
    };
  if (prev)
    return {
      kind: "gap",
      key: prev.key,
      manifest: m.key,
      reason: `the oldest manifest links to ${prev.key}, which is missing: earlier manifests were removed (if they expired on purpose, verify with a later --from)`,
    };
  return undefined;
}

/** `m`'s link to the manifest before it: none, the right one by key and hash, a missing one (gap), or another. */
function previousLinkFinding(
  m: StoredManifest,
  before: StoredManifest,
  prev: { key: string; sha256: string } | null,
  byKey: ReadonlySet<string>,
): VerifyFinding | undefined {
  if (!prev)
    return {
      kind: "broken-chain",
      key: m.key,
      manifest: m.key,
      reason: `starts a new chain (previous is null) after ${before.key}`,
    };
  if (prev.key === before.key)
    return prev.sha256 !== before.sha256
      ? {
          kind: "broken-chain",
          key: before.key,
          manifest: m.key,
          reason: `${m.key} names previous sha256 ${short(prev.sha256)}…, but ${before.key} hashes to ${short(before.sha256)}…: one of the two was rewritten`,
        }
      : undefined;
  if (!byKey.has(prev.key))
    return {
      kind: "gap",
      key: prev.key,
      manifest: m.key,
      reason: `${m.key} links to ${prev.key}, which is missing: a manifest was removed`,
    };
  return {
    kind: "reordered",
    key: m.key,
    manifest: m.key,
    reason: `links to ${prev.key}, but the manifest before it is ${before.key}`,
  };
}

/**
 * Whether `m` is the next of `before` in time: the next hour's first manifest, or after a
 * partial one (a stop) the same hour's next sequence. Not checked for the vouching manifest.
 */
function sequenceFinding(
  m: StoredManifest,
  before: StoredManifest,
  vouching: boolean,
): VerifyFinding | undefined {
  const beforePartial = typeof before.manifest !== "string" && before.manifest.partial === true;
  const follows = beforePartial
    ? m.hourMs === before.hourMs && m.sequence === before.sequence + 1
    : m.hourMs === before.hourMs + HOUR_MS && m.sequence === 0;
  if (vouching || follows) return undefined;
  if (beforePartial)
    return {
      kind: "gap",
      key: m.key,
      manifest: m.key,
      reason: `${before.key} was written at a stop (partial), but the rest of its hour (${hourLabel(before.hourMs)}.${before.sequence + 1}) is not before ${m.key}: removed`,
    };
  if (m.sequence > 0)
    return {
      kind: "reordered",
      key: m.key,
      manifest: m.key,
      reason: `continues hour ${hourLabel(m.hourMs)} after ${before.key}, which is not a partial manifest of that hour`,
    };
  const missingFrom = hourLabel(before.hourMs + HOUR_MS);
  const missingTo = hourLabel(m.hourMs - HOUR_MS);
  return {
    kind: "gap",
    key: m.key,
    manifest: m.key,
    reason: `no manifest for ${missingFrom === missingTo ? missingFrom : `${missingFrom} … ${missingTo}`} before it: removed`,
  };
}

/** A manifest claimed as previous by two or more (one of them in range): a fork. */
function forkFindings(chain: StoredManifest[], inRange: (hourMs: number) => boolean): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  const claims = new Map<string, StoredManifest[]>();
  for (const m of chain) {
    if (typeof m.manifest === "string" || m.manifest.previous === null) continue;
    const list = claims.get(m.manifest.previous.key) ?? [];
    list.push(m);
    claims.set(m.manifest.previous.key, list);
  }
  for (const [prevKey, claimers] of claims) {
    if (claimers.length < 2 || !claimers.some((m) => inRange(m.hourMs))) continue;
    findings.push({
      kind: "fork",
      key: prevKey,
      reason: `claimed as previous by ${claimers.length} manifests: ${claimers.map((m) => m.key).join(", ")}`,
    });
  }
  return findings;
}
