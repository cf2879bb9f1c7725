import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ManifestJournal, type UploadedObject } from "@auditpipe/ship";
import { type MinioServer, startMinio } from "@auditpipe/testkit";
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const CLI = join(import.meta.dirname, "..", "src", "_run.ts");
const BUCKET = "audit-archive";
const HOUR = 3_600_000;
const HOST = "pg-0";

let minio: MinioServer;
beforeAll(async () => {
  minio = await startMinio({ buckets: [BUCKET] });
});
afterAll(async () => {
  await minio?.stop();
});

/**
 * Runs the CLI from source as a user would, with the credentials in the environment only;
 * `override` sets (or, with undefined, removes) variables on top.
 */
function verifyCli(
  args: string[],
  override: Record<string, string | undefined> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...minio.env() };
  for (const [name, value] of Object.entries(override))
    if (value === undefined) delete env[name];
    else env[name] = value;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=@auditpipe/source", CLI, "verify", ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Two closed hours of objects shaped like the S3 sink's, journaled and manifested. */
async function buildArchive(prefix: string): Promise<UploadedObject[]> {
  const client = minio.client();
  const start = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  let t = start;
  const journal = await ManifestJournal.open({
    client,
    bucket: BUCKET,
    prefix,
    host: HOST,
    stateDir: mkdtempSync(join(tmpdir(), "auditpipe-verify-cli-")),
    now: () => new Date(t),
  });
  const objects: UploadedObject[] = [];
  for (const [i, uploadedAt] of [start + 60_000, start + HOUR + 60_000].entries()) {
    const body = gzipSync(
      `${JSON.stringify({ ts: new Date(start).toISOString(), statement: `SELECT ${i}` })}\n`,
    );
    const offsets = `${String(i * 100).padStart(16, "0")}-${String(i * 100 + 100).padStart(16, "0")}`;
    const dt = new Date(start).toISOString();
    const key = `${prefix}/dt=${dt.slice(0, 10)}/hour=${dt.slice(11, 13)}/${HOST}/fp1-${offsets}.ndjson.gz`;
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body, ContentEncoding: "gzip" }),
    );
    const o: UploadedObject = {
      key,
      sha256: createHash("sha256").update(body).digest("hex"),
      size: body.length,
      entries: 1,
      range: {
        sourceId: "fp1",
        sourceName: "/var/log/postgresql/postgresql.csv",
        start: i * 100,
        end: i * 100 + 100,
      },
      contentEncoding: "gzip",
      uploadedAt: new Date(uploadedAt).toISOString(),
    };
    await journal.record(o);
    objects.push(o);
  }
  t = start + 4 * HOUR; // hours up to the next one closed: the chain covers now
  await journal.close();
  return objects;
}

describe("auditpipe verify", () => {
  it("exits 0 on an intact archive and 1 with the finding printed once an object is gone", async () => {
    const objects = await buildArchive("prod/pg");
    const archive = `s3://${BUCKET}/prod/pg`;
    const flags = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];

    const clean = await verifyCli([archive, ...flags]);
    expect(clean.stderr).not.toMatch(/error/i);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/^host pg-0: 3 manifests, hours /m);
    expect(clean.stdout).toMatch(/^checked 2 objects, 2 entries, /m);
    expect(clean.stdout).toMatch(/^result: clean, no finding$/m);

    const json = await verifyCli([archive, ...flags, "--json", "--host", HOST]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, manifests: 3, objects: 2, findings: [] });

    const victim = objects[0]?.key ?? "";
    await minio.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: victim }));
    const tampered = await verifyCli([archive, ...flags]);
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toContain(`MISSING  ${victim}`);
    expect(tampered.stdout).toMatch(/listed, not in the bucket/);
    expect(tampered.stdout).toMatch(/^result: 1 finding \(1 missing\)$/m);

    const asJson = await verifyCli([archive, ...flags, "--json"]);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout).findings).toEqual([
      expect.objectContaining({ kind: "missing", key: victim }),
    ]);
  });

  it("exits 3, not 1, when there is nothing to verify yet, and says why", async () => {
    const flags = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const empty = await verifyCli([`s3://${BUCKET}/not/there`, ...flags]);
    expect(empty.code).toBe(3);
    expect(empty.stdout).toMatch(
      /^result: nothing to verify yet: nothing stored under the prefix yet: no object and no manifest \(is the archive URL right\?\)$/m,
    );
    const json = await verifyCli([`s3://${BUCKET}/not/there`, ...flags, "--json"]);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      findings: [],
      nothingToVerify: { objects: 0, verifiableAfter: null },
    });
  });

  it("names the bucket, the endpoint, what was expected and what to do, with a code, when the store refuses (issue 26.3)", async () => {
    const flags = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const noBucket = await verifyCli([`s3://no-such-archive/pg`, ...flags]);
    expect(noBucket.code).toBe(1);
    expect(noBucket.stdout).toBe("");
    expect(noBucket.stderr).toMatch(
      new RegExp(
        `^auditpipe verify: AUDITPIPE_ERR_VERIFY_NO_BUCKET: bucket "no-such-archive" at ${minio.endpoint.replace(/[.]/g, "\\.")} does not exist \\(NoSuchBucket, HTTP 404\\): check the bucket in the archive URL`,
      ),
    );
    expect(noBucket.stderr).not.toMatch(/The specified bucket does not exist/);

    // No credentials anywhere in the SDK's chain.
    const bare = await verifyCli([`s3://${BUCKET}/prod/pg`, ...flags], {
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_SESSION_TOKEN: undefined,
      AWS_PROFILE: undefined,
      AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials",
      AWS_CONFIG_FILE: "/nonexistent/config",
      AWS_EC2_METADATA_DISABLED: "true",
      AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
      AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
    });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(
      /^auditpipe verify: AUDITPIPE_ERR_VERIFY_BAD_CREDENTIALS: no credentials to read bucket "audit-archive" at /,
    );
    expect(bare.stderr).toMatch(/AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY/);
    expect(bare.stderr).not.toMatch(/Could not load credentials from any providers/);
  });

  it.each([
    [["verify"], /the archive is missing/],
    [["verify", "/srv/audit"], /must be s3:\/\/bucket\/prefix/],
    [["verify", "s3://b/p", "--from", "yesterday"], /--from must be a date/],
    [["verify", "s3://b/p", "--from", "2026-03-02", "--to", "2026-03-01"], /--to is before --from/],
    [["verify", "s3://b/p", "--s3-endpoint", "localhost:9000"], /--s3-endpoint must be an http\(s\) URL/],
    [["verify", "s3://b/p", "--s3-access-key", "x"], /unknown flag --s3-access-key/],
    [["verify", "s3://b/p", "--host"], /--host needs a value/],
    [
      ["verify", "s3://b/p", "--public-key", "/nonexistent/key.pub"],
      /--public-key \/nonexistent\/key.pub: cannot read it \(ENOENT\)/,
    ],
    [
      ["verify", "s3://b/p", "--public-key", "package.json"],
      /--public-key package.json: holds no PEM public key/,
    ],
  ])("%j exits 2 naming what was wrong", async (argv, message) => {
    const { code, stderr, stdout } = await runCli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stdout).toBe("");
  });
});
