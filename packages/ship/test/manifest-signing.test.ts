import { execFileSync } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  loadOrCreateSigningKey,
  loadSigningKey,
  type Manifest,
  ManifestErrorCode,
  parsePublicKeys,
} from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
// Internal and pure: the bytes a manifest is stored as.
import { decodeManifest, encodeManifest } from "../src/manifest/_format.ts";
import { manifestKeyId, signatureProblem } from "../src/manifest/signing.ts";
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
  versionId: "v-1",
};

async function keyPair() {
  const path = join(stateDir(), "manifest-key.pem");
  const { key, created } = await loadOrCreateSigningKey(path);
  return { key, created, path };
}

function encoded(signer?: Awaited<ReturnType<typeof keyPair>>["key"]): Manifest {
  const bytes = encodeManifest({
    host: "db-1",
    hourMs: HOUR_10,
    created: new Date(HOUR_10 + 3_900_000),
    previous: null,
    objects: [object],
    ...(signer ? { signer } : {}),
  });
  return decodeManifest(bytes) as Manifest;
}

describe("manifest signatures", () => {
  it("signs with the key id last-but-one and the signature last; a trusted key verifies it", async () => {
    const { key } = await keyPair();
    const text = new TextDecoder().decode(
      encodeManifest({
        host: "db-1",
        hourMs: HOUR_10,
        created: new Date(HOUR_10),
        previous: null,
        objects: [object],
        signer: key,
      }),
    );
    expect(Object.keys(JSON.parse(text)).slice(-2)).toEqual(["keyId", "signature"]);
    // As docs/archive.md tells an auditor without auditpipe: the signed bytes are the stored ones
    // with the signature field cut out, after a context line; openssl checks them.
    const dir = stateDir();
    const signed = `auditpipe-manifest-v2\n${text.replace(/,\n {2}"signature": "[^"]+"/, "")}`;
    writeFileSync(join(dir, "signed"), signed);
    writeFileSync(join(dir, "sig"), Buffer.from(JSON.parse(text).signature as string, "base64"));
    writeFileSync(join(dir, "pub.pem"), key.publicKey.export({ type: "spki", format: "pem" }));
    const out = execFileSync(
      "openssl",
      [
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
      ],
      { encoding: "utf8" },
    );
    expect(out).toMatch(/Signature Verified Successfully/);
    const m = encoded(key);
    expect(m.keyId).toMatch(/^ed25519:[0-9a-f]{16}$/);
    expect(m.objects[0]?.versionId).toBe("v-1");
    expect(signatureProblem(m, new Map([[key.keyId, key.publicKey]]))).toBeNull();
  });

  it("tells unsigned, untrusted and altered manifests apart", async () => {
    const { key } = await keyPair();
    const other = await keyPair();
    const trusted = new Map([[key.keyId, key.publicKey]]);
    expect(signatureProblem(encoded(), trusted)?.kind).toBe("unsigned");
    expect(signatureProblem(encoded(other.key), trusted)).toEqual({
      kind: "bad-signature",
      reason: expect.stringContaining("not a trusted key"),
    });
    const altered = encoded(key);
    altered.objects[0]!.sha256 = "b".repeat(64);
    expect(signatureProblem(altered, trusted)).toEqual({
      kind: "bad-signature",
      reason: expect.stringContaining("does not verify"),
    });
    // A signature by the trusted key over other bytes (claiming the key id) does not pass either.
    const forged = encoded(key);
    forged.signature = sign(null, Buffer.from("something else"), key.privateKey).toString("base64");
    expect(signatureProblem(forged, trusted)?.kind).toBe("bad-signature");
  });

  it("creates a key once (0600, with its public key beside it) and loads it again", async () => {
    const first = await keyPair();
    expect(first.created).toBe(true);
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    const again = await loadOrCreateSigningKey(first.path);
    expect(again.created).toBe(false);
    expect(again.key.keyId).toBe(first.key.keyId);
    const pub = parsePublicKeys(readFileSync(`${first.path}.pub`, "utf8"), "pub");
    expect([...pub.keys()]).toEqual([first.key.keyId]);
  });

  it("takes a key generated with openssl, and several public keys in one file", async () => {
    const dir = stateDir();
    const priv = join(dir, "k.pem");
    execFileSync("openssl", ["genpkey", "-algorithm", "ed25519", "-out", priv]);
    const pubPem = execFileSync("openssl", ["pkey", "-in", priv, "-pubout"], { encoding: "utf8" });
    const key = await loadSigningKey(priv);
    const second = generateKeyPairSync("ed25519").publicKey;
    const keys = parsePublicKeys(`${pubPem}\n${second.export({ type: "spki", format: "pem" })}`, "both");
    expect([...keys.keys()].sort()).toEqual([key.keyId, manifestKeyId(second)].sort());
  });

  it("names the file and what is wrong with a key that is not an Ed25519 PEM key", async () => {
    const dir = stateDir();
    const rsa = join(dir, "rsa.pem");
    writeFileSync(
      rsa,
      generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }),
    );
    await expect(loadSigningKey(rsa)).rejects.toMatchObject({
      code: ManifestErrorCode.KEY,
      message: expect.stringMatching(/rsa\.pem: a rsa key; manifests are signed with Ed25519/),
    });
    await expect(loadSigningKey(join(dir, "none.pem"))).rejects.toMatchObject({
      code: ManifestErrorCode.KEY,
      message: expect.stringContaining("ENOENT"),
    });
    expect(() => parsePublicKeys("not a key", "trusted.pem")).toThrow(
      /trusted\.pem: holds no PEM public key/,
    );
  });
});
