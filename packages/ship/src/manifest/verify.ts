import { classifyS3ReadError } from "../sinks/s3/_errors.ts";
import { type LoadedChains, listChains, loadChains, loadOlder } from "./_chain.ts";
import { checkCompactedFiles } from "./_compacted.ts";
import {
  compactedFileHost,
  dataObjectHost,
  floorHour,
  HOUR_MS,
  isCompactionRecordKey,
  joinKey,
  MANIFEST_DIR,
  normalizePrefix,
} from "./_keys.ts";
import { type ChainReading, type ListedFile, type Listing, readChains, type Window } from "./_listings.ts";
import { mapPool } from "./_pool.ts";
import { hashObject, type ListedObject, listObjects } from "./_s3.ts";
import { checkSignatures, untrustedManifests } from "./_signatures.ts";
import { DEFAULT_MANIFEST_GRACE_MS } from "./journal.ts";
import {
  type DroppedObject,
  FINDING_KINDS,
  type FindingKind,
  type NothingToVerify,
  type VerifiedChain,
  type VerifyFinding,
  type VerifyOptions,
  type VerifyReport,
} from "./verify-types.ts";

export type {
  DroppedObject,
  FindingKind,
  NothingToVerify,
  VerifiedChain,
  VerifyFinding,
  VerifyOptions,
  VerifyReport,
} from "./verify-types.ts";

/** The sidecar's and the store's clocks may disagree by this much at the end of the chain. */
export const DEFAULT_CLOCK_SKEW_MS: number = 5 * 60_000;
/**
 * A host whose chain has no close record and has covered nothing for this long is `gone`: a
 * running sidecar writes a manifest every hour (5 minutes after it ends), so its newest one never
 * covers less than the last 65 minutes; two hours leave room for a slow store.
 */
export const DEFAULT_GONE_AFTER_MS: number = 2 * HOUR_MS;
const DEFAULT_CONCURRENCY = 4;
/** Keys named in a finding's reason; the finding's `objects` lists them all. */
const KEYS_NAMED = 5;

type Hashed = Awaited<ReturnType<typeof hashObject>>;

/**
 * Walks the manifest chains of an archive and checks the objects they list: every link by
 * SHA-256, every listed object downloaded and hashed (streamed) and compared with its newest
 * signed listing, every object stored within the verified hours accounted for, and each chain's
 * end: closed by a clean stop, open (a running sidecar: objects after its newest manifest are
 * pending), or gone (open and silent past `goneAfterMs`). Read-only.
 *
 * A listed object found altered is checked against a fresh listing of the manifests: a sidecar
 * that wrote a newer manifest (an announced rewrite) while this ran is not taken for tampering.
 */
export async function verifyArchive(options: VerifyOptions): Promise<VerifyReport> {
  try {
    return await verifyRechecked(options);
  } catch (error) {
    throw classifyS3ReadError(error, await readTarget(options));
  }
}

/** The bucket and where it is (the client's endpoint, else its region), for error messages. */
async function readTarget(
  options: VerifyOptions,
): Promise<{ bucket: string; endpoint: string | undefined; region: string | undefined }> {
  const config = options.client.config;
  const endpoint = await config.endpoint?.().catch(() => undefined);
  const region = await config.region().catch(() => undefined);
  const url = endpoint
    ? `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ""}`
    : undefined;
  return { bucket: options.bucket, endpoint: url, region };
}

async function verifyRechecked(options: VerifyOptions): Promise<VerifyReport> {
  const first = await verifyOnce(options);
  const changed = first.report.findings.some((f) => ["altered", "overwritten", "missing"].includes(f.kind));
  if (!changed) return first.report;
  const prefix = normalizePrefix(options.prefix ?? "");
  const again = await listChains(options.client, options.bucket, prefix, options.host, []);
  const newer = [...again.values()].flat().some((m) => !first.manifests.has(m.key));
  return newer ? (await verifyOnce(options)).report : first.report;
}

