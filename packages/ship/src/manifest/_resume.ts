/** Where a journal picks its chain up again: the head's objects, or the bucket's newest own manifest. */

import type { S3Client } from "@aws-sdk/client-s3";
import { decodeManifest } from "./_format.ts";
import { floorHour, hourLabel, manifestFolder, parseManifestKey } from "./_keys.ts";
import { getBytes, listObjects, sha256Hex } from "./_s3.ts";
import { type ChainHead, readOutbox } from "./_state.ts";
import { type ManifestSigningKey, signatureProblem } from "./signing.ts";
import type { Manifest, ManifestLogger } from "./types.ts";

/** With a state dir lost, the newest manifests are read back until one signed by our key. */
const MAX_MANIFESTS_READ_BACK = 48;

/** The head manifest, from the bytes saved before its PUT, when they are its bytes. */
export async function headManifestFromOutbox(
  stateDir: string,
  head: ChainHead | null,
): Promise<Manifest | null> {
  if (!head) return null;
  const saved = await readOutbox(stateDir);
  if (!saved || sha256Hex(saved) !== head.sha256) return null;
  const m = decodeManifest(saved);
  return typeof m === "string" ? null : m;
}

/**
 * Why a manifest found at `key` cannot be continued from although its signature is good: it says
 * it is another host's, hour's or part's (a copy put at another key), or its hour has not begun.
 */
function misplaced(
  m: Manifest,
  at: { host: string; hourMs: number; sequence: number },
  now: number,
): string | null {
  if (m.host !== at.host || m.hour !== hourLabel(at.hourMs) || (m.sequence ?? 0) !== at.sequence)
    return `holds the manifest of host ${m.host} hour ${m.hour}${m.sequence ? ` part ${m.sequence}` : ""}: a copy put at another key`;
  if (at.hourMs > floorHour(now))
    return `is for hour ${m.hour}, which has not begun (the clock says ${new Date(now).toISOString()})`;
  return null;
}

/**
 * The newest manifest of the host in the bucket, as a chain head, or null when there is none.
 * With a signing key, the newest one signed by it whose host, hour and sequence are those of its
 * key and whose hour has begun: a manifest someone else put after it is skipped (and will be a
 * conflict when its hour closes), never continued from, and so is a copy of one of its own put at
 * another key or a future hour (`refused`); with none, the chain starts anew (verify shows where)
 * rather than continue from someone else's.
 */
export async function newestOwnInBucket(options: {
  client: S3Client;
  bucket: string;
  prefix: string;
  host: string;
  now: number;
  signingKey?: ManifestSigningKey | undefined;
  logger?: ManifestLogger | undefined;
}): Promise<{ head: ChainHead | null; refused: { key: string; reason: string }[] }> {
  const { client, bucket, prefix, host, signingKey } = options;
  const refused: { key: string; reason: string }[] = [];
  const keys = (await listObjects(client, bucket, manifestFolder(prefix, host)))
    .map((o) => ({ key: o.key, parsed: parseManifestKey(prefix, o.key) }))
    .filter((o) => o.parsed?.host === host)
    .sort(
      (a, b) =>
        (a.parsed?.hourMs ?? 0) - (b.parsed?.hourMs ?? 0) ||
        (a.parsed?.sequence ?? 0) - (b.parsed?.sequence ?? 0),
    );
  const trusted = signingKey ? new Map([[signingKey.keyId, signingKey.publicKey]]) : undefined;
  const skipped: string[] = [];
  for (const candidate of keys.reverse().slice(0, MAX_MANIFESTS_READ_BACK)) {
    if (!candidate.parsed) continue;
    const bytes = await getBytes(client, bucket, candidate.key);
    if (!bytes) continue;
    const m = decodeManifest(bytes);
    const head: ChainHead = {
      key: candidate.key,
      sha256: sha256Hex(bytes),
      hourMs: candidate.parsed.hourMs,
      sequence: candidate.parsed.sequence,
      partial: typeof m !== "string" && m.partial === true,
    };
    if (trusted && (typeof m === "string" || signatureProblem(m, trusted) !== null)) {
      skipped.push(candidate.key);
      continue;
    }
    const wrong = typeof m === "string" ? null : misplaced(m, candidate.parsed, options.now);
    if (wrong) {
      const reason = `${candidate.key} ${wrong}; not continued from`;
      refused.push({ key: candidate.key, reason });
      options.logger?.error(
        { manifest: candidate.key, reason },
        "a manifest in the bucket is not where it belongs: refused as the chain head (someone with the bucket's credentials copied it)",
      );
      continue;
    }
    if (skipped.length > 0)
      options.logger?.error(
        { skipped, continued: head.key },
        "newer manifests in the bucket are not signed by this sidecar's key: continuing from its own",
      );
    return { head, refused };
  }
  if (skipped.length > 0)
    options.logger?.error(
      { skipped },
      "no manifest in the bucket is signed by this sidecar's key: starting a new chain, not continuing someone else's",
    );
  return { head: null, refused };
}
