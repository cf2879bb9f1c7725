/**
 * Issue 21, items 1, 2 and 14, on real processes: a real PostgreSQL's audit log shipped by a real
 * `auditpipe run` to a real MinIO, then tampered with using the bucket's credentials only, and
 * checked by a real `auditpipe verify --public-key`.
 */
import { mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  type MinioServer,
  type PostgresCluster,
  startMinio,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import { getJson, spawnCli, spawnSidecar } from "./_sidecar.ts";

const HOUR = 3_600_000;

interface Report {
  ok: boolean;
  findings: { kind: string; key: string; reason: string; objects?: string[] }[];
  pending: string[];
  chains: { host: string; state?: string; coveredUntil?: string }[];
}

/** `auditpipe verify` as a process: its exit code, its report (`--json`) and stderr. */
async function verify(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; report: Report; stderr: string }> {
  const child = spawnCli(["verify", ...args, "--json"], env);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, report: JSON.parse(stdout || "{}") as Report, stderr };
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => undefined);
});

/** A MinIO, a PostgreSQL writing a csvlog, a state dir, and the sidecar's and verify's flags. */
async function setup(bucket: string, locked = false) {
  // The runs below must not straddle an hour (the chain records are named after it).
  while (HOUR - (Date.now() % HOUR) < 180_000) await new Promise((r) => setTimeout(r, 1000));
  const minio: MinioServer = await startMinio(locked ? { lockedBuckets: [bucket] } : { buckets: [bucket] });
  cleanup.push(() => minio.stop());
  const pg: PostgresCluster = await startPostgres({
    logDestination: ["csvlog"],
    pgaudit: { log: "write, ddl" },
  });
  cleanup.push(() => pg.stop());
  const work = mkdtempSync(join(tmpdir(), "auditpipe-tamper-"));
  cleanup.push(async () => rmSync(work, { recursive: true, force: true }));
  const state = join(work, "state");
  const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
  const args = [
    ...["--pgdata", pg.dataDir, "--sink", `s3://${bucket}/pg`, ...s3, "--host", "pg-0", "--state", state],
    ...["--listen", "127.0.0.1:0", "--batch-max-entries", "1", "--batch-max-age-ms", "200"],
    ...(locked ? ["--object-lock-mode", "GOVERNANCE", "--object-lock-days", "1"] : []),
  ];
  const verifyArgs = [
    `s3://${bucket}/pg`,
    ...s3,
    "--public-key",
    join(state, "manifests", "manifest-key.pem.pub"),
  ];
  const client = minio.client();
  const list = async (prefix: string): Promise<string[]> =>
    ((await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))).Contents ?? []).map(
      (o) => o.Key ?? "",
    );
  const dataObjects = async (): Promise<string[]> => (await list("pg/dt=")).sort();
  const manifests = async (): Promise<string[]> => list("pg/_manifests/pg-0/");
  const start = () => {
    const sidecar = spawnSidecar(args, minio.env());
    cleanup.push(async () => void sidecar.child.kill("SIGKILL"));
    return sidecar;
  };
  /** Runs SQL and waits until the sidecar stored `more` objects more. */
  const ship = async (sql: string, more: number): Promise<void> => {
    const before = (await dataObjects()).length;
    await pg.psql(sql);
    await waitUntil(
      async () => (await dataObjects()).length >= before + more,
      60_000,
      () => "the sidecar did not ship",
    );
  };
  const put = (key: string, body: Uint8Array | string) =>
    client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  const bytes = async (key: string): Promise<Uint8Array> =>
    (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray();
  return {
    minio,
    pg,
    state,
    args,
    verifyArgs,
    client,
    dataObjects,
    manifests,
    start,
    ship,
    put,
    bytes,
    env: minio.env(),
  };
}

const kindsOf = (r: Report): Record<string, string[]> => {
  const out: Record<string, string[]> = {};
  for (const f of r.findings) out[f.kind] = [...(out[f.kind] ?? []), f.key].sort();
  return out;
};

