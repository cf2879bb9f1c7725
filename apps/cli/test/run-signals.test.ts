import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { freePort, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { type SidecarProcess, spawnSidecar } from "./_sidecar.ts";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");

/** A log directory holding a csvlog PostgreSQL+pgaudit wrote (a committed fixture). */
function logDirWithRealLog(work: string): string {
  const logDir = join(work, "log");
  mkdirSync(logDir);
  writeFileSync(
    join(logDir, "postgresql.csv"),
    gunzipSync(readFileSync(join(FIXTURES, "read-write-once", "postgresql.csv.gz"))),
  );
  return logDir;
}

/** The processes `pid` started (Linux). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function files(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, encoding: "utf8" });
  } catch {
    return [];
  }
}

describe("auditpipe run and signals", () => {
  it("SIGTERM with the S3 endpoint unreachable exits 0 within 10 s: the spool holds the data", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-signals-"));
    const state = join(work, "state");
    // A loopback port nobody listens on: every upload is refused, as with the store down.
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const sidecar = spawnSidecar(
      [
        ...["--log-dir", logDirWithRealLog(work), "--format", "csvlog", "--state", state],
        ...["--sink", "s3://audit/pg", "--s3-endpoint", endpoint, "--s3-force-path-style"],
        ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--host", "test"],
      ],
      { AWS_ACCESS_KEY_ID: "auditpipe-test", AWS_SECRET_ACCESS_KEY: "auditpipe-test-secret" },
    );
    try {
      const url = await sidecar.url();
      await waitUntil(
        () => /"msg":"upload failed; retrying"/.test(sidecar.stderr()),
        30_000,
        () => `no upload was attempted:\n${sidecar.stderr()}`,
        50,
      );
      expect((await fetch(`${url}/readyz`)).status).toBe(503);
      const spooled = files(join(state, "spool")).filter((f) => f.endsWith(".spool"));
      expect(spooled.length).toBeGreaterThan(0);

      const stopAt = Date.now();
      sidecar.child.kill("SIGTERM");
      const { code, signal } = await sidecar.exited;
      const tookMs = Date.now() - stopAt;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(tookMs).toBeLessThan(10_000);
      expect(sidecar.stderr()).toMatch(/"msg":"stopped"/);
      // The data is still there for the next start.
      expect(files(join(state, "spool")).filter((f) => f.endsWith(".spool"))).toEqual(spooled);
    } finally {
      sidecar.child.kill("SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("SIGHUP to the launcher and its sidecar (a hangup of the process group) stops cleanly with exit 0", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-signals-"));
    const sinkDir = join(work, "sink");
    let sidecar: SidecarProcess | undefined;
    try {
      sidecar = spawnSidecar(
        [
          ...["--log-dir", logDirWithRealLog(work), "--format", "csvlog", "--state", join(work, "state")],
          ...["--sink", sinkDir, "--listen", "127.0.0.1:0", "--batch-max-age-ms", "100"],
        ],
        // Through bin/auditpipe.js on a Node.js without process.execve (Windows): it runs `run` as
        // its child and forwards signals to it.
        { NODE_OPTIONS: `--require ${join(import.meta.dirname, "_no-execve.cjs")}` },
        { built: true },
      );
      await sidecar.url();
      const launcher = sidecar.child.pid!;
      const child = childrenOf(launcher)[0] ?? 0;
      expect(
        child,
        `the launcher's child (none: it ran \`run\` itself?)\n${sidecar.stderr()}`,
      ).toBeGreaterThan(0);
      await waitUntil(
        () => files(sinkDir).some((f) => f.endsWith(".ndjson.zst")), // run's default compression
        30_000,
        () => `nothing shipped:\n${sidecar?.stderr()}`,
        50,
      );
      // Both get it, as from a terminal hangup: the sidecar directly and again through the launcher.
      process.kill(child, "SIGHUP");
      process.kill(launcher, "SIGHUP");
      const { code, signal } = await sidecar.exited;
      expect({ code, signal }, sidecar.stderr()).toEqual({ code: 0, signal: null });
      expect(sidecar.stderr()).toMatch(
        /"signal":"SIGHUP","msg":"stopping: flushing batches and saving checkpoints"/,
      );
      expect(sidecar.stderr()).toMatch(/"msg":"stopped"/);
    } finally {
      sidecar?.child.kill("SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  });
});
