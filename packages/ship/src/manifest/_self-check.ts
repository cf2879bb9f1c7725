import type { S3Client } from "@aws-sdk/client-s3";
import { dataObjectHost, HOUR_MS, joinKey, manifestFolder, parseManifestKey } from "./_keys.ts";
import { hashObject, type ListedObject, listObjects } from "./_s3.ts";
import type { UploadedObject } from "./types.ts";

/**
 * What the sidecar's check of its own recent uploads can find, before any manifest lists them:
 * - `foreign`: an object under this host's keys, stored in the open hours, not in the journal;
 * - `altered`: a journaled object whose bytes in the bucket are not the ones uploaded;
 * - `missing`: a journaled object no longer in the bucket;
 * - `manifest`: a manifest for an hour this sidecar has not closed yet (written by someone else).
 */
export interface SelfCheckFinding {
  kind: "foreign" | "altered" | "missing" | "manifest";
  key: string;
  reason: string;
  /** `foreign`: when the store says it was stored (ISO 8601). */
  storedAt?: string;
}

export const SELF_CHECK_KINDS: readonly SelfCheckFinding["kind"][] = [
  "foreign",
  "altered",
  "missing",
  "manifest",
];

export interface SelfCheckInput {
  client: S3Client;
  bucket: string;
  prefix: string;
  host: string;
  now: number;
  /** Uploads since this instant (store time) must all be in `journaled`. */
  since: number;
  /**
   * What this sidecar uploaded in the open hours (and the last closed manifest), by key: the
   * newest upload. Asked after the listing, once the journal's appends are done, so an object
   * whose upload was acknowledged just before the listing is in it.
   */
  journaled: () => Promise<ReadonlyMap<string, UploadedObject>>;
  /** Journaled keys before the listing: their partitions are listed, and each must be found. */
  recentKeys: ReadonlySet<string>;
  /** Keys whose body was hashed and matched, by ETag: not downloaded again while the ETag stays. */
  verified: Map<string, string>;
  /**
   * The newest manifest this sidecar wrote: hour and sequence; later ones are not its own. Asked
   * after the listing, so a manifest written while it ran counts as written.
   */
  head: () => { hourMs: number; sequence: number } | null;
  /** The key of a manifest this sidecar is writing right now, if any. */
  writing: () => string | null;
  /**
   * What the given manifests (this host's, up to the head, of the hours the check covers) list,
   * by key: an earlier run's uploads of the open hour are in its manifests, not in the journal.
   */
  listedIn: (manifests: readonly ListedObject[]) => Promise<ReadonlyMap<string, UploadedObject>>;
  /** Keys being uploaded now: stored, perhaps, and not journaled yet. Never foreign this time. */
  uploading: () => ReadonlySet<string>;
}

/** Hours before the upload window whose entry partitions are listed too (entries lag their upload). */
const LAG_HOURS = 2;
/** At most this many hours of partitions a check (an hour left open for long, by a conflict say). */
const MAX_HOURS = 48;

/**
 * Entry partitions (`dt=…/hour=…/`) listed: the hours of the upload window, the two before it and
 * the next (entries lag their upload; clocks differ), `dt=undated`, and those of the objects this
 * sidecar uploaded in the window (a replay of old data lands in an old partition). A few LISTs a
 * check, however large the archive.
 */
function partitions(prefix: string, input: SelfCheckInput): string[] {
  const parts = new Set<string>(["dt=undated/"]);
  const from = Math.max(
    Math.floor(input.since / HOUR_MS) * HOUR_MS - LAG_HOURS * HOUR_MS,
    Math.floor(input.now / HOUR_MS) * HOUR_MS - MAX_HOURS * HOUR_MS,
  );
  for (let t = from; t <= input.now + HOUR_MS; t += HOUR_MS) {
    const iso = new Date(t).toISOString();
    parts.add(`dt=${iso.slice(0, 10)}/hour=${iso.slice(11, 13)}/`);
  }
  for (const key of input.recentKeys) {
    const m = /(?:^|\/)(dt=[^/]+\/hour=[^/]+\/)/.exec(key.slice(prefix.length));
    if (m?.[1]) parts.add(m[1]);
  }
  return [...parts].sort().map((p) => joinKey(prefix, p));
}

