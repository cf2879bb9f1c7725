import { listChains, loadChains, loadOlder } from "./_chain.ts";
import { dataObjectHost, floorHour, HOUR_MS, joinKey, MANIFEST_DIR, normalizePrefix } from "./_keys.ts";
import { type ChainReading, type Listing, readChains, type Window } from "./_listings.ts";
import { mapPool } from "./_pool.ts";
import { hashObject, type ListedObject, listObjects } from "./_s3.ts";
import { checkSignatures, untrustedManifests } from "./_signatures.ts";
import { DEFAULT_MANIFEST_GRACE_MS } from "./journal.ts";
import {
  FINDING_KINDS,
  type FindingKind,
  type NothingToVerify,
  type VerifyFinding,
  type VerifyOptions,
  type VerifyReport,
} from "./verify-types.ts";

export type {
  FindingKind,
  NothingToVerify,
  VerifiedChain,
  VerifyFinding,
  VerifyOptions,
  VerifyReport,
} from "./verify-types.ts";

/** The sidecar's and the store's clocks may disagree by this much at the end of the chain. */
export const DEFAULT_CLOCK_SKEW_MS: number = 5 * 60_000;
const DEFAULT_CONCURRENCY = 4;

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
  // The newest store time among pending objects: its hour's manifest is what lists the last of them.
  let newestPending = Number.NEGATIVE_INFINITY;
  const addPending = (key: string, stored: Date | undefined): void => {
    pending.push(key);
    if (stored) newestPending = Math.max(newestPending, stored.getTime());
  };

  // Listing every manifest is cheap and gives the hours; with --from, the manifests older than
  // each first one's predecessor are not downloaded unless something below needs them.
  const listed = await listChains(client, bucket, prefix, options.host, findings);
  let loaded = await loadChains(client, bucket, listed, fromHour);
  // With trusted keys, what an unsigned or forged manifest lists accounts for nothing.
  let reading = readChains(loaded, inRange, untrustedManifests(loaded.chains, options.trustedKeys));

  // Every object an in-range manifest lists, downloaded and hashed (all in-range manifests are
  // downloaded, so this set is final); compared with its newest listing further down.
  const hashes = new Map<string, Awaited<ReturnType<typeof hashObject>>>();
  const toCheck = [...reading.toCheck].sort();
  await mapPool(toCheck, options.concurrency ?? DEFAULT_CONCURRENCY, async (key) => {
    hashes.set(key, await hashObject(client, bucket, key));
  });

  // Every stored object within the verified hours accounted for. The windows come from the
  // in-range manifests and each chain's newest, all downloaded: they are final too.
  const all = [...reading.windows.values()];
  const overall: Window | null =
    all.length === 0
      ? null
      : {
          start: Math.min(...all.map((w) => w.start)),
          end: Math.max(...all.map((w) => w.end)),
          chainEnd: Math.max(...all.map((w) => w.chainEnd)),
        };
  const manifestDir = joinKey(prefix, `${MANIFEST_DIR}/`);
  const account = (o: ListedObject, r: ChainReading): "pending" | "extra" | null => {
    if (o.key.startsWith(manifestDir) || r.latest.has(o.key)) return null;
    const host = dataObjectHost(prefix, o.key);
    if (options.host !== undefined && host !== null && host !== options.host) return null;
    const window = (host !== null ? r.windows.get(host) : undefined) ?? overall;
    if (!window) return null;
    const stored = o.lastModified.getTime();
    if (stored >= window.chainEnd - skew) return "pending";
    return stored >= window.start && stored < window.end ? "extra" : null;
  };
  const stored = await listObjects(client, bucket, prefix === "" ? "" : `${prefix}/`);

  // Manifests left out can still matter: one may list an object that would otherwise be extra
  // (an old object copied in place), and a link into them may make a fork. Either is rare (a
  // finding, or close to one): then read them all and report what a load of every manifest does.
  if (loaded.older.size > 0 && (reading.linksOlder || stored.some((o) => account(o, reading) === "extra"))) {
    loaded = await loadOlder(client, bucket, loaded);
    reading = readChains(loaded, inRange, untrustedManifests(loaded.chains, options.trustedKeys));
  }
  findings.push(...reading.findings);
  if (options.trustedKeys) findings.push(...checkSignatures(loaded.chains, inRange, options.trustedKeys));
  let nothingToVerify: NothingToVerify | null = null;
  if ((options.host !== undefined && !loaded.chains.has(options.host)) || loaded.chains.size === 0) {
    const what = options.host === undefined ? "the prefix" : `host ${options.host}`;
    const unlisted = stored.filter((o) => {
      if (o.key.startsWith(manifestDir)) return false;
      const host = dataObjectHost(prefix, o.key);
      return host !== null && (options.host === undefined || host === options.host);
    });
    const now = (options.now?.() ?? new Date()).getTime();
    const oldest = Math.min(...unlisted.map((o) => o.lastModified.getTime()));
    // The first manifest is written once the oldest object's upload hour is over, plus the grace.
    const due = floorHour(oldest) + HOUR_MS + DEFAULT_MANIFEST_GRACE_MS;
    if (unlisted.length === 0)
      nothingToVerify = {
        reason: `nothing stored under ${what} yet: no object and no manifest (is the archive URL right?)`,
        objects: 0,
        verifiableAfter: null,
      };
    else if (now < due + skew)
      nothingToVerify = {
        reason:
          `${unlisted.length} object(s) stored under ${what} since ${new Date(oldest).toISOString()}, no manifest yet: ` +
          `the first is written when the hour closes, at ${new Date(due).toISOString()} (or when the sidecar stops)`,
        objects: unlisted.length,
        verifiableAfter: new Date(due).toISOString(),
      };
    else
      findings.push({
        kind: "gap",
        key: joinKey(prefix, `${MANIFEST_DIR}/${options.host === undefined ? "" : `${options.host}/`}`),
        reason:
          `no manifest under ${what}, but objects are stored since ${new Date(oldest).toISOString()} and the first ` +
          `manifest was due at ${new Date(due).toISOString()}: manifests removed, or the sidecar cannot write them`,
      });
  } else if (reading.manifests === 0)
    findings.push({
      kind: "gap",
      key: joinKey(prefix, `${MANIFEST_DIR}/`),
      reason: "no manifest in the requested range: nothing can be verified",
    });

  let entries = 0;
  let bytes = 0;
  for (const key of toCheck) {
    const listing = reading.latest.get(key) as Listing;
    const hashed = hashes.get(key);
    if (!listing.object.compacted) entries += listing.object.entries; // a compacted file's rows are its sources' entries
    if (!hashed) {
      findings.push({
        kind: "missing",
        key,
        manifest: listing.manifest,
        reason: "listed, not in the bucket",
      });
      continue;
    }
    bytes += hashed.size;
    const chainEnd = reading.windows.get(listing.host)?.chainEnd ?? Number.POSITIVE_INFINITY;
    const afterChain = hashed.lastModified !== undefined && hashed.lastModified.getTime() >= chainEnd - skew;
    const storedVersion = listing.object.versionId;
    if (storedVersion !== undefined && hashed.versionId !== undefined && hashed.versionId !== storedVersion) {
      if (afterChain) {
        addPending(key, hashed.lastModified); // written again after the last manifest closed: the next one lists it
        continue;
      }
      // Versioned (Object Lock): the newest version is someone else's write; is the sidecar's still there?
      const original = await hashObject(client, bucket, key, storedVersion);
      const state = !original
        ? "the stored version is gone"
        : original.sha256 === listing.object.sha256
          ? "the stored version is intact"
          : "the stored version hashes differently";
      findings.push({
        kind: "overwritten",
        key,
        manifest: listing.manifest,
        reason: `newest version ${hashed.versionId} (sha256 ${hashed.sha256.slice(0, 12)}…) is not version ${storedVersion} the sidecar stored; ${state}`,
      });
      continue;
    }
    if (hashed.sha256 === listing.object.sha256) continue;
    if (afterChain) {
      addPending(key, hashed.lastModified); // rewritten (a replay) after the last manifest closed: the next one lists it
      continue;
    }
    findings.push({
      kind: "altered",
      key,
      manifest: listing.manifest,
      reason: `sha256 ${hashed.sha256.slice(0, 12)}… (${hashed.size} bytes), listed ${listing.object.sha256.slice(0, 12)}… (${listing.object.size} bytes)`,
    });
  }
  for (const o of stored) {
    const kind = account(o, reading);
    if (kind === "pending") addPending(o.key, o.lastModified);
    else if (kind === "extra")
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
    ok: findings.length === 0 && nothingToVerify === null,
    bucket,
    prefix,
    chains: reading.chains,
    range: overall
      ? { from: new Date(overall.start).toISOString(), to: new Date(overall.end).toISOString() }
      : null,
    manifests: reading.manifests,
    objects: toCheck.length,
    entries,
    bytes,
    pending: pending.sort(),
    pendingVerifiableAfter: Number.isFinite(newestPending)
      ? new Date(floorHour(newestPending) + HOUR_MS + DEFAULT_MANIFEST_GRACE_MS).toISOString()
      : null,
    counts,
    findings,
    signatures: options.trustedKeys ? "verified" : "not checked",
    nothingToVerify,
  };
}