describe("auditpipe verify --public-key on a tampered archive of a real sidecar (issue 21.1)", () => {
  it("running, stopped or gone: an object overwritten, swapped, deleted and re-uploaded with other bytes, or added under the host's keys, is a finding and exit 1 at once", async () => {
    const t = await setup("audit");
    let sidecar = t.start();
    await sidecar.url();
    await t.ship(
      "CREATE TABLE t (id int); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); INSERT INTO t VALUES (3);",
      4,
    );
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
    const objects = await t.dataObjects(); // every one listed in the stop's close record
    const [o0, o1, o2, o3] = objects as [string, string, string, string];
    expect((await verify(t.verifyArgs, t.env)).code).toBe(0);

    // Running: a restarted sidecar, and an object of the first run overwritten with other bytes.
    sidecar = t.start();
    await sidecar.url();
    await t.put(o0, gzipSync('{"statement":"SELECT \'forged\'"}\n'));
    const running = await verify(t.verifyArgs, t.env);
    expect(running.code).toBe(1);
    expect(kindsOf(running.report)).toEqual({ altered: [o0] });
    expect(running.report.pending).not.toContain(o0);

    // Stopped: two objects swapped, one deleted and put back with other bytes, one added.
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
    expect(sidecar.stderr(), "the stop wrote no close record").toMatch(/manifest chain closed at the stop/);
    const [b1, b2] = await Promise.all([t.bytes(o1), t.bytes(o2)]);
    await t.put(o1, b2);
    await t.put(o2, b1);
    await t.client.send(new DeleteObjectCommand({ Bucket: "audit", Key: o3 }));
    await t.put(o3, gzipSync('{"statement":"SELECT \'other\'"}\n'));
    const added = o0.replace(/[^/]+$/, "planted-0000000000000000-0000000000000001.ndjson.gz");
    await t.put(added, gzipSync('{"statement":"SELECT \'added\'"}\n'));
    const stopped = await verify(t.verifyArgs, t.env);
    expect(stopped.code, JSON.stringify(stopped.report.chains)).toBe(1);
    expect(stopped.report.chains, JSON.stringify(await t.manifests())).toEqual([
      expect.objectContaining({ state: "closed" }),
    ]);
    expect(kindsOf(stopped.report)).toEqual({ altered: [o0, o1, o2, o3].sort(), extra: [added] });
    expect(stopped.report.pending).toEqual([]);
    expect(stopped.report.chains).toEqual([expect.objectContaining({ host: "pg-0", state: "closed" })]);

    // Gone: a third run ships and is killed (no close record); an object is added after it.
    sidecar = t.start();
    await sidecar.url();
    await t.ship("INSERT INTO t VALUES (4);", 1);
    sidecar.child.kill("SIGKILL");
    await sidecar.exited;
    const late = o0.replace(/[^/]+$/, "late-0000000000000000-0000000000000001.ndjson.gz");
    await t.put(late, gzipSync('{"statement":"SELECT \'late\'"}\n'));
    const open = await verify([...t.verifyArgs, "--gone-after", "1h"], t.env);
    expect(open.report.chains).toEqual([expect.objectContaining({ state: "open" })]);
    expect(open.report.pending).toContain(late);
    const coveredUntil = Date.parse(open.report.chains[0]?.coveredUntil ?? "");
    await waitUntil(
      () => Date.now() > coveredUntil + 2_000,
      30_000,
      () => "the clock did not move",
    );
    const gone = await verify([...t.verifyArgs, "--gone-after", "1s"], t.env);
    expect(gone.code).toBe(1);
    const finding = gone.report.findings.find((f) => f.kind === "gone");
    expect(finding?.objects).toContain(late);
    expect(finding?.reason).toMatch(/^host pg-0: the chain has no close record/);
    expect(gone.report.pending).toEqual([]);
    expect(gone.report.chains).toEqual([expect.objectContaining({ state: "gone" })]);
  }, 420_000);

  it("Object Lock: an overwrite of a listed object (a new version) is overwritten, exit 1, the stored version intact", async () => {
    const t = await setup("locked", true);
    const sidecar = t.start();
    await sidecar.url();
    await t.ship("CREATE TABLE t (id int); INSERT INTO t VALUES (1);", 2);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
    expect((await verify(t.verifyArgs, t.env)).code).toBe(0);
    const [victim] = (await t.dataObjects()) as [string];
    await t.put(victim, gzipSync('{"statement":"SELECT \'new version\'"}\n'));
    const report = await verify(t.verifyArgs, t.env);
    expect(report.code).toBe(1);
    expect(report.report.findings).toEqual([expect.objectContaining({ kind: "overwritten", key: victim })]);
    expect(report.report.findings[0]?.reason).toMatch(/the stored version is intact/);
  }, 300_000);
});

