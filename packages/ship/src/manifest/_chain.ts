import type { S3Client } from "@aws-sdk/client-s3";
import { decodeManifest } from "./_format.ts";
import { HOUR_MS, hourLabel, joinKey, MANIFEST_DIR, manifestFolder, parseManifestKey } from "./_keys.ts";
import { mapPool } from "./_pool.ts";
import { getBytes, listObjects, sha256Hex } from "./_s3.ts";
import type { Manifest } from "./types.ts";
import type { VerifyFinding } from "./verify-types.ts";

/** A manifest as found in the bucket: its key, the hash of its exact bytes and what they say. */
export interface StoredManifest {
  key: string;
  host: string;
  hourMs: number;
  sha256: string;
  /** The parsed manifest, or why the bytes are not one. */
  manifest: Manifest | string;
}

/** Manifests are small; fetch a few at a time. */
const MANIFEST_FETCHES = 8;

/** Every manifest under `_manifests/` (of one host, or all), grouped by host, oldest first. */
export async function loadChains(
  client: S3Client,
  bucket: string,
  prefix: string,
  host: string | undefined,
  findings: VerifyFinding[],
): Promise<Map<string, StoredManifest[]>> {
  const folder = host === undefined ? joinKey(prefix, `${MANIFEST_DIR}/`) : manifestFolder(prefix, host);
  const listed = await listObjects(client, bucket, folder);
  const keys: { key: string; host: string; hourMs: number }[] = [];
  for (const o of listed) {
    const parsed = parseManifestKey(prefix, o.key);
    if (parsed) keys.push({ key: o.key, ...parsed });
    else findings.push({ kind: "extra", key: o.key, reason: "in _manifests/ but not named like a manifest" });
  }
  const loaded = await mapPool(keys, MANIFEST_FETCHES, async (k): Promise<StoredManifest | null> => {
    const bytes = await getBytes(client, bucket, k.key);
    if (bytes === null) return null; // deleted between listing and reading: as if never listed
    return { ...k, sha256: sha256Hex(bytes), manifest: decodeManifest(bytes) };
  });
  const chains = new Map<string, StoredManifest[]>();
  for (const m of loaded) {
    if (!m) continue;
    const chain = chains.get(m.host);
    if (chain) chain.push(m);
    else chains.set(m.host, [m]);
  }
  for (const chain of chains.values()) chain.sort((a, b) => a.hourMs - b.hourMs);
  return chains;
}

const short = (sha: string): string => sha.slice(0, 12);

/**
 * The links of one host's chain, for the manifests `inRange` selects: each must name the
 * manifest of the hour before by key and by the SHA-256 of its bytes.
 */
export function checkChain(
  host: string,
  chain: StoredManifest[],
  inRange: (hourMs: number) => boolean,
): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  const byKey = new Set(chain.map((m) => m.key));
  chain.forEach((m, i) => {
    if (!inRange(m.hourMs)) return;
    const stored = m.manifest;
    if (typeof stored === "string") {
      findings.push({
        kind: "broken-chain",
        key: m.key,
        manifest: m.key,
        reason: `not a readable manifest: ${stored}`,
      });
      return;
    }
    if (stored.host !== host || stored.hour !== hourLabel(m.hourMs))
      findings.push({
        kind: "reordered",
        key: m.key,
        manifest: m.key,
        reason: `holds the manifest of host ${stored.host} hour ${stored.hour}: contents moved from another key`,
      });
    const before = chain[i - 1];
    const prev = stored.previous;
    if (!before) {
      if (prev && byKey.has(prev.key))
        findings.push({
          kind: "reordered",
          key: m.key,
          manifest: m.key,
          reason: `the oldest manifest links to ${prev.key}, which is not before it`,
        });
      else if (prev)
        findings.push({
          kind: "gap",
          key: prev.key,
          manifest: m.key,
          reason: `the oldest manifest links to ${prev.key}, which is missing: earlier manifests were removed (if they expired on purpose, verify with a later --from)`,
        });
      return;
    }
    let gapReported = false;
    if (!prev) {
      findings.push({
        kind: "broken-chain",
        key: m.key,
        manifest: m.key,
        reason: `starts a new chain (previous is null) after ${before.key}`,
      });
    } else if (prev.key === before.key) {
      if (prev.sha256 !== before.sha256)
        findings.push({
          kind: "broken-chain",
          key: before.key,
          manifest: m.key,
          reason: `${m.key} names previous sha256 ${short(prev.sha256)}…, but ${before.key} hashes to ${short(before.sha256)}…: one of the two was rewritten`,
        });
    } else if (!byKey.has(prev.key)) {
      gapReported = true;
      findings.push({
        kind: "gap",
        key: prev.key,
        manifest: m.key,
        reason: `${m.key} links to ${prev.key}, which is missing: a manifest was removed`,
      });
    } else {
      findings.push({
        kind: "reordered",
        key: m.key,
        manifest: m.key,
        reason: `links to ${prev.key}, but the manifest before it is ${before.key}`,
      });
    }
    if (!gapReported && m.hourMs !== before.hourMs + HOUR_MS) {
      const missingFrom = hourLabel(before.hourMs + HOUR_MS);
      const missingTo = hourLabel(m.hourMs - HOUR_MS);
      findings.push({
        kind: "gap",
        key: m.key,
        manifest: m.key,
        reason: `no manifest for ${missingFrom === missingTo ? missingFrom : `${missingFrom} … ${missingTo}`} before it: removed`,
      });
    }
  });
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
