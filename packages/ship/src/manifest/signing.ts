/**
 * Ed25519 signatures over manifests: the chain proves order, the signature proves who wrote it.
 * The private key lives with the sidecar (its state dir, or a file the operator gives), never in
 * the bucket; the auditor keeps the public key. See docs/archive.md#signed-manifests.
 */

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import { access, readFile } from "node:fs/promises";
import { writeFileDurably } from "../durable-write.ts";
import { ManifestError, ManifestErrorCode } from "./errors.ts";
import type { Manifest } from "./types.ts";

/** A key that signs manifests: the private half and its id. */
export interface ManifestSigningKey {
  /** `ed25519:<first 16 hex digits of the SHA-256 of the public key's DER (SPKI)>`. */
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/**
 * Signed bytes start with the domain of the manifest's version (`auditpipe-manifest-v2\n`), so a
 * signature cannot be replayed as anything else, nor a manifest read under another version.
 */
const signingContext = (version: number): string => `auditpipe-manifest-v${version}\n`;

/** The id a manifest names its key by: stable for a key, different across keys. */
export function manifestKeyId(publicKey: KeyObject): string {
  const der = publicKey.export({ type: "spki", format: "der" });
  return `ed25519:${createHash("sha256").update(der).digest("hex").slice(0, 16)}`;
}

/** The bytes a signature covers: the manifest as encoded, without its `signature` field. */
export function signingBytes(manifest: Manifest): Uint8Array {
  const { signature: _omitted, ...unsigned } = manifest;
  return new TextEncoder().encode(
    `${signingContext(manifest.version)}${JSON.stringify(unsigned, null, 2)}\n`,
  );
}

export function signManifest(manifest: Manifest, key: ManifestSigningKey): string {
  return sign(null, signingBytes(manifest), key.privateKey).toString("base64");
}

/** Why a manifest's signature is not a valid one by a trusted key, or null when it is. */
export function signatureProblem(
  manifest: Manifest,
  trusted: ReadonlyMap<string, KeyObject>,
): { kind: "unsigned" | "bad-signature"; reason: string } | null {
  if (manifest.signature === undefined || manifest.keyId === undefined)
    return { kind: "unsigned", reason: "carries no signature" };
  const key = trusted.get(manifest.keyId);
  if (!key)
    return {
      kind: "bad-signature",
      reason: `signed by key ${manifest.keyId}, which is not a trusted key`,
    };
  let ok = false;
  try {
    ok = verify(null, signingBytes(manifest), key, Buffer.from(manifest.signature, "base64"));
  } catch {
    ok = false;
  }
  return ok
    ? null
    : { kind: "bad-signature", reason: `the signature does not verify with key ${manifest.keyId}` };
}

function keyError(path: string, what: string): ManifestError {
  return new ManifestError(ManifestErrorCode.KEY, `${path}: ${what}`);
}

/** The signing key in a PEM file (PKCS#8 Ed25519, as `openssl genpkey -algorithm ed25519` writes). */
export async function loadSigningKey(path: string): Promise<ManifestSigningKey> {
  let pem: string;
  try {
    pem = await readFile(path, "utf8");
  } catch (error) {
    throw keyError(path, `cannot read the manifest signing key (${(error as NodeJS.ErrnoException).code})`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw keyError(path, "not a PEM private key (expected `openssl genpkey -algorithm ed25519`)");
  }
  if (privateKey.asymmetricKeyType !== "ed25519")
    throw keyError(path, `a ${privateKey.asymmetricKeyType} key; manifests are signed with Ed25519`);
  const publicKey = createPublicKey(privateKey);
  return { keyId: manifestKeyId(publicKey), privateKey, publicKey };
}

/**
 * The signing key at `path`, created (mode 0600, its public key beside it as `<path>.pub`) when
 * there is none: so a sidecar signs from its first manifest on without a set-up step.
 */
export async function loadOrCreateSigningKey(
  path: string,
): Promise<{ key: ManifestSigningKey; created: boolean }> {
  try {
    await access(path);
    return { key: await loadSigningKey(path), created: false };
  } catch (error) {
    if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const pair = generateKeyPairSync("ed25519");
  const pem = pair.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  // Created 0600 in the first place: the private key is never readable by others, not even briefly.
  await writeFileDurably(path, pem, { mode: 0o600 });
  await writeFileDurably(`${path}.pub`, pair.publicKey.export({ type: "spki", format: "pem" }) as string);
  return { key: await loadSigningKey(path), created: true };
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g;

/**
 * Trusted public keys by key id, from PEM text: one or several `PUBLIC KEY` blocks (a rotation
 * keeps the old key beside the new one). A private key is accepted too (its public half is used).
 */
export function parsePublicKeys(pem: string, source: string): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const block of pem.match(PEM_BLOCK) ?? []) {
    let key: KeyObject;
    try {
      key = createPublicKey(block);
    } catch {
      throw keyError(source, "holds a PEM block that is not a key");
    }
    if (key.asymmetricKeyType !== "ed25519")
      throw keyError(source, `holds a ${key.asymmetricKeyType} key; manifests are signed with Ed25519`);
    keys.set(manifestKeyId(key), key);
  }
  if (keys.size === 0) throw keyError(source, "holds no PEM public key (-----BEGIN PUBLIC KEY-----)");
  return keys;
}
