/**
 * Tamper evidence: every hour the sidecar writes a manifest listing the objects it stored in
 * that hour, chained to the previous manifest by SHA-256. See docs/archive.md#tamper-evidence and
 * docs/archive.md#manifest-format.
 */

import type { UploadedObject } from "../sinks/s3/config.ts";

/**
 * What the S3 sink reports (`onUploaded`) for each object the store acknowledged, before its
 * write() resolves: the sink's own type, so the two cannot drift apart.
 */
export type { UploadedObject };

/** The manifest format this version writes. */
export const MANIFEST_VERSION = 2;
/** The versions it reads (and verifies): old archives keep verifying. */
export const MANIFEST_VERSIONS: readonly ManifestVersion[] = [1, 2];
/**
 * 1: objects only. 2: adds the chain records (`chain`, `run`), `supersedes` on an object,
 * `coverage` and `compacted`, and signs under the `auditpipe-manifest-v2` domain.
 */
export type ManifestVersion = 1 | 2;

/** A link in the chain: the previous manifest's key and the SHA-256 (hex) of its exact bytes. */
export interface ManifestLink {
  key: string;
  sha256: string;
}

/** The process that wrote a manifest (v2): one run of the sidecar, from its start to its stop. */
export interface ManifestRun {
  /** Random, new at every start: the manifests of one run share it. */
  id: string;
  /** When the run started (ISO 8601). */
  startedAt: string;
  /** The auditpipe version that ran. */
  version: string;
}

/**
 * A chain record (v2). `open`: the first manifest of a run, written (signed) before any upload of
 * that run: objects stored after the previous run's `close` and before this are not the
 * sidecar's. `close`: the manifest a clean stop writes, after the last upload: nothing stored
 * under the host's keys after it is the sidecar's until the next `open`.
 */
export type ChainRecord = "open" | "close";

/** A log source followed in the hour (a file, or the syslog journal). */
export interface CoverageSource {
  sourceId: string;
  sourceName: string;
  /** csvlog, jsonlog, stderr, syslog. */
  format?: string;
}

/** A byte range of a source given up unread (deleted, truncated or replaced before it was read). */
export interface CoverageGap {
  sourceId?: string;
  sourceName: string;
  start: number;
  /** Exclusive; a lower bound where the true end cannot be known (`reason` says so). */
  end: number;
  reason: string;
  /** When it was found (ISO 8601). */
  at: string;
}

/**
 * A PostgreSQL server start, stop or crash (a server process terminated by a signal or exit code:
 * every session ended, and the server restarts) seen in the log: audit entries cannot exist while
 * it is down.
 */
export interface CoverageServerEvent {
  event: "start" | "stop" | "crash";
  /** The log record's time (ISO 8601), as PostgreSQL wrote it. */
  at: string;
  sourceName: string;
  offset: number;
}

/** An audit setting changed (pgaudit.log, log_line_prefix, log_destination…), as the log shows it. */
export interface CoverageSettingChange {
  setting: string;
  /** The new value, when the log says it (absent: RESET, or back to the default). */
  value?: string;
  /**
   * How it changed: `reload` (the postmaster's message after a SIGHUP: the server's setting),
   * `set`/`reset` (one session), `alter-system`, `alter-role`, `alter-database` (from the next
   * reload, login or session).
   */
  via?: string;
  at: string;
  sourceName: string;
  offset: number;
}

/** Syslog messages that could not be completed (a chunk missing), per listener. */
export interface CoverageIncompleteSyslog {
  listener: string;
  messages: number;
  at: string;
}

/**
 * What the hour's audit trail covers besides the objects (v2), so a reader can tell "nothing was
 * audited" from "nothing was read". Each member appears when the hour has such events, in the
 * order they were recorded.
 */
export interface ManifestCoverage {
  sources?: CoverageSource[];
  gaps?: CoverageGap[];
  serverEvents?: CoverageServerEvent[];
  settingChanges?: CoverageSettingChange[];
  incompleteSyslog?: CoverageIncompleteSyslog[];
}

/** One coverage event, as `ManifestJournal.recordCoverage` takes it. */
export type CoverageEvent =
  | ({ kind: "source" } & CoverageSource)
  | ({ kind: "gap" } & CoverageGap)
  | ({ kind: "server" } & CoverageServerEvent)
  | ({ kind: "setting" } & CoverageSettingChange)
  | ({ kind: "incomplete-syslog" } & CoverageIncompleteSyslog);

/** A landing object a compacted file was made from. */
export interface CompactedSource {
  key: string;
  sha256: string;
}

/** A Parquet file made from landing objects (v2), as `ManifestJournal.recordCompaction` takes it. */
export interface CompactedFile {
  /** The file's key, prefix included. */
  key: string;
  /** SHA-256 (hex) of the stored bytes. */
  sha256: string;
  size: number;
  rows: number;
  /** A digest of the rows, in an order the compactor defines (checked against the sources later). */
  rowsDigest?: string;
  /** The landing objects it holds, with the SHA-256 each had when it was read. */
  sources: CompactedSource[];
  /** The entry hour the file covers (`YYYY-MM-DDTHH`, UTC). */
  hour: string;
  /** The version the store gave it, on a versioned bucket. */
  versionId?: string;
  /**
   * An announced rewrite (`ManifestJournal.announceCompaction`): the SHA-256 of the file the key
   * holds until this one is stored (an hour compacted anew); verify takes either while this is
   * the key's newest listing. The file's own listing, once stored, comes later without it.
   */
  supersedes?: string;
}

/**
 * An object the sidecar's self-check found under its own keys that it did not write (v2): signed
 * into the chain at once, so verify reports it (`extra`) without waiting for the hour to end.
 */
export interface ForeignObject {
  key: string;
  /** When the store says it was stored (ISO 8601). */
  storedAt: string;
  /** When the self-check found it (ISO 8601). */
  seenAt: string;
}

/** One hour's manifest, stored as JSON at `<prefix>/_manifests/<host>/<YYYY-MM-DDTHH>[.<sequence>].json`. */
export interface Manifest {
  version: ManifestVersion;
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
  /** Sums over `objects` (and, when there are any, `compacted`). */
  totals: ManifestTotals;
  /**
   * The manifest's place within its hour, when the hour has several: 0 (left out) for the first;
   * a stop (or a start) writes the open hour's manifest early (`partial`), and the rest of the
   * hour follows as sequence 1, 2… at `<hour>.<sequence>.json`.
   */
  sequence?: number;
  /** Written before the hour ended: more of the hour follows. */
  partial?: true;
  /** v2: a run's first (`open`) or last (`close`) manifest. */
  chain?: ChainRecord;
  /** v2: the run that wrote it. */
  run?: ManifestRun;
  /** v2: what the hour's trail covers. */
  coverage?: ManifestCoverage;
  /** v2: Parquet files recorded in the hour. */
  compacted?: CompactedFile[];
  /** v2: objects under this host's keys its self-check found it did not write. */
  foreign?: ForeignObject[];
  /** The signing key's id (`ed25519:…`); signed with the rest. */
  keyId?: string;
  /** Ed25519 signature (base64) over the manifest without this field. Last in the bytes. */
  signature?: string;
}

export interface ManifestTotals {
  objects: number;
  entries: number;
  bytes: number;
  /** v2, with `compacted`: files, rows and bytes. */
  compacted?: { files: number; rows: number; bytes: number };
}

/** The small logger interface the journal needs (pino fits). */
export interface ManifestLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
