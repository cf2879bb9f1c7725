import { hourLabel, parseHourLabel } from "./_keys.ts";
import { type ManifestSigningKey, signManifest } from "./signing.ts";
import {
  type ChainRecord,
  type CompactedFile,
  type CoverageEvent,
  type ForeignObject,
  MANIFEST_VERSION,
  MANIFEST_VERSIONS,
  type Manifest,
  type ManifestCoverage,
  type ManifestLink,
  type ManifestRun,
  type ManifestTotals,
  type UploadedObject,
} from "./types.ts";

/** What one manifest says, before it is encoded. */
export interface ManifestContent {
  host: string;
  hourMs: number;
  created: Date;
  previous: ManifestLink | null;
  objects: UploadedObject[];
  /** Place within the hour; 0 for the first. */
  sequence?: number;
  /** Written before the hour ended. */
  partial?: boolean;
  chain?: ChainRecord;
  run?: ManifestRun;
  coverage?: ManifestCoverage;
  compacted?: CompactedFile[];
  foreign?: ForeignObject[];
  /** Signs the manifest when given. */
  signer?: ManifestSigningKey;
}

/** The manifest of one hour (or of a part of it), as the bytes that are stored and hashed. */
export function encodeManifest(input: ManifestContent): Uint8Array {
  const compacted = (input.compacted ?? []).map(copyCompacted);
  const coverage = input.coverage ? copyCoverage(input.coverage) : undefined;
  const totals: ManifestTotals = {
    objects: input.objects.length,
    entries: input.objects.reduce((n, o) => n + o.entries, 0),
    bytes: input.objects.reduce((n, o) => n + o.size, 0),
    ...(compacted.length > 0
      ? {
          compacted: {
            files: compacted.length,
            rows: compacted.reduce((n, f) => n + f.rows, 0),
            bytes: compacted.reduce((n, f) => n + f.size, 0),
          },
        }
      : {}),
  };
  const manifest: Manifest = {
    version: MANIFEST_VERSION,
    host: input.host,
    hour: hourLabel(input.hourMs),
    created: input.created.toISOString(),
    previous: input.previous,
    objects: input.objects.map(copyObject),
    totals,
    ...(input.sequence ? { sequence: input.sequence } : {}),
    ...(input.partial ? { partial: true as const } : {}),
    ...(input.chain ? { chain: input.chain } : {}),
    ...(input.run
      ? { run: { id: input.run.id, startedAt: input.run.startedAt, version: input.run.version } }
      : {}),
    ...(coverage ? { coverage } : {}),
    ...(compacted.length > 0 ? { compacted } : {}),
    ...(input.foreign?.length
      ? { foreign: input.foreign.map((f) => ({ key: f.key, storedAt: f.storedAt, seenAt: f.seenAt })) }
      : {}),
    ...(input.signer ? { keyId: input.signer.keyId } : {}),
  };
  if (input.signer) manifest.signature = signManifest(manifest, input.signer);
  return new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`);
}

/** A fixed field order, and nothing the sink may have added beyond the contract. */
function copyObject(o: UploadedObject): UploadedObject {
  const { sourceId, sourceName, start, end } = o.range;
  return {
    key: o.key,
    sha256: o.sha256,
    size: o.size,
    entries: o.entries,
    range: { sourceId, sourceName, start, end },
    contentEncoding: o.contentEncoding,
    uploadedAt: o.uploadedAt,
    ...(o.versionId === undefined ? {} : { versionId: o.versionId }),
    ...(o.supersedes === undefined ? {} : { supersedes: o.supersedes }),
  };
}

function copyCompacted(f: CompactedFile): CompactedFile {
  return {
    key: f.key,
    sha256: f.sha256,
    size: f.size,
    rows: f.rows,
    ...(f.rowsDigest === undefined ? {} : { rowsDigest: f.rowsDigest }),
    sources: f.sources.map((s) => ({ key: s.key, sha256: s.sha256 })),
    hour: f.hour,
    ...(f.versionId === undefined ? {} : { versionId: f.versionId }),
    ...(f.supersedes === undefined ? {} : { supersedes: f.supersedes }),
  };
}

/** The coverage member each kind of event goes to. */
const COVERAGE_MEMBER = {
  source: "sources",
  gap: "gaps",
  server: "serverEvents",
  setting: "settingChanges",
  "incomplete-syslog": "incompleteSyslog",
} as const satisfies Record<CoverageEvent["kind"], keyof ManifestCoverage>;

/** Events as a manifest's `coverage`: grouped by member in recording order, `kind` dropped. */
export function coverageOf(events: readonly CoverageEvent[]): ManifestCoverage | undefined {
  const grouped: Record<string, unknown[]> = {};
  for (const { kind, ...fields } of events) {
    const member = COVERAGE_MEMBER[kind];
    grouped[member] = [...(grouped[member] ?? []), fields];
  }
  return copyCoverage(grouped as ManifestCoverage);
}

/** One id per event of a coverage object: equal for the same event however it was written. */
export function coverageEventIds(c: ManifestCoverage | undefined): string[] {
  const ids: string[] = [];
  for (const [member, events] of Object.entries(copyCoverage(c ?? {}) ?? {}))
    for (const e of events as unknown[]) ids.push(`${member}:${JSON.stringify(e)}`);
  return ids;
}

/** Why a coverage event cannot go into a manifest, or null when it can. */
export function coverageEventProblem(event: CoverageEvent): string | null {
  if (!isRecord(event) || !(event.kind in COVERAGE_MEMBER))
    return `kind must be one of ${Object.keys(COVERAGE_MEMBER).join(", ")}`;
  const { kind, ...fields } = event;
  const member = COVERAGE_MEMBER[kind];
  return COVERAGE_EVENT[member](fields) ? null : `a ${kind} event needs the fields of coverage.${member}`;
}

/** Only the members with events, each event with its fields in a fixed order. */
function copyCoverage(c: ManifestCoverage): ManifestCoverage | undefined {
  const out: ManifestCoverage = {};
  const opt = <K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } =>
    (value === undefined ? {} : { [key]: value }) as { [k in K]?: V };
  if (c.sources?.length)
    out.sources = c.sources.map((s) => ({
      sourceId: s.sourceId,
      sourceName: s.sourceName,
      ...opt("format", s.format),
    }));
  if (c.gaps?.length)
    out.gaps = c.gaps.map((g) => ({
      ...opt("sourceId", g.sourceId),
      sourceName: g.sourceName,
      start: g.start,
      end: g.end,
      reason: g.reason,
      at: g.at,
    }));
  if (c.serverEvents?.length)
    out.serverEvents = c.serverEvents.map((e) => ({
      event: e.event,
      at: e.at,
      sourceName: e.sourceName,
      offset: e.offset,
    }));
  if (c.settingChanges?.length)
    out.settingChanges = c.settingChanges.map((e) => ({
      setting: e.setting,
      ...opt("value", e.value),
      ...opt("via", e.via),
      at: e.at,
      sourceName: e.sourceName,
      offset: e.offset,
    }));
  if (c.incompleteSyslog?.length)
    out.incompleteSyslog = c.incompleteSyslog.map((e) => ({
      listener: e.listener,
      messages: e.messages,
      at: e.at,
    }));
  return Object.keys(out).length > 0 ? out : undefined;
}

const isString = (v: unknown): v is string => typeof v === "string";
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isHex64 = (v: unknown): v is string => isString(v) && /^[0-9a-f]{64}$/.test(v);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || check(v);

function isObjectEntry(v: unknown): v is UploadedObject {
  if (!isRecord(v)) return false;
  const r = v.range;
  return (
    isString(v.key) &&
    isHex64(v.sha256) &&
    isCount(v.size) &&
    isCount(v.entries) &&
    isRecord(r) &&
    isString(r.sourceId) &&
    isString(r.sourceName) &&
    isCount(r.start) &&
    isCount(r.end) &&
    isString(v.contentEncoding) &&
    isString(v.uploadedAt) &&
    optional(v.versionId, isString) &&
    optional(v.supersedes, isHex64)
  );
}

/** Whether `v` has every field of a compacted file, with the types the format says. */
export function isCompactedFile(v: unknown): v is CompactedFile {
  if (!isRecord(v)) return false;
  return (
    isString(v.key) &&
    isHex64(v.sha256) &&
    isCount(v.size) &&
    isCount(v.rows) &&
    optional(v.rowsDigest, isString) &&
    Array.isArray(v.sources) &&
    v.sources.every((s) => isRecord(s) && isString(s.key) && isHex64(s.sha256)) &&
    isString(v.hour) &&
    parseHourLabel(v.hour) !== null &&
    optional(v.versionId, isString) &&
    optional(v.supersedes, isHex64)
  );
}

/** Each coverage member: an array of events whose fields have the types the format says. */
const COVERAGE_EVENT: Record<keyof ManifestCoverage, (e: Record<string, unknown>) => boolean> = {
  sources: (e) => isString(e.sourceId) && isString(e.sourceName) && optional(e.format, isString),
  gaps: (e) =>
    optional(e.sourceId, isString) &&
    isString(e.sourceName) &&
    isCount(e.start) &&
    isCount(e.end) &&
    isString(e.reason) &&
    isString(e.at),
  serverEvents: (e) =>
    (e.event === "start" || e.event === "stop" || e.event === "crash") &&
    isString(e.at) &&
    isString(e.sourceName) &&
    isCount(e.offset),
  settingChanges: (e) =>
    isString(e.setting) &&
    optional(e.value, isString) &&
    optional(e.via, isString) &&
    isString(e.at) &&
    isString(e.sourceName) &&
    isCount(e.offset),
  incompleteSyslog: (e) => isString(e.listener) && isCount(e.messages) && isString(e.at),
};

/** Why `v` is not a coverage object, or null when it is one. */
function coverageProblem(v: unknown): string | null {
  if (!isRecord(v)) return "coverage is not an object";
  for (const [member, events] of Object.entries(v)) {
    const check = COVERAGE_EVENT[member as keyof ManifestCoverage];
    if (!check) return `coverage.${member} is not a coverage member`;
    if (!Array.isArray(events) || !events.every((e) => isRecord(e) && check(e)))
      return `coverage.${member} malformed`;
  }
  return null;
}

const isRun = (v: unknown): v is ManifestRun =>
  isRecord(v) && isString(v.id) && isString(v.startedAt) && isString(v.version);

/** Whether `v` names an object found under the host's keys, with when. */
export function isForeignObject(v: unknown): v is ForeignObject {
  return isRecord(v) && isString(v.key) && isString(v.storedAt) && isString(v.seenAt);
}

/** Fields a version 1 manifest cannot have. */
const V2_FIELDS = ["chain", "run", "coverage", "compacted", "foreign"] as const;

/**
 * Parses stored manifest bytes (version 1 or 2); a string saying what is wrong when they are
 * not a manifest. Every field the format defines is checked, so what verify reads is what the
 * signature covers.
 */
export function decodeManifest(bytes: Uint8Array): Manifest | string {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "not JSON";
  }
  if (!isRecord(value)) return "not a JSON object";
  const m = value as Partial<Record<keyof Manifest, unknown>>;
  if (!MANIFEST_VERSIONS.includes(m.version as never))
    return `unknown manifest version ${JSON.stringify(m.version)}`;
  if (!isString(m.host) || !isString(m.hour) || !isString(m.created)) return "host, hour or created missing";
  const p = m.previous;
  if (p !== null && !(isRecord(p) && isString(p.key) && isHex64(p.sha256)))
    return "previous is neither null nor {key, sha256}";
  if (!Array.isArray(m.objects) || !m.objects.every(isObjectEntry)) return "objects malformed";
  if (m.sequence !== undefined && !(isCount(m.sequence) && m.sequence > 0)) return "sequence malformed";
  if (m.partial !== undefined && m.partial !== true) return "partial malformed";
  if ((m.keyId !== undefined || m.signature !== undefined) && !(isString(m.keyId) && isString(m.signature)))
    return "keyId and signature go together";
  if (m.version === 1) {
    const v2 = V2_FIELDS.find((f) => m[f] !== undefined);
    if (v2) return `${v2} in a version 1 manifest`;
    if (m.objects.some((o) => (o as UploadedObject).supersedes !== undefined))
      return "supersedes in a version 1 manifest";
    return value as unknown as Manifest;
  }
  if (m.chain !== undefined && m.chain !== "open" && m.chain !== "close") return "chain malformed";
  if (m.run !== undefined && !isRun(m.run)) return "run malformed";
  if (m.coverage !== undefined) {
    const problem = coverageProblem(m.coverage);
    if (problem) return problem;
  }
  if (m.compacted !== undefined && !(Array.isArray(m.compacted) && m.compacted.every(isCompactedFile)))
    return "compacted malformed";
  if (m.foreign !== undefined && !(Array.isArray(m.foreign) && m.foreign.every(isForeignObject)))
    return "foreign malformed";
  return value as unknown as Manifest;
}
