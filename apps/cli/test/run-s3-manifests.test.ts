import { createHash, generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startMinio, startPostgres, waitUntil } from "@auditpipe/testkit";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { spawnCli, spawnSidecar } from "./_sidecar.ts";

const HOUR = 3_600_000;

/** Runs `auditpipe verify` as a process; its exit code and output. */
async function verify(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(["verify", ...args], env);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

describe("auditpipe run --sink s3:// and its manifests", () => {
  it("verify says 'nothing to verify yet' (exit 3) after a first shipment; SIGTERM leaves a signed, verifiable, closed chain; a restart reopens it in the same hour; a planted object is disowned and extra, a forged next manifest makes /readyz fail and is never adopted", async () => {
    // The test's three runs must fall in one hour for the key names below: when less than two
    // minutes are left, wait for the next hour (hence the longer timeout).
    while (HOUR - (Date.now() % HOUR) < 120_000) await new Promise((r) => setTimeout(r, 1000));
    const minio = await startMinio({ buckets: ["audit"] });
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write, ddl" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-manifests-"));
    const state = join(work, "state");
    const env = minio.env();
    const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const args = [
      "--pgdata",
      pg.dataDir,
      "--sink",
      "s3://audit/pg/main",
      ...s3,
      "--host",
      "pg-0",
      "--state",
      state,
      "--listen",
      "127.0.0.1:0",
      "--batch-max-age-ms",
      "200",
      "--self-check-ms",
      "300",
    ];
    const client = minio.client();
    const dataObjects = async (): Promise<string[]> => {
      const out = await client.send(new ListObjectsV2Command({ Bucket: "audit", Prefix: "pg/main/" }));
      // zstd: run's default compression.
      return (out.Contents ?? []).map((o) => o.Key ?? "").filter((k) => k.endsWith(".ndjson.zst"));
    };
    const manifests = async (): Promise<string[]> => {
      const out = await client.send(
        new ListObjectsV2Command({ Bucket: "audit", Prefix: "pg/main/_manifests/pg-0/" }),
      );
      return (out.Contents ?? []).map((o) => o.Key ?? "");
    };
    const publicKey = join(state, "manifests", "manifest-key.pem.pub");
    let sidecar = spawnSidecar(args, env);
    try {
      const url = await sidecar.url();
      expect(existsSync(publicKey)).toBe(true); // created on first start, beside the private key
      await pg.psql("CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2);");
      await waitUntil(
        async () => (await dataObjects()).length > 0,
        30_000,
        () => "nothing shipped",
      );

      // Right after a first shipment: nothing to verify yet, with when it will be.
      const early = await verify(["s3://audit/pg/main", ...s3, "--public-key", publicKey], env);
      expect(early.stderr).not.toMatch(/error/i);
      expect(early.code).toBe(3);
      expect(early.stdout).toMatch(
        /^result: nothing to verify yet: \d+ object\(s\) stored under the prefix/m,
      );
      expect(early.stdout).toMatch(/^verifiable after \d{4}-\d{2}-\d{2}T\d{2}:05:00\.000Z$/m);

      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toMatch(/^auditpipe_manifest_conflict 0$/m);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);

      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
      const hour = new Date(Math.floor(Date.now() / HOUR) * HOUR).toISOString().slice(0, 13);
      const at = (suffix: string): string => `pg/main/_manifests/pg-0/${hour}${suffix}.json`;
      // The run's open record (before its first upload) and the stop's close record.
      expect(await manifests()).toEqual([at(".1"), at("")]);
      const record = async (k: string): Promise<{ chain?: string; objects: unknown[] }> =>
        JSON.parse(
          await (
            await client.send(new GetObjectCommand({ Bucket: "audit", Key: k }))
          ).Body!.transformToString(),
        );
      expect(await record(at(""))).toMatchObject({ chain: "open", objects: [] });
      expect((await record(at(".1"))).chain).toBe("close");
      // The stop's own self-check never takes the manifest it is writing for someone else's.
      expect(sidecar.stderr()).not.toMatch(/"level":50[^\n]*not written by it/);
      const stopped = await verify(["s3://audit/pg/main", ...s3, "--public-key", publicKey], env);
      expect(stopped.code).toBe(0);
      expect(stopped.stdout).toMatch(/^signatures checked against the trusted keys$/m);
      expect(stopped.stdout).toMatch(/^host pg-0: 2 manifests, .*; closed by a clean stop at /m);
      expect(stopped.stdout).toMatch(/^result: clean, no finding$/m);

      // A restart in the same hour reopens the chain: <hour>.2.json, linked to the close record.
      sidecar = spawnSidecar(args, env);
      const url2 = await sidecar.url();
      const before = (await dataObjects()).length;
      await pg.psql("INSERT INTO t VALUES (3);");
      await waitUntil(
        async () => (await dataObjects()).length > before,
        30_000,
        () => "nothing shipped",
      );

      // Someone with the bucket's credentials plants an object under this sidecar's keys.
      const [own] = await dataObjects();
      const planted = (own ?? "").replace(/[^/]+$/, "forged-0000000000000000-0000000000000001.ndjson.gz");
      await client.send(
        new PutObjectCommand({ Bucket: "audit", Key: planted, Body: gzipSync('{"statement":"x"}\n') }),
      );
      await waitUntil(
        async () => (await fetch(`${url2}/readyz`)).status === 503,
        30_000,
        () => "/readyz stayed ready with a planted object",
        200,
      );
      expect(await (await fetch(`${url2}/readyz`)).text()).toMatch(/self-check: .*1 foreign/);
      expect(await (await fetch(`${url2}/metrics`)).text()).toMatch(
        /^auditpipe_manifest_self_check_findings\{kind="foreign"\} 1$/m,
      );
      expect(sidecar.stderr()).toContain(planted);

      // The self-check signs it into the chain as not the sidecar's (a PUT that fails under load is
      // retried at the next check): from then on verify reports it, while the sidecar runs (it used
      // to be "pending" and the result clean).
      await waitUntil(
        async () => {
          for (const k of await manifests()) {
            const m = (await record(k)) as { foreign?: { key: string }[] };
            if (m.foreign?.some((f) => f.key === planted)) return true;
          }
          return false;
        },
        60_000,
        () => `no manifest lists the planted object as foreign: ${sidecar.stderr().slice(-3000)}`,
        200,
      );
      const running = await verify(["s3://audit/pg/main", ...s3, "--public-key", publicKey, "--json"], env);
      expect(running.code, `${running.stdout}\n${sidecar.stderr().slice(-6000)}`).toBe(1);
      expect(JSON.parse(running.stdout).findings).toEqual([
        expect.objectContaining({ kind: "extra", key: planted }),
      ]);

      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
      const keys = await manifests();
      expect(keys.slice(-1)).toEqual([at("")]);
      expect(keys).toContain(at(".2"));
      const json = await verify(["s3://audit/pg/main", ...s3, "--public-key", publicKey, "--json"], env);
      const report = JSON.parse(json.stdout) as {
        manifests: number;
        findings: { kind: string; key: string }[];
        pending: string[];
        chains: { state: string }[];
      };
      expect(report.manifests).toBe(keys.length);
      expect(report.findings).toEqual([expect.objectContaining({ kind: "extra", key: planted })]);
      expect(report.pending).toEqual([]);
      expect(report.chains).toEqual([expect.objectContaining({ state: "closed" })]);
      expect(json.code).toBe(1);

      // The attack of issue 16 on a running sidecar: with the bucket's credentials only, the next
      // manifest (<hour>.2.json) is put first, chained to the real one and listing the planted object.
      sidecar = spawnSidecar(args, env);
      const url3 = await sidecar.url();
      // Its open record first: the forgery goes right after it.
      const before3 = keys.length;
      await waitUntil(
        async () => (await manifests()).length > before3,
        30_000,
        () => "no open record",
      );
      const sequenceOf = (k: string): number => Number(/\.(\d+)\.json$/.exec(k)?.[1] ?? 0);
      const newest = Math.max(...(await manifests()).map(sequenceOf));
      const previousKey = at(`.${newest}`);
      const previousText = await (
        await client.send(new GetObjectCommand({ Bucket: "audit", Key: previousKey }))
      ).Body!.transformToString();
      const forgedKey = at(`.${newest + 1}`);
      const forged = {
        ...JSON.parse(previousText),
        sequence: newest + 1,
        previous: { key: previousKey, sha256: createHash("sha256").update(previousText).digest("hex") },
        keyId: undefined,
        signature: undefined,
      };
      await client.send(
        new PutObjectCommand({
          Bucket: "audit",
          Key: forgedKey,
          Body: `${JSON.stringify(forged, null, 2)}\n`,
        }),
      );
      await waitUntil(
        async () => /\d+ manifest/.test(await (await fetch(`${url3}/readyz`)).text()),
        30_000,
        () => "the self-check did not see the forged manifest",
        200,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code, sidecar.stderr().slice(-4000)).toBe(0);
      // Not adopted, not overwritten: a conflict, logged with its code.
      expect(sidecar.stderr()).toMatch(/"code":"AUDITPIPE_ERR_MANIFEST_CONFLICT"/);
      const after = await (
        await client.send(new GetObjectCommand({ Bucket: "audit", Key: forgedKey }))
      ).Body!.transformToString();
      expect(JSON.parse(after).signature).toBeUndefined();
      const caught = await verify(["s3://audit/pg/main", ...s3, "--public-key", publicKey], env);
      expect(caught.code).toBe(1);
      expect(caught.stdout).toContain(`UNSIGNED`);
      expect(caught.stdout).toContain(forgedKey);
      // Without the key, as reported in issue 16, the forgery passes: only the planted object is found.
      const unkeyed = await verify(["s3://audit/pg/main", ...s3, "--json"], env);
      expect(JSON.parse(unkeyed.stdout).findings).toEqual([
        expect.objectContaining({ kind: "extra", key: planted }),
      ]);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 300_000);

  it("refuses to start with a --manifest-key that is not an Ed25519 key, naming it (exit 2)", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-badkey-"));
    try {
      const key = join(work, "x25519.pem");
      writeFileSync(key, generateKeyPairSync("x25519").privateKey.export({ type: "pkcs8", format: "pem" }));
      const child = spawnCli([
        "run",
        "--log-dir",
        work,
        "--format",
        "csvlog",
        "--sink",
        "s3://audit/pg",
        "--s3-endpoint",
        "http://127.0.0.1:9",
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--manifest-key",
        key,
      ]);
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect(code).toBe(2);
      expect(stderr).toContain(
        `--manifest-key (AUDITPIPE_MANIFEST_KEY) ${key}: a x25519 key; manifests are signed with Ed25519`,
      );
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
