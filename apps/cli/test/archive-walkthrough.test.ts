/**
 * docs/archive.md's first-time walkthrough, run as written: its `auditpipe run` and
 * `auditpipe verify` commands are read from the page, pointed at a real PostgreSQL and a real
 * MinIO bucket with Object Lock (the walkthrough's MinIO line), and must do what the page says:
 * ship, answer /readyz and /v1/volume, verify with exit 3 before any manifest, and exit 0 with
 * the public key once a stop has written the hour's manifest.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, startMinio, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { getJson, spawnCli, spawnSidecar } from "./_sidecar.ts";

const PAGE = readFileSync(join(repoRoot(), "docs", "archive.md"), "utf8");
const WALKTHROUGH = PAGE.slice(PAGE.indexOf("## First time"), PAGE.indexOf("## Storing in S3"));

/** The shell command in the walkthrough that starts with `prefix`, continuation lines joined, as words. */
function command(prefix: string): string[] {
  const text = WALKTHROUGH.replace(/\\\n\s*/g, " ");
  const line = text.split("\n").find((l) => l.trim().startsWith(prefix));
  if (!line) throw new Error(`docs/archive.md's walkthrough has no \`${prefix}\` command`);
  return line.trim().split(/\s+/);
}

/** The flags the walkthrough adds for MinIO (its `# MinIO or another S3-compatible store` line). */
function minioFlags(endpoint: string): string[] {
  const line = WALKTHROUGH.split("\n").find((l) =>
    l.includes("# MinIO or another S3-compatible store: add "),
  );
  if (!line) throw new Error("docs/archive.md's walkthrough lost its MinIO line");
  return line
    .slice(line.indexOf(" add ") + 5)
    .trim()
    .split(/\s+/)
    .map((w) => (w.startsWith("http://") ? endpoint : w));
}

async function verify(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const child = spawnCli(["verify", ...args], env);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, out };
}

describe("docs/archive.md: the first-time walkthrough, as written", () => {
  it("ships to a locked bucket, answers /readyz and /v1/volume, and verifies: exit 3 before a manifest, 0 after a stop", async () => {
    const run = command("auditpipe run ");
    const verifyCommand = command("auditpipe verify ");
    const bucket = /^s3:\/\/([^/]+)\//.exec(run.find((w) => w.startsWith("s3://"))!)![1]!;
    const minio = await startMinio({ lockedBuckets: [bucket] });
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write, ddl" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-walkthrough-"));
    const env = minio.env();
    // The page's paths are the server's; here they are this cluster's and a temp state volume.
    const here = (word: string) =>
      word.replace("/var/lib/postgresql/15/main", pg.dataDir).replace("/var/lib/auditpipe", work);
    const flags = [...run.slice(2).map(here), ...minioFlags(minio.endpoint)];
    const s3 = minioFlags(minio.endpoint);
    const sidecar = spawnSidecar([...flags, "--listen", "127.0.0.1:0", "--batch-max-age-ms", "200"], env);
    try {
      const url = await sidecar.url();
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "100"]);
      // Step 4: /v1/volume counts what the sink acknowledged; /readyz is ready.
      let pipeline: { sinks: Record<string, { entries: number }> } = { sinks: {} };
      await waitUntil(
        async () => {
          ({ pipeline } = await getJson<{ pipeline: typeof pipeline }>(`${url}/v1/volume`));
          return (pipeline.sinks.s3?.entries ?? 0) >= 200 * 4; // 200 TPC-B transactions, 4 writes each
        },
        60_000,
        () => `nothing acknowledged: ${JSON.stringify(pipeline)}\n${sidecar.stderr().slice(-3000)}`,
        200,
      );
      expect((await fetch(`${url}/readyz`)).status).toBe(200);

      // Step 5 before any manifest: exit 3, "nothing to verify yet".
      const publicKey = join(work, "state", "manifests", "manifest-key.pem.pub");
      const verifyArgs = [
        ...verifyCommand.slice(2).map((w) => (w === "manifest-key.pem.pub" ? publicKey : w)),
        ...s3,
      ];
      expect(verifyArgs).toContain("--public-key");
      const early = await verify(verifyArgs, env);
      expect(early.code, early.out).toBe(3);

      // A stop writes the open hour's manifest: then the chain verifies clean with the public key.
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      const clean = await verify(verifyArgs, env);
      expect(clean.code, clean.out).toBe(0);
    } finally {
      sidecar.child.kill("SIGKILL");
      await pg.stop();
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