async function verifyOnce(options: VerifyOptions): Promise<{ report: VerifyReport; manifests: Set<string> }> {
  const prefix = normalizePrefix(options.prefix ?? "");
  const skew = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const now = (options.now?.() ?? new Date()).getTime();
  const findings: VerifyFinding[] = [];
  const read = await readArchive(options, prefix, skew, findings);
  const { loaded, reading, hashes, toCheck, stored, account } = read;
  findings.push(...reading.findings);
  if (options.trustedKeys)
    findings.push(...checkSignatures(loaded.chains, read.inRange, options.trustedKeys));
  let nothingToVerify = emptyArchive(
    options.host,
    loaded,
    reading,
    stored,
    { prefix, manifestDir: read.manifestDir, now, skew },
    findings,
  );
  const listedTotals = await checkListed(options, reading, hashes, toCheck, findings);

  // Every stored object no trusted manifest lists: extra within the verified hours and under a
  // closed chain, pending after an open chain's newest manifest, unverified after a gone one.
  const states = chainStates(reading, now, options.goneAfterMs ?? DEFAULT_GONE_AFTER_MS);
  const pending = new Map<string, ListedObject[]>();
  const unverified = new Map<string, ListedObject[]>();
  for (const o of stored) {
    const verdict = account(reading)(o);
    if (verdict === "extra")
      findings.push({
        kind: "extra",
        key: o.key,
        reason: extraReason(o, reading, prefix),
      });
    else if (verdict !== null) {
      const byHost = states.get(verdict.host) === "gone" ? unverified : pending;
      byHost.set(verdict.host, [...(byHost.get(verdict.host) ?? []), o]);
    }
  }
  findings.push(...goneFindings(reading, states, unverified, now));
  const named = new Set(findings.map((f) => f.key));
  for (const u of unvouchedSources(reading))
    if (!named.has(u.key)) {
      named.add(u.key);
      findings.push(u);
    }
  if (options.checkCompacted) {
    const intact = (key: string): boolean =>
      hashes.get(key)?.sha256 === reading.latest.get(key)?.object.sha256;
    findings.push(
      ...(await checkCompactedFiles([...reading.latest.values()], intact, options.checkCompacted)),
    );
  }

  findings.sort((a, b) => a.kind.localeCompare(b.kind) || a.key.localeCompare(b.key));
  const pendingObjects = [...pending.values()].flat();
  // Only open records so far (a first start): nothing is verified, the first listing is still due.
  if (nothingToVerify === null && findings.length === 0 && toCheck.length === 0 && pendingObjects.length > 0)
    nothingToVerify = firstListingDue(pendingObjects, options.host);
  const report = verifyReport(options, prefix, reading, states, pending, {
    objects: toCheck.length,
    ...listedTotals,
    findings,
    nothingToVerify,
  });
  return { report, manifests: read.manifests };
}

/**
 * The archive as the manifests describe it: every manifest listed (their keys), the chains loaded
 * (with --from, older manifests only when something needs them) and read, every object an
 * in-range manifest lists downloaded and hashed, and every object stored, listed.
 */
async function readArchive(options: VerifyOptions, prefix: string, skew: number, findings: VerifyFinding[]) {
  const { client, bucket } = options;
  const fromHour = options.from ? floorHour(options.from.getTime()) : Number.NEGATIVE_INFINITY;
  const toMs = options.to ? options.to.getTime() : Number.POSITIVE_INFINITY;
  const inRange = (hourMs: number): boolean => hourMs >= fromHour && hourMs <= toMs;
  // Listing every manifest is cheap and gives the hours; with --from, the manifests older than
  // each first one's predecessor are not downloaded unless something below needs them.
  const listed = await listChains(client, bucket, prefix, options.host, findings);
  const manifests = new Set([...listed.values()].flat().map((m) => m.key));
  let loaded = await loadChains(client, bucket, listed, fromHour);
  // With trusted keys, what an unsigned or forged manifest lists accounts for nothing.
  let reading = readChains(loaded, inRange, untrustedManifests(loaded.chains, options.trustedKeys));

  // Every object an in-range manifest lists, downloaded and hashed (all in-range manifests are
  // downloaded, so this set is final); compared with its newest listing further down.
  const hashes = new Map<string, Hashed>();
  const toCheck = [...reading.toCheck].sort();
  await mapPool(toCheck, options.concurrency ?? DEFAULT_CONCURRENCY, async (key) => {
    hashes.set(key, await hashObject(client, bucket, key));
  });

  const stored = await listObjects(client, bucket, prefix === "" ? "" : `${prefix}/`);
  const manifestDir = joinKey(prefix, `${MANIFEST_DIR}/`);
  const account = (r: ChainReading) => accountant(r, { prefix, manifestDir, host: options.host, skew });
  // Manifests left out can still matter: one may list an object that would otherwise be extra
  // (an old object copied in place), and a link into them may make a fork. Either is rare (a
  // finding, or close to one): then read them all and report what a load of every manifest does.
  if (
    loaded.older.size > 0 &&
    (reading.linksOlder ||
      unvouchedSources(reading).length > 0 ||
      stored.some((o) => account(reading)(o) === "extra"))
  ) {
    loaded = await loadOlder(client, bucket, loaded);
    reading = readChains(loaded, inRange, untrustedManifests(loaded.chains, options.trustedKeys));
  }
  return { inRange, manifests, loaded, reading, hashes, toCheck, stored, manifestDir, account };
}

