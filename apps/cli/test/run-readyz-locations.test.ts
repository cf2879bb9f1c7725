/**
 * The unauthenticated `/readyz` says why the sidecar is not ready but not where it ships: a real
 * `auditpipe run` process follows a real PostgreSQL csvlog (a fixture) into an S3 endpoint that
 * refuses connections, and the 503 answer names the reason without bucket, endpoint or spool path.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

const CASE = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases", "session-all");

/** A loopback port nobody listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("auditpipe run: /readyz without a token", () => {
  it("gives the reason the sink fails, without its bucket, endpoint or spool path", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-readyz-"));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    writeFileSync(join(logDir, "postgresql.csv"), readFixture(CASE, "postgresql.csv.gz"));
    const bucket = "bucket-name-4c1e";
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const spool = join(work, "spool-path-9b2d");
    const sidecar = spawnSidecar(
      [
        "--log-dir",
        logDir,
        "--format",
        "csvlog",
        "--sink",
        `s3://${bucket}/prefix-7a3f`,
        "--s3-endpoint",
        endpoint,
        "--s3-force-path-style",
        "--spool",
        spool,
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ],
      { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test-secret", AWS_REGION: "us-east-1" },
    );
    try {
      const url = await sidecar.url();
      let body = "";
      await waitUntil(
        async () => {
          const answer = await fetch(`${url}/readyz`);
          body = await answer.text();
          return answer.status === 503 && body.includes("sink s3");
        },
        30_000,
        () => `/readyz never reported the failing sink: ${body}\n${sidecar.stderr()}`,
        200,
      );
      const { ready, reasons } = JSON.parse(body) as { ready: boolean; reasons: string[] };
      expect(ready).toBe(false);
      expect(reasons.join("\n")).toMatch(
        /^sink s3 (retrying|failing): AUDITPIPE_ERR_SINK_UNREACHABLE \(the store does not answer or keeps failing\); data is kept and retried$/m,
      );
      for (const location of [bucket, "prefix-7a3f", endpoint, "127.0.0.1", spool, "spool-path-9b2d", work])
        expect(body).not.toContain(location);
      // The operator still learns where from the log.
      expect(sidecar.stderr()).toContain(bucket);
    } finally {
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      rmSync(work, { recursive: true, force: true });
    }
  });
});
