import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

/** Preloaded by NODE_OPTIONS: a Node.js without process.execve, as on Windows. */
const NO_EXECVE = join(import.meta.dirname, "_no-execve.cjs");

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

function sidecarArgs(work: string): string[] {
  const logDir = join(work, "log");
  mkdirSync(logDir);
  return [
    ...["--log-dir", logDir, "--format", "csvlog", "--sink", join(work, "sink")],
    ...["--state", join(work, "state"), "--listen", "127.0.0.1:0"],
  ];
}

describe("bin/auditpipe.js run without heap limits (the launcher's own)", () => {
  it("replaces itself with the sidecar under the heap limits: one process, stopped by a signal to it", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-launcher-"));
    const sidecar = spawnSidecar(sidecarArgs(work), { NODE_OPTIONS: "" }, { built: true });
    try {
      const url = await sidecar.url();
      const pid = sidecar.child.pid!;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect(cmdline).toContain("--max-old-space-size=128");
      expect(cmdline).toContain("--max-semi-space-size=4");
      expect(cmdline).toContain("--initial-old-space-size=64");
      expect(childrenOf(pid)).toEqual([]);
      // glibc's malloc with a fixed mmap threshold (bin/auditpipe.js, runMallocEnv).
      expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain(
        "MALLOC_MMAP_THRESHOLD_=131072",
      );
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      sidecar.child.kill("SIGTERM");
      expect(await sidecar.exited).toEqual({ code: 0, signal: null });
      expect(sidecar.stderr()).toMatch(/"msg":"stopped"/);
    } finally {
      sidecar.child.kill("SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("leaves the user's own malloc settings as they are", async () => {
    for (const [given, expected] of [
      [{ MALLOC_MMAP_THRESHOLD_: "4194304" }, "MALLOC_MMAP_THRESHOLD_=4194304"],
      [{ GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=65536" }, undefined],
    ] as const) {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-launcher-"));
      const sidecar = spawnSidecar(sidecarArgs(work), { NODE_OPTIONS: "", ...given }, { built: true });
      try {
        await sidecar.url();
        const environ = readFileSync(`/proc/${sidecar.child.pid}/environ`, "utf8").split("\0");
        expect(environ.filter((v) => v.startsWith("MALLOC_MMAP_THRESHOLD_="))).toEqual(
          expected ? [expected] : [],
        );
        expect(environ.filter((v) => v.startsWith("AUDITPIPE_SET_MALLOC="))).toEqual([]);
        sidecar.child.kill("SIGTERM");
        expect(await sidecar.exited).toEqual({ code: 0, signal: null });
      } finally {
        sidecar.child.kill("SIGKILL");
        rmSync(work, { recursive: true, force: true });
      }
    }
  });

  it("without process.execve, runs the sidecar as its child, which stops cleanly if the launcher is killed -9", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-launcher-"));
    const sidecar = spawnSidecar(
      sidecarArgs(work),
      { NODE_OPTIONS: `--require ${NO_EXECVE}` },
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
