import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadOrCreateSigningKey, type Manifest, type ManifestSigningKey } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
// Internal and pure: the bytes a manifest is stored as, and what a signature covers.
import { decodeManifest, encodeManifest } from "../src/manifest/_format.ts";
import { signatureProblem, signManifest } from "../src/manifest/signing.ts";
import { stateDir } from "./_manifest.ts";

const HOUR_10 = Date.UTC(2026, 2, 1, 10);
const object = {
  key: "pg/dt=2026-03-01/hour=10/db-1/f1-0000000000000000-0000000000000100.ndjson.gz",
  sha256: "a".repeat(64),
  size: 10,
  entries: 2,
  range: { sourceId: "f1", sourceName: "/var/log/postgresql/f1.csv", start: 0, end: 100 },
  contentEncoding: "gzip" as const,
  uploadedAt: "2026-03-01T10:01:00.000Z",
};
const run = {
  id: "5b1f6d0e-0000-4000-8000-000000000001",
  startedAt: "2026-03-01T09:58:00.000Z",
  version: "0.1.0",
};
const compactedFile = {
  key: "pg/compacted/dt=2026-03-01/hour=09/db-1.parquet",
  sha256: "c".repeat(64),
  size: 4096,
  rows: 2,
  rowsDigest: "d".repeat(64),
  sources: [{ key: object.key, sha256: object.sha256 }],
  hour: "2026-03-01T09",
};

async function signingKey(): Promise<ManifestSigningKey> {
  return (await loadOrCreateSigningKey(join(stateDir(), "manifest-key.pem"))).key;
}

const trusted = (key: ManifestSigningKey) => new Map([[key.keyId, key.publicKey]]);
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const bytesOf = (value: unknown): Uint8Array =>
  new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);

/** A version 1 manifest as auditpipe before version 2 wrote it, signed under the v1 domain. */
function v1Manifest(key: ManifestSigningKey): Uint8Array {
  const m: Manifest = {
    version: 1,
    host: "db-1",
    hour: "2026-03-01T10",
    created: "2026-03-01T11:05:00.000Z",
    previous: null,
    objects: [object],
    totals: { objects: 1, entries: 2, bytes: 10 },
    keyId: key.keyId,
  };
  m.signature = signManifest(m, key);
  return bytesOf(m);
}

/** Checks `bytes` as docs/archive.md tells an auditor to: openssl over the domain line and the bytes less the signature. */
function opensslVerifies(bytes: Uint8Array, domain: string, key: ManifestSigningKey): boolean {
  const dir = stateDir();
  const stored = text(bytes);
  writeFileSync(join(dir, "signed"), `${domain}\n${stored.replace(/,\n {2}"signature": "[^"]+"/, "")}`);
  writeFileSync(join(dir, "sig"), Buffer.from(JSON.parse(stored).signature as string, "base64"));
  writeFileSync(join(dir, "pub.pem"), key.publicKey.export({ type: "spki", format: "pem" }));
  try {
    execFileSync("openssl", [
      "pkeyutl",
      "-verify",
      "-pubin",
      "-inkey",
      join(dir, "pub.pem"),
      "-rawin",
      "-in",
      join(dir, "signed"),
      "-sigfile",
      join(dir, "sig"),
    ]);
    return true;
  } catch {
    return false;
  }
}

