import { hourLabel } from "./_keys.ts";
import { type ManifestSigningKey, signManifest } from "./signing.ts";
import { MANIFEST_VERSION, type Manifest, type ManifestLink, type UploadedObject } from "./types.ts";

/** The manifest of one hour (or of a part of it), as the bytes that are stored and hashed. */
export function encodeManifest(input: {
  host: string;
  hourMs: number;
  created: Date;
  previous: ManifestLink | null;
  objects: UploadedObject[];
  /** Place within the hour; 0 for the first. */
  sequence?: number;
  /** Written before the hour ended. */
  partial?: boolean;
  /** Signs the manifest when given. */
  signer?: ManifestSigningKey;
}): Uint8Array {
  const manifest: Manifest = {
    version: MANIFEST_VERSION,
    host: input.host,
    hour: hourLabel(input.hourMs),
    created: input.created.toISOString(),
    previous: input.previous,
    objects: input.objects.map(copyObject),
    totals: {
      objects: input.objects.length,
      entries: input.objects.reduce((n, o) => n + o.entries, 0),
      bytes: input.objects.reduce((n, o) => n + o.size, 0),
    },
    ...(input.sequence ? { sequence: input.sequence } : {}),
    ...(input.partial ? { partial: true as const } : {}),
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
  };
}

const isString = (v: unknown): v is string => typeof v === "string";
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isHex64 = (v: unknown): v is string => isString(v) && /^[0-9a-f]{64}$/.test(v);

function isObjectEntry(v: unknown): v is UploadedObject {
  const o = v as Partial<UploadedObject> | null;
  if (typeof o !== "object" || o === null) return false;
  const r = o.range as Partial<UploadedObject["range"]> | undefined;
  return (
    isString(o.key) &&
    isHex64(o.sha256) &&
    isCount(o.size) &&
    isCount(o.entries) &&
    typeof r === "object" &&
    r !== null &&
    isString(r.sourceId) &&
    isString(r.sourceName) &&
    isCount(r.start) &&
    isCount(r.end) &&
    isString(o.contentEncoding) &&
    isString(o.uploadedAt) &&
    (o.versionId === undefined || isString(o.versionId))
  );
}

/** Parses stored manifest bytes; a string saying what is wrong when they are not a manifest. */
export function decodeManifest(bytes: Uint8Array): Manifest | string {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "not JSON";
  }
  const m = value as Partial<Manifest> | null;
  if (typeof m !== "object" || m === null) return "not a JSON object";
  if (m.version !== MANIFEST_VERSION) return `unknown manifest version ${JSON.stringify(m.version)}`;
  if (!isString(m.host) || !isString(m.hour) || !isString(m.created)) return "host, hour or created missing";
  const p = m.previous as Partial<ManifestLink> | null | undefined;
  if (p !== null && (typeof p !== "object" || !isString(p.key) || !isHex64(p.sha256)))
    return "previous is neither null nor {key, sha256}";
  if (!Array.isArray(m.objects) || !m.objects.every(isObjectEntry)) return "objects malformed";
  if (m.sequence !== undefined && !(isCount(m.sequence) && m.sequence > 0)) return "sequence malformed";
  if (m.partial !== undefined && m.partial !== true) return "partial malformed";
  if ((m.keyId !== undefined || m.signature !== undefined) && !(isString(m.keyId) && isString(m.signature)))
    return "keyId and signature go together";
  return m as Manifest;
}
