import type { KeyObject } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import type { CompactedFile } from "./types.ts";

/**
 * What verify can find:
 * - `missing`: listed in a manifest, not in the bucket;
 * - `altered`: in the bucket, but its SHA-256 is not the one listed;
 * - `extra`: in the bucket, stored within the verified hours, but in no manifest;
 * - `reordered`: a manifest's contents or links do not fit its place in the chain;
 * - `broken-chain`: a manifest's `previous` hash does not match the previous manifest's bytes,
 *   a second chain start, or a manifest that cannot be read;
 * - `gap`: a manifest is missing (removed) from the chain;
 * - `fork`: two manifests claim the same previous;
 * - `unsigned`: with trusted keys, a manifest without a signature;
 * - `bad-signature`: with trusted keys, a signature that does not verify or names an untrusted key;
 * - `overwritten`: on a versioned bucket, the object's newest version is not the one the sidecar stored;
 * - `gone`: a host's chain has no close record and has covered nothing for longer than the limit:
 *   what it stored after its newest manifest cannot be verified.
 */
export type FindingKind =
  | "missing"
  | "altered"
  | "extra"
  | "reordered"
  | "broken-chain"
  | "gap"
  | "fork"
  | "unsigned"
  | "bad-signature"
  | "overwritten"
  | "gone";

export const FINDING_KINDS: readonly FindingKind[] = [
  "missing",
  "altered",
  "extra",
  "reordered",
  "broken-chain",
  "gap",
  "fork",
  "unsigned",
  "bad-signature",
  "overwritten",
  "gone",
];

export interface VerifyFinding {
  kind: FindingKind;
  /** The object or manifest the finding is about. */
  key: string;
  /** The manifest that lists the object, or links to what is wrong. */
  manifest?: string;
  /** For people: what was expected and what was found. */
  reason: string;
  /** `gone`: the objects stored after the host's newest manifest, left unverified. */
  objects?: string[];
}

/** A listed landing object gone from the bucket because it was dropped after compaction (retention). */
export interface DroppedObject {
  key: string;
  /** The compacted file whose newest signed listing names it as a source, stored intact. */
  into: string;
  /** The manifest that lists the landing object. */
  manifest: string;
}

export interface VerifyOptions {
  /** Client for the archive's bucket; credentials as the caller resolves them. */
  client: S3Client;
  bucket: string;
  /** The archive's key prefix (the sink's). */
  prefix: string;
  /** Verify one host's chain; default every host under `_manifests/`. */
  host?: string;
  /** Verify the hours from this instant's hour on (manifest hours are upload hours, UTC). */
  from?: Date;
  /** … up to the hour holding this instant (inclusive). */
  to?: Date;
  /** Objects stored this close to the end of the last manifest are "pending", not "extra" (clock skew); default 5 min. */
  clockSkewMs?: number;
  /**
   * A host whose chain has no close record and covers nothing for this long is `gone` (a finding)
   * instead of pending; default 2 h (a running sidecar writes a manifest every hour).
   */
  goneAfterMs?: number;
  /** Objects downloaded and hashed at once; default 4. */
  concurrency?: number;
  /**
   * Public keys the manifests must be signed by, by key id (`parsePublicKeys`). When given, a
   * verified manifest without a valid signature by one of them is a finding; when not, signatures
   * are not checked (and the report says so).
   */
  trustedKeys?: ReadonlyMap<string, KeyObject>;
  /** The verifier's clock, for what is still pending; tests inject one. */
  now?: () => Date;
  /**
   * A deeper check of each listed compacted file whose bytes are intact (its rows against the
   * landing objects it came from: `auditpipe verify` rebuilds them with `@auditpipe/compact`);
   * its findings are reported with the rest. Not given: compacted files are checked by SHA-256 only.
   */
  checkCompacted?: (file: CompactedFile) => Promise<VerifyFinding[]>;
}

/**
 * Why nothing could be verified yet: no manifest exists for the archive (or host), and no hour
 * with an upload has closed yet (the first manifest is written after the hour + grace).
 */
export interface NothingToVerify {
  reason: string;
  /** Objects stored so far (all pending). */
  objects: number;
  /** When the first manifest is due (ISO 8601), or null when nothing is stored. */
  verifiableAfter: string | null;
}

export interface VerifiedChain {
  host: string;
  /** Manifests verified (in range). */
  manifests: number;
  /** First and last verified hour, `YYYY-MM-DDTHH` (UTC), or null when none. */
  first: string | null;
  last: string | null;
  /** The newest manifest of the chain, in range or not. */
  head: string | null;
  /**
   * `closed`: its newest manifest is a clean stop's close record, nothing after it is the host's;
   * `open`: a running sidecar, objects after `coveredUntil` are pending until its next manifest;
   * `gone`: open, but silent past the limit (a finding). Absent when no manifest is in range.
   */
  state?: "closed" | "open" | "gone";
  /** Until when the newest manifest covers uploads (ISO 8601). */
  coveredUntil?: string;
  /** Objects of this host pending its next manifest. */
  pending?: number;
}

export interface VerifyReport {
  /** No finding. */
  ok: boolean;
  bucket: string;
  prefix: string;
  chains: VerifiedChain[];
  /** The verified hours: start of the first to end of the last (ISO 8601), or null when none. */
  range: { from: string; to: string } | null;
  /** Manifests verified. */
  manifests: number;
  /** Distinct objects downloaded and hashed (a key listed twice counts once). */
  objects: number;
  /** Entries in those objects, as the manifests list them. */
  entries: number;
  /** Bytes hashed. */
  bytes: number;
  /**
   * Objects no manifest lists yet, stored after the newest manifest of a host whose chain is open
   * (running): its next manifest lists them, or they become `extra`. Never a listed object; never
   * under a closed chain (then `extra`) nor a gone one (then in the `gone` finding).
   */
  pending: string[];
  /**
   * Listed landing objects that are gone because they were dropped after compaction (`auditpipe
   * compact --drop-landing`): an intact compacted file's signed listing names each (key and
   * SHA-256), so its rows are checked through that file. Not findings. A landing object gone
   * whose compacted file is gone or altered too is `missing`.
   */
  dropped: DroppedObject[];
  /**
   * When the manifest listing the last pending object is due (ISO 8601: the end of its upload
   * hour plus the 5-minute grace; sooner if the sidecar stops), or null when nothing is pending.
   */
  pendingVerifiableAfter: string | null;
  counts: Record<FindingKind, number>;
  findings: VerifyFinding[];
  /** Whether manifest signatures were checked against trusted keys. */
  signatures: "verified" | "not checked";
  /** Set when there is nothing to verify yet (then `ok` is false and there is no finding). */
  nothingToVerify: NothingToVerify | null;
}