/**
 * Each object an in-range manifest lists against its newest listing (findings onto `findings`),
 * or, gone but in an intact compacted file that names it, dropped: with the entries and bytes checked.
 */
async function checkListed(
  options: VerifyOptions,
  reading: ChainReading,
  hashes: Map<string, Hashed>,
  toCheck: string[],
  findings: VerifyFinding[],
): Promise<{ entries: number; bytes: number; dropped: DroppedObject[] }> {
  let entries = 0;
  let bytes = 0;
  const dropped: DroppedObject[] = [];
  const droppedInto = compactedInto(reading, hashes, options);
  for (const key of toCheck) {
    const listing = reading.latest.get(key) as Listing;
    const hashed = hashes.get(key) ?? null;
    if (!listing.object.compacted) entries += listing.object.entries; // a compacted file's rows are its sources' entries
    bytes += hashed?.size ?? 0;
    // Gone, but its rows are in an intact compacted file that names it: retention, not a loss.
    const into = hashed || listing.object.compacted ? null : await droppedInto(listing.object);
    if (into !== null) {
      dropped.push({ key, into, manifest: listing.manifest });
      continue;
    }
    const finding = await compareListed(options, listing, hashed);
    if (finding) findings.push(finding);
  }
  return { entries, bytes, dropped };
}

/** The report, from what was read and found (`findings` sorted). */
function verifyReport(
  options: VerifyOptions,
  prefix: string,
  reading: ChainReading,
  states: Map<string, VerifiedChain["state"]>,
  pending: Map<string, ListedObject[]>,
  found: {
    objects: number;
    entries: number;
    bytes: number;
    dropped: DroppedObject[];
    findings: VerifyFinding[];
    nothingToVerify: NothingToVerify | null;
  },
): VerifyReport {
  const { findings, nothingToVerify } = found;
  const counts = Object.fromEntries(FINDING_KINDS.map((k) => [k, 0])) as Record<FindingKind, number>;
  for (const f of findings) counts[f.kind]++;
  const pendingObjects = [...pending.values()].flat();
  const newestPending = Math.max(...pendingObjects.map((o) => o.lastModified.getTime()));
  const overall = overallWindow(reading);
  return {
    ok: findings.length === 0 && nothingToVerify === null,
    bucket: options.bucket,
    prefix,
    chains: reading.chains.map(
      (c): VerifiedChain => withState(c, reading.windows.get(c.host), states, pending),
    ),
    range: overall
      ? { from: new Date(overall.start).toISOString(), to: new Date(overall.end).toISOString() }
      : null,
    manifests: reading.manifests,
    objects: found.objects,
    entries: found.entries,
    bytes: found.bytes,
    pending: pendingObjects.map((o) => o.key).sort(),
    dropped: found.dropped.sort((a, b) => a.into.localeCompare(b.into) || a.key.localeCompare(b.key)),
    pendingVerifiableAfter: Number.isFinite(newestPending)
      ? new Date(floorHour(newestPending) + HOUR_MS + DEFAULT_MANIFEST_GRACE_MS).toISOString()
      : null,
    counts,
    findings,
    signatures: options.trustedKeys ? "verified" : "not checked",
    nothingToVerify,
  };
}

