/**
 * `compact --signed-rewrites`' side of the handshake, on a local archive: the first call leaves a
 * request and keeps the stored file; the sidecar's signature for exactly that file over exactly
 * the stored one lets the overwrite go; a refusal is an ANNOUNCE error; a signature for other
 * bytes asks again.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ArchiveStore,
  AwaitingSignature,
  awaitSignature,
  type CompactionRecord,
  clearRewrite,
  LocalArchiveStore,
  rewriteRequestKey,
  rewriteSignatureKey,
} from "@auditpipe/compact";
import { afterEach, describe, expect, it } from "vitest";

const partition = { dt: "2026-11-23", hour: "07", host: "db1" };
const record = { host: "db1", hour: "2026-11-23T07", sha256: "b".repeat(64) } as CompactionRecord;
const OLD = "a".repeat(64);
let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("awaitSignature", () => {
  it("asks first, replaces once signed, fails when refused, and asks again for other bytes", async () => {
    dir = mkdtempSync(join(tmpdir(), "auditpipe-signed-rewrite-"));
    const store: ArchiveStore = new LocalArchiveStore(dir);
    const before = awaitSignature(store, partition);
    await expect(before(record, OLD)).rejects.toBeInstanceOf(AwaitingSignature);
    const request = JSON.parse(readFileSync(join(dir, rewriteRequestKey(partition)), "utf8"));
    expect(request).toMatchObject({ version: 1, replaces: OLD, record: { sha256: record.sha256 } });

    const sign = (body: object) =>
      store.write(rewriteSignatureKey(partition), Buffer.from(JSON.stringify(body)), "application/json");
    await sign({ version: 1, sha256: record.sha256, supersedes: OLD, signed: "2026-12-07T16:00:00Z" });
    await expect(before(record, OLD)).resolves.toBeUndefined();
    // Signed over another stored file, or for other bytes: not this overwrite.
    await expect(before(record, "c".repeat(64))).rejects.toBeInstanceOf(AwaitingSignature);
    await expect(before({ ...record, sha256: "d".repeat(64) }, OLD)).rejects.toBeInstanceOf(
      AwaitingSignature,
    );

    await sign({
      version: 1,
      sha256: record.sha256,
      supersedes: OLD,
      refused: "not one this sidecar signed",
    });
    await expect(before(record, OLD)).rejects.toMatchObject({ code: "AUDITPIPE_ERR_COMPACT_ANNOUNCE" });

    await clearRewrite(store, partition);
    expect(await store.read(rewriteRequestKey(partition))).toBeNull();
    expect(await store.read(rewriteSignatureKey(partition))).toBeNull();
  });
});
