import { copyFileSync, cpSync } from "node:fs";
import { join } from "node:path";
import {
  loadOrCreateSigningKey,
  type Manifest,
  ManifestErrorCode,
  ManifestJournal,
  type ManifestSigningKey,
  parsePublicKeys,
  verifyArchive,
} from "@auditpipe/ship";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getText, HOST, HOUR, listKeys, manualClock, putDataObject, sha256, stateDir } from "./_manifest.ts";

const BUCKET = "adopt";
const T10 = Date.UTC(2026, 2, 1, 10);
const MIN = 60_000;
let minio: MinioServer;

beforeAll(async () => {
  minio = await startMinio({ buckets: [BUCKET] });
});
afterAll(async () => {
  await minio?.stop();
});

const upload = (prefix: string, sourceId: string, start: number, uploadedAt: number) =>
  putDataObject(minio.client(), BUCKET, {
    prefix,
    entryTs: new Date(uploadedAt).toISOString(),
    sourceId,
    start,
    end: start + 100,
    lines: 2,
    uploadedAt,
  });

async function newKey(): Promise<ManifestSigningKey> {
  return (await loadOrCreateSigningKey(join(stateDir(), "key.pem"))).key;
}

/**
 * Hour 10 closed; hour 11 closed too, but the state dir is as a crash right after the PUT of hour
 * 11 leaves it: the head still at hour 10, the journal still holding hour 11, and (unless
 * `keepOutbox` is false) the bytes saved before the PUT.
 */
async function crashAfterPut(prefix: string, key: ManifestSigningKey | undefined, keepOutbox: boolean) {
  const client = minio.client();
  const dir = stateDir();
  const clock = manualClock(T10);
  const open = (d: string, k = key) =>
    ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: d,
      now: clock.now,
      ...(k ? { signingKey: k } : {}),
    });
  const journal = await open(dir);
  await journal.record(await upload(prefix, "f1", 0, T10 + MIN));
  clock.set(T10 + HOUR + 6 * MIN);
  await journal.closeDue();
  await journal.record(await upload(prefix, "f1", 100, T10 + HOUR + 7 * MIN));
  const crashed = stateDir();
  cpSync(dir, crashed, { recursive: true }); // head at hour 10, hour 11 journaled
  clock.set(T10 + 2 * HOUR + 6 * MIN);
  await journal.close();
  if (keepOutbox) copyFileSync(join(dir, "manifest-outbox.json"), join(crashed, "manifest-outbox.json"));
  const k11 = `${prefix}/_manifests/${HOST}/2026-03-01T11.json`;
  return {
    clock,
    reopen: (k = key) => open(crashed, k),
    k11,
    first: await getText(client, BUCKET, k11),
  };
}

describe("adopting a manifest found in the bucket", () => {
  it("adopts its own bytes after a crash between the PUT and saving the head (no key needed)", async () => {
    const { clock, reopen, k11, first } = await crashAfterPut("bytes", undefined, true);
    const journal = await reopen();
    clock.set(T10 + 3 * HOUR + 6 * MIN);
    await journal.close();
    expect(journal.health().conflict).toBeNull();
    expect(await getText(minio.client(), BUCKET, k11)).toBe(first);
    const m12 = JSON.parse(await getText(minio.client(), BUCKET, k11.replace("T11", "T12"))) as Manifest;
    expect(m12.previous).toEqual({ key: k11, sha256: sha256(first) });
    expect(m12.objects).toEqual([]); // hour 11's object is in the adopted manifest, not moved
  });

  it("adopts a manifest signed by its own key when the saved bytes are lost", async () => {
    const key = await newKey();
    const { clock, reopen, k11, first } = await crashAfterPut("signed", key, false);
    const journal = await reopen();
    clock.set(T10 + 3 * HOUR + 6 * MIN);
    await journal.close();
    expect(journal.health().conflict).toBeNull();
    expect(journal.chainHead?.hour).toBe("2026-03-01T12");
    const m12 = JSON.parse(await getText(minio.client(), BUCKET, k11.replace("T11", "T12"))) as Manifest;
    expect(m12.previous).toEqual({ key: k11, sha256: sha256(first) });
  });

  it("refuses a manifest that is neither its bytes nor signed by its key: a conflict, never continued from", async () => {
    // Unsigned, saved bytes lost: it cannot be told from a forgery.
    const plain = await crashAfterPut("unsigned", undefined, false);
    const journal = await plain.reopen();
    plain.clock.set(T10 + 3 * HOUR + 6 * MIN);
    await expect(journal.closeDue()).rejects.toMatchObject({ code: ManifestErrorCode.CONFLICT });
    expect(journal.health().conflict?.key).toBe(plain.k11);
    expect(journal.chainHead?.hour).toBe("2026-03-01T10");
    await journal.close().catch(() => undefined);
    expect(await listKeys(minio.client(), BUCKET, "unsigned/_manifests/")).not.toContain(
      `unsigned/_manifests/${HOST}/2026-03-01T12.json`,
    );
    // Signed by another key (another sidecar's, or a stolen one's replaced): the same.
    const other = await crashAfterPut("other-key", await newKey(), false);
    const mine = await other.reopen(await newKey());
    other.clock.set(T10 + 3 * HOUR + 6 * MIN);
    await expect(mine.closeDue()).rejects.toMatchObject({ code: ManifestErrorCode.CONFLICT });
    expect(mine.health().conflict?.reason).toContain("not what this sidecar wrote");
    await mine.close().catch(() => undefined);
  });
});

