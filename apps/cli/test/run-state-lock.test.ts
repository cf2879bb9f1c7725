import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { type SidecarProcess, spawnSidecar } from "./_sidecar.ts";

describe("auditpipe run and its state directory", () => {
  it("refuses a second sidecar on the same state directory, naming the holder's PID; kill -9 frees it at once", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-lock-"));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const state = join(work, "state");
    const args = (sink: string): string[] => [
      ...["--log-dir", logDir, "--format", "csvlog", "--state", state, "--sink", join(work, sink)],
      ...["--listen", "127.0.0.1:0"],
    ];
    const running: SidecarProcess[] = [];
    try {
      const first = spawnSidecar(args("sink-1"));
      running.push(first);
      await first.url();

      const second = spawnSidecar(args("sink-2"));
      running.push(second);
      await waitUntil(
        () => second.child.exitCode !== null || /"url":"http/.test(second.stderr()),
        30_000,
        () => `second sidecar neither refused nor started:\n${second.stderr()}`,
        50,
      );
      expect(second.child.exitCode).toBe(1); // not listening alongside the first
      expect(second.stderr()).toContain(`is in use by another auditpipe run, PID ${first.child.pid}`);
      expect(first.child.exitCode).toBe(null);

      // The kernel closes a dead holder's socket: the lock is free at once, no stale-lock timeout.
      first.child.kill("SIGKILL");
      await first.exited;
      const third = spawnSidecar(args("sink-3"));
      running.push(third);
      await third.url();
      third.child.kill("SIGTERM");
      expect((await third.exited).code).toBe(0);
      expect(existsSync(join(state, "auditpipe.lock"))).toBe(false); // a clean stop gives it up
    } finally {
      for (const p of running) p.child.kill("SIGKILL");
      rmSync(work, { recursive: true, force: true });
    }
  });
});