describe("resuming a chain (issue 21.2)", () => {
  it("refuses an own-signed manifest copied to a future hour's key, loudly: /readyz not ready, uploads and manifests stay in their hour", async () => {
    const t = await setup("audit");
    let sidecar = t.start();
    await sidecar.url();
    await t.ship("CREATE TABLE t (id int); INSERT INTO t VALUES (1);", 2);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
    const hourMs = Math.floor(Date.now() / HOUR) * HOUR;
    const label = (ms: number): string => new Date(ms).toISOString().slice(0, 13);
    const close = `pg/_manifests/pg-0/${label(hourMs)}.1.json`;
    const future = `pg/_manifests/pg-0/${label(hourMs + 3 * HOUR)}.json`;
    await t.put(future, await t.bytes(close));
    unlinkSync(join(t.state, "manifests", "manifest-head.json")); // the state lost its chain head

    sidecar = t.start();
    const url = await sidecar.url();
    await waitUntil(
      async () => /not where they belong/.test(await (await fetch(`${url}/readyz`)).text()),
      30_000,
      () => `/readyz did not say so: ${sidecar.stderr().slice(-2000)}`,
      200,
    );
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
    expect(sidecar.stderr()).toMatch(/"level":50[^\n]*refused as the chain head/);
    expect(sidecar.stderr()).toContain(future);
    await t.ship("INSERT INTO t VALUES (2);", 1);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
    // The chain went on in this hour from the real close record: open, then close.
    const keys = await t.manifests();
    expect(keys).toEqual(
      expect.arrayContaining([
        `pg/_manifests/pg-0/${label(hourMs)}.2.json`,
        `pg/_manifests/pg-0/${label(hourMs)}.3.json`,
      ]),
    );
    expect(keys.filter((k) => k !== future && !k.includes(`/${label(hourMs)}`))).toEqual([]);
    // What verify reports is the copy, and only the copy.
    const report = await verify(t.verifyArgs, t.env);
    expect(report.code).toBe(1);
    expect(report.report.findings.length).toBeGreaterThan(0);
    for (const f of report.report.findings) expect(`${f.key} ${f.reason}`).toContain(future);
  }, 300_000);
});

describe("a storage outage (issue 21.14)", () => {
  it("counts a failing upload attempt at once, in auditpipe_sink_errors_total and /v1/volume, while the write is still retrying", async () => {
    const t = await setup("audit");
    const sidecar = t.start();
    const url = await sidecar.url();
    await t.ship("CREATE TABLE t (id int); INSERT INTO t VALUES (1);", 2);
    await t.minio.down();
    await t.pg.psql("INSERT INTO t VALUES (2);");
    const errors = async (): Promise<number> => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return [...text.matchAll(/^auditpipe_sink_errors_total\{[^}]*sink="s3"[^}]*\} (\d+)/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    };
    await waitUntil(
      async () => (await errors()) > 0,
      60_000,
      () => "no sink error counted",
      100,
    );
    // Counted while write() still retries within its 60 s budget, not once it gives up.
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/sink s3 retrying: AUDITPIPE_ERR_SINK_UNREACHABLE/);
    const volume = await getJson<{ pipeline: { sinks: Record<string, { errors: number }> } }>(
      `${url}/v1/volume`,
    );
    expect(volume.pipeline.sinks.s3?.errors).toBeGreaterThan(0);
    await t.minio.up();
    await waitUntil(
      async () => (await fetch(`${url}/readyz`)).status === 200,
      90_000,
      () => "not ready again",
      300,
    );
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
  }, 300_000);
});
