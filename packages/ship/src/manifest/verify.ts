import { checkChain, loadChains, type StoredManifest } from "./_chain.ts";
import {
  dataObjectHost,
  floorHour,
  HOUR_MS,
  hourLabel,
  joinKey,
  MANIFEST_DIR,
  normalizePrefix,
} from "./_keys.ts";
import { mapPool } from "./_pool.ts";
import { hashObject, listObjects } from "./_s3.ts";
import type { UploadedObject } from "./types.ts";
import {
  FINDING_KINDS,
  type FindingKind,
  type VerifiedChain,
  type VerifyFinding,
  type VerifyOptions,
  type VerifyReport,
} from "./verify-types.ts";

export type {
  FindingKind,
  VerifiedChain,
  VerifyFinding,
  VerifyOptions,
  VerifyReport,
} from "./verify-types.ts";

/** The sidecar's and the store's clocks may disagree by this much at the end of the chain. */
export const DEFAULT_CLOCK_SKEW_MS: number = 5 * 60_000;
const DEFAULT_CONCURRENCY = 4;

/** Where a key was last listed: what the bucket must hold now. */
interface Listing {
  object: UploadedObject;
  manifest: string;
  host: string;
}

/** The window of upload times one host's verified manifests cover. */
interface Window {
  start: number;
  end: number;
  /** End of the chain's newest manifest hour: later uploads are pending. */
  chainEnd: number;
}

/**
 * Walks the manifest chains of an archive and checks the objects they list: every link by
 * SHA-256, every listed object downloaded and hashed (streamed), every object stored within the
 * verified hours accounted for. Read-only.
 */
export async function verifyArchive(options: VerifyOptions): Promise<VerifyReport> {
  const { client, bucket } = options;
  const prefix = normalizePrefix(options.prefix ?? "");
  const skew = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const fromHour = options.from ? floorHour(options.from.getTime()) : Number.NEGATIVE_INFINITY;
  const toMs = options.to ? options.to.getTime() : Number.POSITIVE_INFINITY;
  const inRange = (hourMs: number): boolean => hourMs >= fromHour && hourMs <= toMs;
  const findings: VerifyFinding[] = [];
  const pending: string[] = [];

  const chains = await loadChains(client, bucket, prefix, options.host, findings);
  const verified: VerifiedChain[] = [];
  const windows = new Map<string, Window>();
  const latest = new Map<string, Listing>();
  const toCheck = new Set<string>();
  let manifests = 0;

  for (const [host, chain] of [...chains].sort(([a], [b]) => a.localeCompare(b))) {
    findings.push(...checkChain(host, chain, inRange));
    const selected = chain.filter((m) => inRange(m.hourMs));
    manifests += selected.length;
    const first = selected[0];
    const last = selected.at(-1);
    const newest = chain.at(-1) as StoredManifest;
    verified.push({
      host,
      manifests: selected.length,
      first: first ? hourLabel(first.hourMs) : null,
      last: last ? hourLabel(last.hourMs) : null,
      head: newest.key,
    });
    if (first && last)
      windows.set(host, {
        start: first.hourMs,
        end: last.hourMs + HOUR_MS,
        chainEnd: newest.hourMs + HOUR_MS,
      });
    for (const m of chain) {
      if (typeof m.manifest === "string") continue;
      for (const object of m.manifest.objects) {
        // The newest listing (a replay that rewrote the key) is what the bucket must hold.
        const seen = latest.get(object.key);
        if (!seen || Date.parse(seen.object.uploadedAt) <= Date.parse(object.uploadedAt))
          latest.set(object.key, { object, manifest: m.key, host });
        if (inRange(m.hourMs)) toCheck.add(object.key);
      }
    }
  }
  if (options.host !== undefined && !chains.has(options.host))
    findings.push({
      kind: "gap",
      key: joinKey(prefix, `${MANIFEST_DIR}/${options.host}/`),
      reason: `no manifest for host ${options.host}: nothing can be verified`,
    });
  else if (chains.size === 0)
    findings.push({
      kind: "gap",
      key: joinKey(prefix, `${MANIFEST_DIR}/`),
      reason: "no manifest under the prefix: nothing can be verified",
    });
  else if (manifests === 0)
    findings.push({
      kind: "gap",
      key: joinKey(prefix, `${MANIFEST_DIR}/`),
      reason: "no manifest in the requested range: nothing can be verified",
    });

  // Every listed object, downloaded and hashed.
  let objects = 0;
  let entries = 0;
  let bytes = 0;
  await mapPool([...toCheck].sort(), options.concurrency ?? DEFAULT_CONCURRENCY, async (key) => {
    const listing = latest.get(key) as Listing;
    const stored = await hashObject(client, bucket, key);
    objects++;
    entries += listing.object.entries;
    if (stored === null) {
      findings.push({
        kind: "missing",
        key,
        manifest: listing.manifest,
        reason: "listed, not in the bucket",
      });
      return;
    }
    bytes += stored.size;
    if (stored.sha256 === listing.object.sha256) return;
    const chainEnd = windows.get(listing.host)?.chainEnd ?? Number.POSITIVE_INFINITY;
    if (stored.lastModified && stored.lastModified.getTime() >= chainEnd - skew) {
      pending.push(key); // rewritten (a replay) after the last manifest closed: the next one lists it
      return;
    }
    findings.push({
      kind: "altered",
      key,
      manifest: listing.manifest,
      reason: `sha256 ${stored.sha256.slice(0, 12)}… (${stored.size} bytes), listed ${listing.object.sha256.slice(0, 12)}… (${listing.object.size} bytes)`,
    });
  });

  // Every stored object within the verified hours accounted for.
  const all = [...windows.values()];
  const overall: Window | null =
    all.length === 0
      ? null
      : {
          start: Math.min(...all.map((w) => w.start)),
          end: Math.max(...all.map((w) => w.end)),
          chainEnd: Math.max(...all.map((w) => w.chainEnd)),
        };
  const manifestDir = joinKey(prefix, `${MANIFEST_DIR}/`);
  for (const o of await listObjects(client, bucket, prefix === "" ? "" : `${prefix}/`)) {
    if (o.key.startsWith(manifestDir) || latest.has(o.key)) continue;
    const host = dataObjectHost(prefix, o.key);
    if (options.host !== undefined && host !== null && host !== options.host) continue;
    const window = (host !== null ? windows.get(host) : undefined) ?? overall;
    if (!window) continue;
    const stored = o.lastModified.getTime();
    if (stored >= window.chainEnd - skew) pending.push(o.key);
    else if (stored >= window.start && stored < window.end)
      findings.push({
        kind: "extra",
        key: o.key,
        reason: `stored ${o.lastModified.toISOString()}, within the verified hours, but in no manifest`,
      });
  }

  findings.sort((a, b) => a.kind.localeCompare(b.kind) || a.key.localeCompare(b.key));
  const counts = Object.fromEntries(FINDING_KINDS.map((k) => [k, 0])) as Record<FindingKind, number>;
  for (const f of findings) counts[f.kind]++;
  return {
    ok: findings.length === 0,
    bucket,
    prefix,
    chains: verified,
    range: overall
      ? { from: new Date(overall.start).toISOString(), to: new Date(overall.end).toISOString() }
      : null,
    manifests,
    objects,
    entries,
    bytes,
    pending: pending.sort(),
    counts,
    findings,
  };
}
