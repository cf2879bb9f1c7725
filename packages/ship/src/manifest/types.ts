/**
 * Tamper evidence: every hour the sidecar writes a manifest listing the objects it stored in
 * that hour, chained to the previous manifest by SHA-256. See docs/archive.md#tamper-evidence.
 */

import type { UploadedObject } from "../sinks/s3/config.ts";

/**
 * What the S3 sink reports (`onUploaded`) for each object the store acknowledged, before its
 * write() resolves: the sink's own type, so the two cannot drift apart.
 */
export type { UploadedObject };

/** The manifest format's version; a reader refuses versions it does not know. */
export const MANIFEST_VERSION = 1;

/** A link in the chain: the previous manifest's key and the SHA-256 (hex) of its exact bytes. */
export interface ManifestLink {
  key: string;
  sha256: string;
}

/** One hour's manifest, stored as JSON at `<prefix>/_manifests/<host>/<YYYY-MM-DDTHH>.json`. */
export interface Manifest {
  version: typeof MANIFEST_VERSION;
  /** The sidecar that stored the objects (the `<host>` of the object keys). */
  host: string;
  /** The UTC hour the objects were stored in (upload time, not entry time): `YYYY-MM-DDTHH`. */
  hour: string;
  /** When the manifest was written (ISO 8601). */
  created: string;
  /** The manifest of the hour before, or null for the first manifest of the chain. */
  previous: ManifestLink | null;
  /** Objects stored in the hour, in upload order. A key stored twice (a replay) is listed twice. */
  objects: UploadedObject[];
  /** Sums over `objects`. */
  totals: { objects: number; entries: number; bytes: number };
  /**
   * The manifest's place within its hour, when the hour has several: 0 (left out) for the first;
   * a stop writes the open hour's manifest early (`partial`), and the rest of the hour follows
   * as sequence 1, 2… at `<hour>.<sequence>.json`.
   */
  sequence?: number;
  /** Written before the hour ended (the sidecar stopped): more of the hour may follow. */
  partial?: true;
  /** The signing key's id (`ed25519:…`); signed with the rest. */
  keyId?: string;
  /** Ed25519 signature (base64) over the manifest without this field. Last in the bytes. */
  signature?: string;
}

/** The small logger interface the journal needs (pino fits). */
export interface ManifestLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