/**
 * A listed object against its newest trusted listing: `missing`, `overwritten` (a versioned
 * bucket's newest version is not the one listed) or `altered`, at once, however recently it was
 * stored. An announced rewrite's listing (`supersedes`) takes the bytes it replaces too.
 */
async function compareListed(
  options: VerifyOptions,
  listing: Listing,
  hashed: Hashed,
): Promise<VerifyFinding | null> {
  const { key } = listing.object;
  if (!hashed)
    return { kind: "missing", key, manifest: listing.manifest, reason: "listed, not in the bucket" };
  const storedVersion = listing.object.versionId;
  if (storedVersion !== undefined && hashed.versionId !== undefined && hashed.versionId !== storedVersion) {
    // Versioned (Object Lock): the newest version is someone else's write; is the sidecar's still there?
    const original = await hashObject(options.client, options.bucket, key, storedVersion);
    const state = !original
      ? "the stored version is gone"
      : original.sha256 === listing.object.sha256
        ? "the stored version is intact"
        : "the stored version hashes differently";
    return {
      kind: "overwritten",
      key,
      manifest: listing.manifest,
      reason: `newest version ${hashed.versionId} (sha256 ${hashed.sha256.slice(0, 12)}…) is not version ${storedVersion} the sidecar stored; ${state}`,
    };
  }
  if (hashed.sha256 === listing.object.sha256 || hashed.sha256 === listing.object.supersedes) return null;
  return {
    kind: "altered",
    key,
    manifest: listing.manifest,
    reason: `sha256 ${hashed.sha256.slice(0, 12)}… (${hashed.size} bytes), listed ${listing.object.sha256.slice(0, 12)}… (${listing.object.size} bytes)`,
  };
}

/**
 * For a listed landing object that is gone: the compacted file its rows went into, when the newest
 * trusted listing of that file names it as a source (key and the listed SHA-256) and the file is in
 * the bucket with its listed SHA-256 (dropped after compaction: `auditpipe compact --drop-landing`);
 * else null (then it is `missing`). Compacted files outside the verified hours are hashed on demand.
 */
function compactedInto(
  reading: ChainReading,
  hashes: ReadonlyMap<string, Hashed>,
  options: VerifyOptions,
): (landing: ListedFile) => Promise<string | null> {
  const files = new Map<string, string[]>();
  for (const listing of reading.latest.values())
    for (const s of listing.object.file?.sources ?? []) {
      const id = `${s.key}|${s.sha256}`;
      files.set(id, [...(files.get(id) ?? []), listing.object.key]);
    }
  const intact = new Map<string, Promise<boolean>>();
  const isIntact = (key: string): Promise<boolean> => {
    let known = intact.get(key);
    if (!known) {
      const listed = reading.latest.get(key)?.object.sha256;
      known = (
        hashes.has(key) ? Promise.resolve(hashes.get(key)) : hashObject(options.client, options.bucket, key)
      ).then((h) => h !== null && h !== undefined && h.sha256 === listed);
      intact.set(key, known);
    }
    return known;
  };
  return async (landing) => {
    for (const file of files.get(`${landing.key}|${landing.sha256}`) ?? [])
      if (await isIntact(file)) return file;
    return null;
  };
}

/**
 * Sources of the verified hours' compacted files that no trusted manifest lists as shipped (that
 * key with that SHA-256), as `extra` findings: rows in a signed file that no sidecar vouched for
 * (an object forged under a host's keys, compacted before anyone looked, then dropped).
 */
function unvouchedSources(reading: ChainReading): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  for (const key of reading.toCheck) {
    const listing = reading.latest.get(key);
    for (const s of listing?.object.file?.sources ?? []) {
      const shipped = reading.latest.get(s.key)?.object;
      if (shipped && !shipped.compacted && (shipped.sha256 === s.sha256 || shipped.supersedes === s.sha256))
        continue;
      findings.push({
        kind: "extra",
        key: s.key,
        manifest: listing?.manifest as string,
        reason: `a source of the compacted file ${key} (sha256 ${s.sha256.slice(0, 12)}…), but no manifest lists it as shipped with those bytes: its rows in that file are no sidecar's`,
      });
    }
  }
  return findings;
}

