/**
 * The checkout's own entry point, `node_modules/.bin/auditpipe`, as a supervisor runs it: SIGTERM
 * to the process it started reaches the sidecar, and that process exits only once the sidecar has
 * flushed — the open batch shipped, exit 0, nothing left running. (pnpm links the Node binary as a
 * shell script that ran node as its child: SIGTERM killed that shell at once, the sidecar ran on
 * orphaned and unsignalled, and the waiter saw an exit before anything was flushed.
 * scripts/link-node.mjs, the root postinstall, makes .bin/node a symlink.)
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import { shippedRecords, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const ENTRY = join(ROOT, "node_modules", ".bin", "auditpipe");
const CASE = join(ROOT, "fixtures", "cases", "session-all");

/** Every process below `pid` (Linux), children first found first. */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** Gone, or a zombie nobody reaped yet: either way no longer running. */
function ended(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

describe("node_modules/.bin/auditpipe under a supervisor", () => {
  it("SIGTERM reaches the sidecar and the entry point exits 0 only after the flush", async () => {
    // What the other .bin shims exec: the Node binary itself, not a shell that waits on it.
    expect(lstatSync(join(ROOT, "node_modules", ".bin", "node")).isSymbolicLink()).toBe(true);

    const work = mkdtempSync(join(tmpdir(), "auditpipe-entry-"));
    const logDir = join(work, "log");
    const sinkDir = join(work, "sink");
    mkdirSync(logDir);
    writeFileSync(join(logDir, "postgresql-1.csv"), readFixture(CASE, "postgresql.csv.gz"));
    const entries = readExpected(CASE).formats["postgresql.csv.gz"]!.entries;
    // A batch that stays open until the stop: only the flush at SIGTERM ships it.
    const child = spawn(
      ENTRY,
      [
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
        "3600000",
        "--batch-max-entries",
        "1000000",
      ],
      { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    let shippedAtExit = -1;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => {
        shippedAtExit = existsSync(sinkDir) ? shippedRecords(sinkDir).length : 0;
        resolve({ code, signal });
      }),
    );
    let below: number[] = [];
    try {
      await waitUntil(
        () => /"url":"http:[^"]+"/.test(stderr) || child.exitCode !== null,
        60_000,
        () => `the sidecar did not start:\n${stderr}`,
      );
      const url = /"url":"(http:[^"]+)"/.exec(stderr)![1];
      await waitUntil(
        async () =>
          ((await (await fetch(`${url}/v1/volume`)).json()) as { totals: { entries: number } }).totals
            .entries === entries,
        30_000,
        () => `the file was not read:\n${stderr}`,
        200,
      );
      expect(shippedRecords(sinkDir)).toHaveLength(0);
      below = descendants(child.pid!);

      child.kill("SIGTERM");
      const { code, signal } = await exited;
      expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
      // The flush was complete when the entry point exited, not later.
      expect(shippedAtExit).toBe(entries);
      expect(stderr).toMatch(/"msg":"stopped"/);
      for (const pid of below) expect(ended(pid), `pid ${pid} outlived the entry point`).toBe(true);
    } finally {
      child.kill("SIGKILL");
      await exited;
      // On failure the old shim left the sidecar orphaned: stop what this test started.
      for (const pid of below) if (!ended(pid)) process.kill(pid, "SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