describe("a lost state dir", () => {
  it("continues only from a manifest its own key signed; with none, it starts a new chain", async () => {
    const client = minio.client();
    const key = await newKey();
    const unsigned = await crashAfterPut("lost", undefined, true); // an unsigned chain: hours 10, 11
    const signed = await crashAfterPut("lost-signed", key, true); // a signed one
    // Opened on a new, empty state dir (the clock at the crash: nothing is due).
    const open = (prefix: string) =>
      ManifestJournal.open({
        client,
        bucket: BUCKET,
        prefix,
        host: HOST,
        stateDir: stateDir(),
        now: unsigned.clock.now,
        signingKey: key,
      });
    const lost = await open("lost");
    expect(lost.chainHead).toBeNull(); // someone else's (unsigned) chain: not continued
    const found = await open("lost-signed");
    expect(found.chainHead?.key).toBe(signed.k11);
    await lost.close();
    await found.close();
  });
});

describe("a lost state dir and a copied manifest", () => {
  it("refuses an own-signed manifest copied to a future hour's key as the chain head, loudly, and continues its own", async () => {
    const client = minio.client();
    const key = await newKey();
    const prefix = "copied";
    const clock = manualClock(T10 + 5 * MIN);
    const errors: { obj: object; msg: string }[] = [];
    const logger = {
      info() {},
      warn() {},
      error: (obj: object, msg: string) => void errors.push({ obj, msg }),
    };
    const open = () =>
      ManifestJournal.open({
        client,
        bucket: BUCKET,
        prefix,
        host: HOST,
        stateDir: stateDir(),
        now: clock.now,
        signingKey: key,
        logger,
      });
    const first = await open();
    await first.record(await upload(prefix, "f1", 0, T10 + 6 * MIN));
    clock.set(T10 + HOUR + 6 * MIN);
    await first.close();
    const k10 = `${prefix}/_manifests/${HOST}/2026-03-01T10.json`;
    // With the bucket's credentials only: the signed hour 10 copied to hour 15's key.
    const k15 = `${prefix}/_manifests/${HOST}/2026-03-01T15.json`;
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: k15, Body: await getText(client, BUCKET, k10) }),
    );

    clock.set(T10 + 2 * HOUR + 10 * MIN); // 12:10, and the state dir is lost
    const resumed = await open();
    expect(resumed.chainHead?.key).toBe(k10);
    expect(resumed.health().refused).toEqual([
      {
        key: k15,
        reason: expect.stringMatching(
          /holds the manifest of host db-1 hour 2026-03-01T10: a copy put at another key/,
        ),
      },
    ]);
    expect(errors).toContainEqual(
      expect.objectContaining({
        msg: expect.stringMatching(/not where it belongs: refused as the chain head/),
      }),
    );
    await resumed.openChain();
    expect(resumed.chainHead).toMatchObject({ hour: "2026-03-01T12", partial: true });
    expect(await listKeys(client, BUCKET, `${prefix}/_manifests/`)).toEqual(
      ["10", "11", "12", "15"].map((h) => `${prefix}/_manifests/${HOST}/2026-03-01T${h}.json`),
    );
    await resumed.close();
  });
});