/** Where an unlisted object stands: `extra`, waiting for its host's next manifest, or not judged (null). */
type Verdict = "extra" | { host: string } | null;

/** Judges stored objects no trusted manifest lists, against the chains' windows. */
function accountant(
  r: ChainReading,
  at: { prefix: string; manifestDir: string; host: string | undefined; skew: number },
): (o: ListedObject) => Verdict {
  const overall = overallWindow(r);
  return (o) => {
    if (o.key.startsWith(at.manifestDir) || r.latest.has(o.key)) return null;
    // Compaction's bookkeeping: what it says is signed as the manifests' `compacted`, read there.
    // A compacted (Parquet) file itself is judged as a landing object is: every one is signed.
    if (isCompactionRecordKey(at.prefix, o.key)) return null;
    const host = objectHost(at.prefix, o.key);
    if (at.host !== undefined && host !== null && host !== at.host) return null;
    // The host's sidecar said so in a signed manifest: not its own, at once.
    if (r.foreign.has(o.key)) return "extra";
    const window = (host !== null ? r.windows.get(host) : undefined) ?? overall;
    if (!window) return null;
    const stored = o.lastModified.getTime();
    if (stored < window.start) return null;
    // After a clean stop nothing is pending: the close record lists every upload of the run.
    if (window.closed) return "extra";
    if (stored >= window.chainEnd - (window.exact ? 0 : at.skew)) return { host: host ?? "" };
    return stored < window.end ? "extra" : null;
  };
}

/** The host whose keys an object is under: a landing object's, or a compacted file's (`host=`). */
function objectHost(prefix: string, key: string): string | null {
  return dataObjectHost(prefix, key) ?? compactedFileHost(prefix, key);
}

function extraReason(o: ListedObject, r: ChainReading, prefix: string): string {
  const host = objectHost(prefix, o.key);
  const window = host !== null ? r.windows.get(host) : undefined;
  const when = o.lastModified.toISOString();
  const disowned = r.foreign.get(o.key);
  if (disowned)
    return `stored ${when} under host ${host}'s keys; its sidecar's self-check found it was not written by it (${disowned})`;
  const what = compactedFileHost(prefix, o.key) === null ? "" : "a compacted file ";
  return window?.closed && o.lastModified.getTime() >= window.chainEnd
    ? `${what}stored ${when}, after host ${host}'s chain was closed by a clean stop (${window.newest}), in no manifest`
    : `${what}stored ${when}, within the verified hours, but in no manifest`;
}

/** All hosts' windows as one: for objects under a host without a chain. */
function overallWindow(r: ChainReading): Window | null {
  const all = [...r.windows.values()];
  if (all.length === 0) return null;
  return {
    start: Math.min(...all.map((w) => w.start)),
    end: Math.max(...all.map((w) => w.end)),
    chainEnd: Math.max(...all.map((w) => w.chainEnd)),
    exact: false,
    closed: all.every((w) => w.closed),
    newest: "",
  };
}

/** Each host's chain: closed (a clean stop), open (running), or gone (open, silent past the limit). */
function chainStates(r: ChainReading, now: number, goneAfterMs: number): Map<string, VerifiedChain["state"]> {
  const states = new Map<string, VerifiedChain["state"]>();
  for (const [host, w] of r.windows)
    states.set(host, w.closed ? "closed" : now - w.chainEnd > goneAfterMs ? "gone" : "open");
  return states;
}

function withState(
  c: VerifiedChain,
  w: Window | undefined,
  states: Map<string, VerifiedChain["state"]>,
  pending: Map<string, ListedObject[]>,
): VerifiedChain {
  if (!w) return c;
  return {
    ...c,
    state: states.get(c.host) ?? "open",
    coveredUntil: new Date(w.chainEnd).toISOString(),
    pending: pending.get(c.host)?.length ?? 0,
  };
}

