/**
 * A flood of connections to the API cannot take the pipeline down: a real `auditpipe run` under a
 * low open-file limit (`ulimit -n 128`) holds 200 idle connects to its API while PostgreSQL's log
 * rotates to a new file, and still opens that file, checkpoints and ships every entry of it. (It
 * used to accept every socket until it could not open its checkpoint file, and exit.)
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import { shippedRecords, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const CASES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");
const CLI = join(import.meta.dirname, "..", "src", "_run.ts");
const ROOT = join(import.meta.dirname, "..", "..", "..");

/** A connect that settles either way: accepted (and held), or refused/reset at once. */
function tryConnect(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.on("error", () => undefined);
    socket.once("connect", () => resolve(socket));
    socket.once("close", () => resolve(socket));
  });
}

describe("auditpipe run under a connection flood", () => {
  it("keeps following, checkpointing and shipping with 200 connects held at ulimit -n 128", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-flood-"));
    const logDir = join(work, "log");
    const sinkDir = join(work, "sink");
    mkdirSync(logDir);
    const first = join(CASES, "session-all");
    const second = join(CASES, "read-write-once");
    const firstEntries = readExpected(first).formats["postgresql.csv.gz"]!.entries;
    const secondEntries = readExpected(second).formats["postgresql.csv.gz"]!.entries;
    writeFileSync(join(logDir, "postgresql-1.csv"), readFixture(first, "postgresql.csv.gz"));
    const args = [
      "--conditions=@auditpipe/source",
      CLI,
      "run",
      "--log-dir",
      logDir,
      "--format",
      "csvlog",
      "--sink",
      sinkDir,
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
      "--batch-max-age-ms",
      "200",
    ];
    const child = spawn("bash", ["-c", 'ulimit -n 128 && exec "$0" "$@"', process.execPath, ...args], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const sockets: Socket[] = [];
    try {
      await waitUntil(
        () => /"url":"http:[^"]+"/.test(stderr) || child.exitCode !== null,
        30_000,
        () => `the sidecar did not start:\n${stderr}`,
      );
      const url = /"url":"(http:[^"]+)"/.exec(stderr)?.[1];
      expect(url, stderr).toBeDefined();
      const port = Number(new URL(url!).port);
      await waitUntil(
        () => shippedRecords(sinkDir).length === firstEntries,
        30_000,
        () => `the first file was not shipped:\n${stderr}`,
        200,
      );

      for (let i = 0; i < 200; i++) sockets.push(await tryConnect(port));
      // PostgreSQL rotates: a new file to open and checkpoint while the sockets are held.
      writeFileSync(join(logDir, "postgresql-2.csv"), readFixture(second, "postgresql.csv.gz"));
      await waitUntil(
        () => shippedRecords(sinkDir).length === firstEntries + secondEntries || child.exitCode !== null,
        30_000,
        () => `the new file was not shipped during the flood:\n${stderr}`,
        200,
      );
      expect(child.exitCode, stderr).toBeNull();
      expect(shippedRecords(sinkDir)).toHaveLength(firstEntries + secondEntries);

      for (const s of sockets.splice(0)) s.destroy();
      await waitUntil(
        async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200,
        10_000,
        () => "the API did not answer after the flood",
      );
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(stderr).not.toMatch(/EMFILE/);
    } finally {
      for (const s of sockets) s.destroy();
      child.kill("SIGKILL");
      await exited;
      rmSync(work, { recursive: true, force: true });
    }
  }, 90_000);
});