/**
 * Compares this host's objects stored since `since` with what the journal says was uploaded:
 * a foreign, altered or missing object is found within one check, not at the next manifest.
 * Reads only the partitions of the recent hours (and of its own recent uploads): an object
 * planted in an older partition is left to `verify` (`extra`).
 */
export async function checkOwnUploads(input: SelfCheckInput): Promise<SelfCheckFinding[]> {
  const { client, bucket, prefix, host, verified } = input;
  const findings: SelfCheckFinding[] = [];
  const stored: ListedObject[] = [];
  for (const p of partitions(prefix, input)) stored.push(...(await listObjects(client, bucket, p)));
  const manifests = await listObjects(client, bucket, manifestFolder(prefix, host));
  // Read once both listings are done: a manifest written meanwhile is this sidecar's.
  const head = input.head();
  const writing = input.writing();
  const isAfterHead = (m: { hourMs: number; sequence: number }): boolean =>
    head === null || m.hourMs > head.hourMs || (m.hourMs === head.hourMs && m.sequence > head.sequence);
  const recentHours = Math.floor(input.since / HOUR_MS) * HOUR_MS - HOUR_MS;
  const own = manifests.filter((o) => {
    const m = parseManifestKey(prefix, o.key);
    return m !== null && m.host === host && !isAfterHead(m) && m.hourMs >= recentHours;
  });
  const listed = await input.listedIn(own);
  // Asked before the journal: an upload that ends in between is journaled by then.
  const uploading = input.uploading();
  const journaledNow = await input.journaled();
  const journaled = new Map(listed);
  for (const [key, o] of journaledNow) {
    const seenAt = journaled.get(key);
    if (!seenAt || Date.parse(seenAt.uploadedAt) <= Date.parse(o.uploadedAt)) journaled.set(key, o);
  }
  const seen = new Set<string>();
  for (const o of stored) {
    if (dataObjectHost(prefix, o.key) !== host) continue;
    seen.add(o.key);
    const mine = journaled.get(o.key);
    if (!mine) {
      if (o.lastModified.getTime() >= input.since && !uploading.has(o.key))
        findings.push({
          kind: "foreign",
          key: o.key,
          reason: `stored ${o.lastModified.toISOString()} under this sidecar's keys, not uploaded by it`,
          storedAt: o.lastModified.toISOString(),
        });
      continue;
    }
    if (verified.get(o.key) === `${o.etag}/${mine.sha256}`) continue;
    const hashed = await hashObject(client, bucket, o.key);
    if (!hashed) continue; // deleted since the listing: the next check says missing
    // An announced rewrite (`supersedes`) may not be stored yet: the bytes it replaces are still its own.
    if (
      hashed.sha256 === mine.sha256 ||
      (mine.supersedes !== undefined && hashed.sha256 === mine.supersedes)
    ) {
      verified.set(o.key, `${o.etag}/${mine.sha256}`);
      continue;
    }
    verified.delete(o.key);
    findings.push({
      kind: "altered",
      key: o.key,
      reason: `sha256 ${hashed.sha256.slice(0, 12)}… in the bucket, uploaded ${mine.sha256.slice(0, 12)}…`,
    });
  }
  for (const key of input.recentKeys)
    if (!seen.has(key))
      findings.push({ kind: "missing", key, reason: "uploaded by this sidecar, no longer in the bucket" });
  for (const o of manifests) {
    const m = parseManifestKey(prefix, o.key);
    if (!m || o.key === writing) continue;
    if (isAfterHead(m))
      findings.push({
        kind: "manifest",
        key: o.key,
        reason: "a manifest for an hour this sidecar has not closed: not written by it",
      });
  }
  return findings;
}