/** A `gone` finding per host whose chain is open and silent past the limit, with what it left unverified. */
function goneFindings(
  r: ChainReading,
  states: Map<string, VerifiedChain["state"]>,
  unverified: Map<string, ListedObject[]>,
  now: number,
): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  for (const [host, state] of states) {
    if (state !== "gone") continue;
    const w = r.windows.get(host) as Window;
    const left = (unverified.get(host) ?? []).map((o) => o.key).sort();
    const hours = ((now - w.chainEnd) / HOUR_MS).toFixed(1);
    const named = left.slice(0, KEYS_NAMED).join(", ");
    findings.push({
      kind: "gone",
      key: w.newest,
      manifest: w.newest,
      reason:
        `host ${host}: the chain has no close record and covers nothing after ${new Date(w.chainEnd).toISOString()} ` +
        `(${hours} h ago; a running sidecar writes one every hour): it stopped without a clean stop, cannot reach the store, ` +
        `or its newest manifests were removed; ${left.length} object(s) stored after it are unverified` +
        (left.length > 0 ? `: ${named}${left.length > KEYS_NAMED ? ", …" : ""}` : ""),
      objects: left,
    });
  }
  return findings;
}

/** Objects stored after a chain's open record, none listed yet: when the first manifest listing them is due. */
function firstListingDue(pending: ListedObject[], host: string | undefined): NothingToVerify {
  const oldest = Math.min(...pending.map((o) => o.lastModified.getTime()));
  const due = floorHour(oldest) + HOUR_MS + DEFAULT_MANIFEST_GRACE_MS;
  return {
    reason:
      `${pending.length} object(s) stored under ${host === undefined ? "the prefix" : `host ${host}`} since ` +
      `${new Date(oldest).toISOString()}, after the chain's open record; none is in a manifest yet: the first to list ` +
      `them is written when the hour closes, at ${new Date(due).toISOString()} (or when the sidecar stops)`,
    objects: pending.length,
    verifiableAfter: new Date(due).toISOString(),
  };
}

/**
 * When no manifest exists for the archive (or host): nothing to verify yet if the first one is
 * not due, else a `gap` (pushed to `findings`). Null when there are manifests.
 */
function emptyArchive(
  host: string | undefined,
  loaded: LoadedChains,
  reading: ChainReading,
  stored: ListedObject[],
  at: { prefix: string; manifestDir: string; now: number; skew: number },
  findings: VerifyFinding[],
): NothingToVerify | null {
  if ((host === undefined || loaded.chains.has(host)) && loaded.chains.size > 0) {
    if (reading.manifests === 0)
      findings.push({
        kind: "gap",
        key: at.manifestDir,
        reason: "no manifest in the requested range: nothing can be verified",
      });
    return null;
  }
  const what = host === undefined ? "the prefix" : `host ${host}`;
  const unlisted = stored.filter((o) => {
    if (o.key.startsWith(at.manifestDir)) return false;
    const h = dataObjectHost(at.prefix, o.key);
    return h !== null && (host === undefined || h === host);
  });
  const oldest = Math.min(...unlisted.map((o) => o.lastModified.getTime()));
  // The first manifest is written once the oldest object's upload hour is over, plus the grace.
  const due = floorHour(oldest) + HOUR_MS + DEFAULT_MANIFEST_GRACE_MS;
  if (unlisted.length === 0)
    return {
      reason: `nothing stored under ${what} yet: no object and no manifest (is the archive URL right?)`,
      objects: 0,
      verifiableAfter: null,
    };
  if (at.now < due + at.skew)
    return {
      reason:
        `${unlisted.length} object(s) stored under ${what} since ${new Date(oldest).toISOString()}, no manifest yet: ` +
        `the first is written when the hour closes, at ${new Date(due).toISOString()} (or when the sidecar stops)`,
      objects: unlisted.length,
      verifiableAfter: new Date(due).toISOString(),
    };
  findings.push({
    kind: "gap",
    key: joinKey(at.prefix, `${MANIFEST_DIR}/${host === undefined ? "" : `${host}/`}`),
    reason:
      `no manifest under ${what}, but objects are stored since ${new Date(oldest).toISOString()} and the first ` +
      `manifest was due at ${new Date(due).toISOString()}: manifests removed, or the sidecar cannot write them`,
  });
  return null;
}
