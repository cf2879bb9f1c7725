import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

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

/** Gone, or a zombie waiting for whoever adopted it to reap it: either way, no longer running. */
function ended(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return true;
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

describe("bin/auditpipe.js run (the launcher's re-exec)", () => {
  it("runs the sidecar under the heap limits, and the sidecar stops cleanly if the launcher is killed -9", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-launcher-"));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const sidecar = spawnSidecar(
      [
        "--log-dir",
        logDir,
        "--format",
        "csvlog",
        "--sink",
        join(work, "sink"),
        "--state",
        join(work, "state"),
      ].concat(["--listen", "127.0.0.1:0"]),
      { NODE_OPTIONS: "" },
      { built: true },
    );
    let child = 0;
    try {
      await sidecar.url();
      const launcher = sidecar.child.pid!;
      child = childrenOf(launcher)[0] ?? 0;
      expect(child).toBeGreaterThan(0);
      const cmdline = readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0");
      expect(cmdline).toContain("--max-old-space-size=128");
      expect(cmdline).toContain("--max-semi-space-size=4");

      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      await waitUntil(
        () => ended(child),
        10_000,
        () => `the sidecar (pid ${child}) outlived its launcher`,
        100,
      );
      expect(sidecar.stderr()).toMatch(/"msg":"the launcher is gone"/);
      expect(sidecar.stderr()).toMatch(/"msg":"stopped"/);
    } finally {
      if (child > 0 && !ended(child)) process.kill(child, "SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  });
});