describe("the self-check during a stop", () => {
  it("does not take the manifest it is writing for someone else's", async () => {
    const real = minio.client();
    const key = await newKey();
    const prefix = "stop-self-check";
    let during: (() => Promise<void>) | undefined;
    // The real client, but the self-check runs right after a manifest's PUT returns and before
    // the journal has moved its head: where a check that happened to run at a stop fell.
    const client = new Proxy(real, {
      get(target, property, receiver) {
        if (property !== "send") return Reflect.get(target, property, receiver);
        return async (
          command: { input?: { Key?: string }; constructor: { name: string } },
          ...rest: unknown[]
        ) => {
          const out = await (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
          if (
            command.constructor.name === "PutObjectCommand" &&
            command.input?.Key?.includes("/_manifests/") &&
            during
          ) {
            const check = during;
            during = undefined;
            await check();
          }
          return out;
        };
      },
    });
    const errors: string[] = [];
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      signingKey: key,
      logger: { info() {}, warn() {}, error: (_obj: object, msg: string) => void errors.push(msg) },
    });
    await journal.record(await upload(prefix, "f1", 0, Date.now()));
    let findings: unknown[] | undefined;
    during = async () => {
      findings = await journal.checkOwnUploads();
    };
    await journal.closeOpen(); // the stop's partial manifest, with its close record
    await journal.close();
    expect(findings).toEqual([]);
    expect(errors).toEqual([]);
  });
});

describe("a stop in the middle of an hour", () => {
  it("writes the open hour as a partial manifest; restarts continue it as <hour>.1, <hour>.2; verify follows", async () => {
    const client = minio.client();
    const prefix = "partial";
    const key = await newKey();
    const dir = stateDir();
    while (HOUR - (Date.now() % HOUR) < 30_000) await new Promise((r) => setTimeout(r, 100));
    const start = Date.now();
    const hour = Math.floor(start / HOUR) * HOUR;
    const clock = manualClock(start);
    const open = () =>
      ManifestJournal.open({
        client,
        bucket: BUCKET,
        prefix,
        host: HOST,
        stateDir: dir,
        now: clock.now,
        signingKey: key,
      });
    const label = new Date(hour).toISOString().slice(0, 13);
    const k = (suffix: string) => `${prefix}/_manifests/${HOST}/${label}${suffix}.json`;

    let journal = await open();
    const a = await upload(prefix, "f1", 0, start);
    await journal.record(a);
    await journal.closeOpen(); // SIGTERM
    await journal.close();
    const m0 = JSON.parse(await getText(client, BUCKET, k(""))) as Manifest;
    expect(m0).toMatchObject({ partial: true, previous: null, keyId: key.keyId });
    expect(m0.sequence).toBeUndefined();
    expect(m0.objects.map((o) => o.key)).toEqual([a.key]);

    journal = await open(); // restart in the same hour
    expect(journal.chainHead).toMatchObject({ hour: label, sequence: 0, partial: true });
    const b = await upload(prefix, "f1", 100, start + 1000);
    await journal.record(b);
    await journal.closeOpen();
    await journal.close();
    const m1 = JSON.parse(await getText(client, BUCKET, k(".1"))) as Manifest;
    expect(m1).toMatchObject({
      partial: true,
      sequence: 1,
      previous: { key: k(""), sha256: sha256(await getText(client, BUCKET, k(""))) },
    });
    expect(m1.objects.map((o) => o.key)).toEqual([b.key]);

    journal = await open();
    const c = await upload(prefix, "f1", 200, start + 2000);
    await journal.record(c);
    clock.set(hour + HOUR + 6 * MIN); // the hour is over: its last part is not partial
    await journal.close();
    const m2 = JSON.parse(await getText(client, BUCKET, k(".2"))) as Manifest;
    expect(m2.partial).toBeUndefined();
    expect(m2).toMatchObject({ sequence: 2, previous: { key: k(".1") } });
    expect(m2.objects.map((o) => o.key)).toEqual([c.key]);

    const trustedKeys = parsePublicKeys(
      key.publicKey.export({ type: "spki", format: "pem" }) as string,
      "key",
    );
    const clean = await verifyArchive({ client, bucket: BUCKET, prefix, trustedKeys });
    expect(clean.findings).toEqual([]);
    expect(clean.manifests).toBe(3);
    expect(clean.objects).toBe(3);

    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: k(".1") }));
    const gone = await verifyArchive({ client, bucket: BUCKET, prefix, trustedKeys });
    expect(gone.findings).toContainEqual(expect.objectContaining({ kind: "gap", key: k(".1") }));
  });
});
