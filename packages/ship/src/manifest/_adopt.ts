/** A manifest found at the key the journal was about to write: its own (adopted), or a conflict. */

import type { S3Client } from "@aws-sdk/client-s3";
import { decodeManifest } from "./_format.ts";
import { getBytes, sha256Hex } from "./_s3.ts";
import { ManifestError, ManifestErrorCode } from "./errors.ts";
import { type ManifestSigningKey, signatureProblem } from "./signing.ts";
import type { ChainRecord, Manifest, ManifestLink, ManifestLogger } from "./types.ts";

/** What the journal means to write at a key: the manifest there must say the same. */
export interface WantedManifest {
  host: string;
  hour: string;
  sequence: number;
  partial: boolean;
  previous: ManifestLink | null;
  chain?: ChainRecord | undefined;
}

const sameLink = (a: ManifestLink | null, b: ManifestLink | null): boolean =>
  a === null ? b === null : b !== null && a.key === b.key && a.sha256 === b.sha256;

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.byteLength === b.byteLength && Buffer.from(a).equals(Buffer.from(b));

/** Whether `m` is the manifest wanted; its chain record too, unless `compareChain` is false. */
export function isWanted(m: Manifest, w: WantedManifest, compareChain = true): boolean {
  return (
    m.host === w.host &&
    m.hour === w.hour &&
    (m.sequence ?? 0) === w.sequence &&
    (m.partial === true) === w.partial &&
    (!compareChain || m.chain === w.chain) &&
    sameLink(m.previous, w.previous)
  );
}

/**
 * The manifest at `key` exists already. Adopted only when it is what this journal wrote: the
 * bytes saved before the PUT (a crash between the PUT and saving the head), or a manifest signed
 * by its own key that continues the chain (whatever its chain record). Anything else throws
 * AUDITPIPE_ERR_MANIFEST_CONFLICT, to be reported and never continued from.
 */
export async function adoptManifest(input: {
  client: S3Client;
  bucket: string;
  key: string;
  /** The bytes this journal meant to write there. */
  body: Uint8Array;
  wanted: WantedManifest;
  signingKey: ManifestSigningKey | undefined;
  logger: ManifestLogger;
}): Promise<{ sha256: string; manifest: Manifest }> {
  const { key, signingKey: signer, logger } = input;
  const bytes = await getBytes(input.client, input.bucket, key);
  const existing = bytes ? decodeManifest(bytes) : "gone again";
  if (bytes && typeof existing !== "string") {
    if (sameBytes(bytes, input.body)) {
      logger.warn({ manifest: key }, "manifest already written before a restart: adopted (same bytes)");
      return { sha256: sha256Hex(bytes), manifest: existing };
    }
    const ownSigned =
      signer !== undefined &&
      existing.keyId === signer.keyId &&
      signatureProblem(existing, new Map([[signer.keyId, signer.publicKey]])) === null;
    if (ownSigned && isWanted(existing, { ...input.wanted, partial: existing.partial === true }, false)) {
      logger.warn(
        { manifest: key, keyId: signer.keyId },
        "manifest already written before a restart: adopted (signed by this sidecar's key)",
      );
      return { sha256: sha256Hex(bytes), manifest: existing };
    }
  }
  throw new ManifestError(
    ManifestErrorCode.CONFLICT,
    `${key} is in the bucket but is not what this sidecar wrote (neither the bytes it saved nor ` +
      `signed by its key${signer ? ` ${signer.keyId}` : ": no signing key configured"}); ` +
      "not continued from: a forged manifest, another writer with the same host, or a state dir from another archive",
  );
}
