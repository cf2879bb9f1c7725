import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadOrCreateSigningKey, type Manifest, ManifestErrorCode, ManifestJournal } from "@auditpipe/ship";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signatureProblem } from "../src/manifest/signing.ts";
import { getText, HOST, HOUR, listKeys, manualClock, putDataObject, sha256, stateDir } from "./_manifest.ts";

const BUCKET = "audit";
/** 2026-03-01T10:00Z: a fixed clock, so manifests are byte-for-byte predictable. */
const T10 = Date.UTC(2026, 2, 1, 10);
const MIN = 60_000;

let minio: MinioServer;
beforeAll(async () => {
  minio = await startMinio({ buckets: [BUCKET] });
});
afterAll(async () => {
  await minio?.stop();
});

async function manifest(key: string): Promise<{ text: string; m: Manifest }> {
  const text = await getText(minio.client(), BUCKET, key);
  return { text, m: JSON.parse(text) as Manifest };
}

const upload = (prefix: string, sourceId: string, start: number, uploadedAt: number) =>
  putDataObject(minio.client(), BUCKET, {
    prefix,
    entryTs: "2026-03-01T09:59:58.000Z",
    sourceId,
    start,
    end: start + 100,
    lines: 2,
    uploadedAt,
  });

describe("ManifestJournal", () => {
  it("closes each hour after its grace period, chains the manifests, manifests an empty hour and continues after a restart", async () => {
    const client = minio.client();
    const prefix = "chain";
    const dir = stateDir();
    const clock = manualClock(T10 + 5 * MIN);
    const open = () =>
      ManifestJournal.open({ client, bucket: BUCKET, prefix, host: HOST, stateDir: dir, now: clock.now });
    let journal = await open();

    await journal.closeDue();
    expect(await listKeys(client, BUCKET, `${prefix}/_manifests/`)).toEqual([]); // nothing seen yet: no chain

    const a = await upload(prefix, "f1", 0, T10 + 10 * MIN);
    const b = await upload(prefix, "f1", 100, T10 + 50 * MIN);
    await journal.record(a);
    await journal.record(b);
    clock.set(T10 + HOUR + 4 * MIN); // hour 10 is over, but within the 5-minute grace
    await journal.closeDue();
    expect(await listKeys(client, BUCKET, `${prefix}/_manifests/`)).toEqual([]);

    clock.set(T10 + HOUR + 5 * MIN);
    await journal.closeDue();
    const k10 = `${prefix}/_manifests/${HOST}/2026-03-01T10.json`;
    const m10 = await manifest(k10);
    expect(m10.m).toMatchObject({
      version: 2,
      host: HOST,
      hour: "2026-03-01T10",
      created: "2026-03-01T11:05:00.000Z",
      previous: null,
      totals: { objects: 2, entries: 4, bytes: a.size + b.size },
    });
    expect(m10.m.objects).toEqual([a, b]);
    expect(journal.chainHead).toEqual({
      key: k10,
      sha256: sha256(m10.text),
      hour: "2026-03-01T10",
      sequence: 0,
      partial: false,
    });
    // Stored with its SHA-256 checked by the store (x-amz-checksum-sha256).
    const head = await client.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key: k10, ChecksumMode: "ENABLED" }),
    );
    expect(head.ChecksumSHA256).toBe(Buffer.from(sha256(m10.text), "hex").toString("base64"));

    // Acknowledged at 11:30; then nothing in hour 12. At 13:05 both hours close.
    const c = await upload(prefix, "f1", 200, T10 + HOUR + 30 * MIN);
    await journal.record(c);
    clock.set(T10 + 3 * HOUR + 5 * MIN);
    await journal.closeDue();
    await journal.close();

    // A crash mid-append leaves a torn last line; the restart skips it and continues the chain.
    appendFileSync(join(dir, "manifest-journal.ndjson"), '{"hour":"2026-03-01T13","obj');
    journal = await open();
    const d = await upload(prefix, "f2", 0, T10 + 3 * HOUR + 40 * MIN);
    const replay = await upload(prefix, "f1", 0, T10 + 3 * HOUR + 45 * MIN); // the same key as a, the same bytes
    await journal.record(d);
    await journal.record(replay);
    clock.set(T10 + 4 * HOUR + 5 * MIN);
    await journal.close(); // close() writes what is due

    const keys = await listKeys(client, BUCKET, `${prefix}/_manifests/`);
    expect(keys).toEqual([10, 11, 12, 13].map((h) => `${prefix}/_manifests/${HOST}/2026-03-01T${h}.json`));
    const all = await Promise.all(keys.map(manifest));
    all.forEach(({ m }, i) => {
      const before = all[i - 1];
      expect(m.previous).toEqual(before ? { key: keys[i - 1], sha256: sha256(before.text) } : null);
    });
    expect(all.map(({ m }) => m.objects.map((o) => o.key))).toEqual([
      [a.key, b.key],
      [c.key],
      [], // an hour without uploads is manifested: a missing manifest then means a deletion
      [d.key, a.key],
    ]);
    expect(all[3]?.m.objects[1]?.sha256).toBe(a.sha256);
    expect(JSON.parse(readFileSync(join(dir, "manifest-head.json"), "utf8"))).toMatchObject({
      version: 1,
      bucket: BUCKET,
      prefix,
      host: HOST,
      last: { key: keys[3], sha256: sha256(all[3]?.text ?? ""), hour: "2026-03-01T13" },
    });
    expect(readFileSync(join(dir, "manifest-journal.ndjson"), "utf8")).toBe(""); // closed hours compacted away
  });

  it("starts the chain at the first hour the journal saw, not at the epoch nor today", async () => {
    const client = minio.client();
    const prefix = "late-start";
    const clock = manualClock(T10 + 30 * MIN);
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: clock.now,
    });
    await journal.record(await upload(prefix, "f1", 0, T10 + 31 * MIN));
    clock.set(T10 + 2 * HOUR + 10 * MIN);
    await journal.close();
    expect(await listKeys(client, BUCKET, `${prefix}/_manifests/`)).toEqual([
      `${prefix}/_manifests/${HOST}/2026-03-01T10.json`,
      `${prefix}/_manifests/${HOST}/2026-03-01T11.json`,
    ]);
  });

  it("lists an upload recorded after its hour closed in the next open hour", async () => {
    const client = minio.client();
    const prefix = "late-record";
    const clock = manualClock(T10);
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: stateDir(),
      now: clock.now,
    });
    await journal.record(await upload(prefix, "f1", 0, T10 + MIN));
    clock.set(T10 + HOUR + 6 * MIN);
    await journal.closeDue();
    const late = await upload(prefix, "f1", 100, T10 + 59 * MIN); // acknowledged in hour 10, recorded after it closed
    await journal.record(late);
    clock.set(T10 + 2 * HOUR + 6 * MIN);
    await journal.close();
    const { m } = await manifest(`${prefix}/_manifests/${HOST}/2026-03-01T11.json`);
    expect(m.objects.map((o) => o.key)).toEqual([late.key]);
  });

  it("keeps journaling after a compaction failed part-way (the handle is reopened, not left closed)", async () => {
    const client = minio.client();
    const prefix = "rewrite-fails";
    const dir = stateDir();
    const clock = manualClock(T10);
    const journal = await ManifestJournal.open({
      client,
      bucket: BUCKET,
      prefix,
      host: HOST,
      stateDir: dir,
      now: clock.now,
    });
    await journal.record(await upload(prefix, "f1", 0, T10 + MIN));
    // The compaction after hour 10's manifest renames onto the journal's path: a directory there
    // makes that rename fail, as a full disk or EMFILE would fail it.
    const path = join(dir, "manifest-journal.ndjson");
    rmSync(path);
    mkdirSync(join(path, "blocker"), { recursive: true });
    clock.set(T10 + HOUR + 6 * MIN);
    await expect(journal.closeDue()).rejects.toThrow();
    rmSync(path, { recursive: true });

    const later = await upload(prefix, "f1", 100, T10 + HOUR + 7 * MIN);
    await journal.record(later); // the old code rejected every record from here on: "journal is closed"
    expect(readFileSync(path, "utf8")).toContain(later.key);
    clock.set(T10 + 2 * HOUR + 6 * MIN);
    await journal.close();
    const { m } = await manifest(`${prefix}/_manifests/${HOST}/2026-03-01T11.json`);
    expect(m.objects.map((o) => o.key)).toEqual([later.key]);
  });

  it("adopts its own manifest after a crash between the PUT and saving the head, and never overwrites one", async () => {
    const client = minio.client();
    const prefix = "crash";
    const dir = stateDir();
    const before = stateDir();
    const clock = manualClock(T10);
    const open = (d: string) =>
      ManifestJournal.open({ client, bucket: BUCKET, prefix, host: HOST, stateDir: d, now: clock.now });
    let journal = await open(dir);
    const a = await upload(prefix, "f1", 0, T10 + MIN);
    await journal.record(a);
    cpSync(dir, before, { recursive: true }); // the state dir as it was before the hour closed
    clock.set(T10 + HOUR + 6 * MIN);
    await journal.close();
    const k10 = `${prefix}/_manifests/${HOST}/2026-03-01T10.json`;
    const first = await getText(client, BUCKET, k10);

    // Restart from the old state dir: the manifest exists (If-None-Match refuses a second PUT);
    // it continues this chain, so it is adopted, and what it lacks moves to the next hour.
    clock.set(T10 + 2 * HOUR + 6 * MIN);
    journal = await open(before);
    const b = await upload(prefix, "f1", 100, T10 + 2 * MIN);
    await journal.record(b); // journaled for hour 10 after the restart
    await journal.close();
    expect(await getText(client, BUCKET, k10)).toBe(first);
    const m11 = await manifest(`${prefix}/_manifests/${HOST}/2026-03-01T11.json`);
    expect(m11.m.previous).toEqual({ key: k10, sha256: sha256(first) });
    expect(m11.m.objects.map((o) => o.key)).toEqual([b.key]);

    // A journal whose chain is not the bucket's (another writer, a state dir from elsewhere).
    const other = stateDir();
    const head = {
      version: 1,
      bucket: BUCKET,
      prefix,
      host: HOST,
      last: { key: k10, sha256: "0".repeat(64), hour: "2026-03-01T10" },
    };
    writeFileSync(join(other, "manifest-head.json"), JSON.stringify(head));
    const forked = await open(other);
    await forked.record(await upload(prefix, "f9", 0, T10 + HOUR + 10 * MIN));
    clock.set(T10 + 3 * HOUR + 6 * MIN);
    await expect(forked.closeDue()).rejects.toMatchObject({ code: ManifestErrorCode.CONFLICT });
    expect(sha256(await getText(client, BUCKET, `${prefix}/_manifests/${HOST}/2026-03-01T11.json`))).toBe(
      sha256(m11.text),
    );
  });

  it("records coverage events and compacted files durably, in the signed manifest of the hour they were recorded in", async () => {
    const client = minio.client();
    const prefix = "coverage";
    const dir = stateDir();
    const { key } = await loadOrCreateSigningKey(join(stateDir(), "manifest-key.pem"));
    const clock = manualClock(T10 + 5 * MIN);
    const run = { id: "run-1", startedAt: new Date(T10).toISOString(), version: "0.1.0" };
    const open = () =>
      ManifestJournal.open({
        client,
        bucket: BUCKET,
        prefix,
        host: HOST,
        stateDir: dir,
        now: clock.now,
        signingKey: key,
        run,
      });
    let journal = await open();
    const source = {
      kind: "source",
      sourceId: "f1",
      sourceName: "/var/log/postgresql/f1.csv",
      format: "csvlog",
    } as const;
    const gap = {
      kind: "gap",
      sourceName: "/var/log/postgresql/f0.csv",
      start: 100,
      end: 4096,
      reason: "deleted before it was read",
      at: new Date(T10 + 6 * MIN).toISOString(),
    } as const;
    const setting = {
      kind: "setting",
      setting: "pgaudit.log",
      value: "write, ddl",
      at: new Date(T10 + 7 * MIN).toISOString(),
      sourceName: "/var/log/postgresql/f1.csv",
      offset: 512,
    } as const;
    await journal.recordCoverage(source);
    await journal.recordCoverage({ ...source }); // the same source again: listed once
    await journal.recordCoverage(gap);
    const a = await upload(prefix, "f1", 0, T10 + 8 * MIN);
    await journal.record(a);
    const file = {
      key: `${prefix}/compacted/dt=2026-03-01/hour=09/${HOST}.parquet`,
      sha256: "c".repeat(64),
      size: 4096,
      rows: 2,
      sources: [{ key: a.key, sha256: a.sha256 }],
      hour: "2026-03-01T09",
    };
    await journal.recordCompaction(file);
    // Refused before anything is written, naming what is wrong.
    await expect(journal.recordCoverage({ kind: "gap", sourceName: "x" } as never)).rejects.toThrow(
      /recordCoverage: a gap event needs the fields of coverage.gaps/,
    );
    await expect(journal.recordCoverage({ kind: "restart" } as never)).rejects.toThrow(/kind must be one of/);
    await expect(journal.recordCompaction({ ...file, hour: "2026-03-01" })).rejects.toThrow(TypeError);
    await journal.close();

    // Durable: a restart (the hour still open) finds them in the journal file.
    journal = await open();
    await journal.recordCoverage(setting);
    clock.set(T10 + HOUR + 5 * MIN);
    await journal.closeDue();
    await journal.close();
    const { m } = await manifest(`${prefix}/_manifests/${HOST}/2026-03-01T10.json`);
    expect(m.version).toBe(2);
    expect(m.run).toEqual(run);
    expect(m.objects).toEqual([a]);
    const { kind: _s, ...sourceFields } = source;
    const { kind: _g, ...gapFields } = gap;
    const { kind: _c, ...settingFields } = setting;
    expect(m.coverage).toEqual({
      sources: [sourceFields],
      gaps: [gapFields],
      settingChanges: [settingFields],
    });
    expect(m.compacted).toEqual([file]);
    expect(m.totals).toEqual({
      objects: 1,
      entries: a.entries,
      bytes: a.size,
      compacted: { files: 1, rows: 2, bytes: 4096 },
    });
    expect(signatureProblem(m, new Map([[key.keyId, key.publicKey]]))).toBeNull();
    expect(readFileSync(join(dir, "manifest-journal.ndjson"), "utf8")).toBe("");
  });

  it("continues the bucket's chain when the state dir was lost", async () => {
    const client = minio.client();
    const prefix = "lost-state";
    const clock = manualClock(T10);
    const open = () =>
      ManifestJournal.open({
        client,
        bucket: BUCKET,
        prefix,
        host: HOST,
        stateDir: stateDir(),
        now: clock.now,
      });
    let journal = await open();
    await journal.record(await upload(prefix, "f1", 0, T10 + MIN));
    clock.set(T10 + HOUR + 6 * MIN);
    await journal.close();
    const k10 = `${prefix}/_manifests/${HOST}/2026-03-01T10.json`;
    journal = await open(); // a new, empty state dir
    expect(journal.chainHead?.key).toBe(k10);
    clock.set(T10 + 2 * HOUR + 6 * MIN);
    await journal.close();
    const m11 = await manifest(`${prefix}/_manifests/${HOST}/2026-03-01T11.json`);
    expect(m11.m.previous).toEqual({ key: k10, sha256: sha256(await getText(client, BUCKET, k10)) });
  });
});
