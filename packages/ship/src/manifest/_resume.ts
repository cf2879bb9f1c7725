/** Where a journal picks its chain up again: the head's objects, or the bucket's newest own manifest. */

import type { S3Client } from "@aws-sdk/client-s3";
import { decodeManifest } from "./_format.ts";
import { manifestFolder, parseManifestKey } from "./_keys.ts";
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
 * The newest manifest of the host in the bucket, as a chain head, or null when there is none.
 * With a signing key, the newest one signed by it: a manifest someone else put after it is
 * skipped (and will be a conflict when its hour closes), never continued from; with none signed
 * by it, the chain starts anew (verify shows where) rather than continue from someone else's.
 */
export async function newestOwnInBucket(options: {
  client: S3Client;
  bucket: string;
  prefix: string;
  host: string;
  signingKey?: ManifestSigningKey | undefined;
  logger?: ManifestLogger | undefined;
}): Promise<ChainHead | null> {
  const { client, bucket, prefix, host, signingKey } = options;
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
    if (skipped.length > 0)
      options.logger?.error(
        { skipped, continued: head.key },
        "newer manifests in the bucket are not signed by this sidecar's key: continuing from its own",
      );
    return head;
  }
  if (skipped.length > 0)
    options.logger?.error(
      { skipped },
      "no manifest in the bucket is signed by this sidecar's key: starting a new chain, not continuing someone else's",
    );
  return null;
}
