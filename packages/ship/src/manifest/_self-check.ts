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
  /** The newest manifest this sidecar wrote: hour and sequence; later ones are not its own. */
  head: { hourMs: number; sequence: number } | null;
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
  const journaled = await input.journaled();
  const seen = new Set<string>();
  for (const o of stored) {
    if (dataObjectHost(prefix, o.key) !== host) continue;
    seen.add(o.key);
    const mine = journaled.get(o.key);
    if (!mine) {
      if (o.lastModified.getTime() >= input.since)
        findings.push({
          kind: "foreign",
          key: o.key,
          reason: `stored ${o.lastModified.toISOString()} under this sidecar's keys, not uploaded by it`,
        });
      continue;
    }
    if (verified.get(o.key) === `${o.etag}/${mine.sha256}`) continue;
    const hashed = await hashObject(client, bucket, o.key);
    if (!hashed) continue; // deleted since the listing: the next check says missing
    if (hashed.sha256 === mine.sha256) {
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
  for (const o of await listObjects(client, bucket, manifestFolder(prefix, host))) {
    const m = parseManifestKey(prefix, o.key);
    if (!m) continue;
    const after =
      input.head === null ||
      m.hourMs > input.head.hourMs ||
      (m.hourMs === input.head.hourMs && m.sequence > input.head.sequence);
    if (after)
      findings.push({
        kind: "manifest",
        key: o.key,
        reason: "a manifest for an hour this sidecar has not closed: not written by it",
      });
  }
  return findings;
}