describe("the manifest format", () => {
  it("writes version 2 with the chain record, the run, coverage and compacted files, all signed under the v2 domain", async () => {
    const key = await signingKey();
    const bytes = encodeManifest({
      host: "db-1",
      hourMs: HOUR_10,
      created: new Date(HOUR_10 + 65 * 60_000),
      previous: null,
      objects: [{ ...object, supersedes: "b".repeat(64) }],
      sequence: 1,
      partial: true,
      chain: "close",
      run,
      coverage: {
        sources: [{ sourceId: "f1", sourceName: "/var/log/postgresql/f1.csv", format: "csvlog" }],
        gaps: [
          {
            sourceName: "/var/log/postgresql/f0.csv",
            start: 100,
            end: 200,
            reason: "deleted before it was read",
            at: "2026-03-01T10:30:00.000Z",
          },
        ],
      },
      compacted: [compactedFile],
      signer: key,
    });
    const m = decodeManifest(bytes) as Manifest;
    expect(typeof m).toBe("object");
    expect(Object.keys(m)).toEqual([
      "version",
      "host",
      "hour",
      "created",
      "previous",
      "objects",
      "totals",
      "sequence",
      "partial",
      "chain",
      "run",
      "coverage",
      "compacted",
      "keyId",
      "signature",
    ]);
    expect(m).toMatchObject({ version: 2, chain: "close", run, partial: true, sequence: 1 });
    expect(m.objects[0]?.supersedes).toBe("b".repeat(64));
    expect(m.totals).toEqual({
      objects: 1,
      entries: 2,
      bytes: 10,
      compacted: { files: 1, rows: 2, bytes: 4096 },
    });
    expect(signatureProblem(m, trusted(key))).toBeNull();
    expect(opensslVerifies(bytes, "auditpipe-manifest-v2", key)).toBe(true);
    // The domain separates the versions: the same bytes do not verify as a v1 manifest.
    expect(opensslVerifies(bytes, "auditpipe-manifest-v1", key)).toBe(false);
    // Every field is covered: a coverage gap removed, or the chain record changed, breaks it.
    const edited = { ...m, coverage: { sources: m.coverage?.sources } };
    expect(signatureProblem(decodeManifest(bytesOf(edited)) as Manifest, trusted(key))?.kind).toBe(
      "bad-signature",
    );
    const reopened = { ...m, chain: "open" };
    expect(signatureProblem(decodeManifest(bytesOf(reopened)) as Manifest, trusted(key))?.kind).toBe(
      "bad-signature",
    );
  });

  it("leaves out the v2 members a manifest has nothing for", () => {
    const m = decodeManifest(
      encodeManifest({
        host: "db-1",
        hourMs: HOUR_10,
        created: new Date(HOUR_10),
        previous: null,
        objects: [],
        coverage: { sources: [], gaps: [] },
        compacted: [],
      }),
    ) as Manifest;
    expect(m).toEqual({
      version: 2,
      host: "db-1",
      hour: "2026-03-01T10",
      created: "2026-03-01T10:00:00.000Z",
      previous: null,
      objects: [],
      totals: { objects: 0, entries: 0, bytes: 0 },
    });
  });

  it("reads version 1 manifests, whose signatures verify under the v1 domain", async () => {
    const key = await signingKey();
    const bytes = v1Manifest(key);
    const m = decodeManifest(bytes) as Manifest;
    expect(m.version).toBe(1);
    expect(signatureProblem(m, trusted(key))).toBeNull();
    expect(opensslVerifies(bytes, "auditpipe-manifest-v1", key)).toBe(true);
    // Read as if it were version 2, its signature does not hold.
    expect(signatureProblem({ ...m, version: 2 }, trusted(key))?.kind).toBe("bad-signature");
  });

  it("refuses what is not a manifest of a known version, naming what is wrong", async () => {
    const key = await signingKey();
    const v1 = JSON.parse(text(v1Manifest(key))) as Record<string, unknown>;
    const v2 = { ...v1, version: 2 };
    const cases: [unknown, string][] = [
      [{ ...v1, version: 3 }, "unknown manifest version 3"],
      [{ ...v1, chain: "close" }, "chain in a version 1 manifest"],
      [{ ...v1, run }, "run in a version 1 manifest"],
      [{ ...v1, objects: [{ ...object, supersedes: "b".repeat(64) }] }, "supersedes in a version 1 manifest"],
      [{ ...v2, chain: "closed" }, "chain malformed"],
      [{ ...v2, run: { id: "x" } }, "run malformed"],
      [{ ...v2, objects: [{ ...object, supersedes: "not hex" }] }, "objects malformed"],
      [{ ...v2, coverage: { restarts: [] } }, "coverage.restarts is not a coverage member"],
      [{ ...v2, coverage: { gaps: [{ sourceName: "f", start: 1 }] } }, "coverage.gaps malformed"],
      [
        { ...v2, coverage: { serverEvents: [{ event: "reboot", at: "t", sourceName: "f", offset: 0 }] } },
        "coverage.serverEvents malformed",
      ],
      [{ ...v2, compacted: [{ ...compactedFile, hour: "2026-03-01" }] }, "compacted malformed"],
      [{ ...v2, compacted: [{ ...compactedFile, sources: [{ key: "k" }] }] }, "compacted malformed"],
    ];
    for (const [value, problem] of cases) expect(decodeManifest(bytesOf(value))).toBe(problem);
    expect(typeof decodeManifest(bytesOf(v2))).toBe("object");
  });
});
