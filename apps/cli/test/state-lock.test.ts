import { type ChildProcessByStdio, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const LOCK_MODULE = join(import.meta.dirname, "..", "src", "run", "state-lock.ts");
const ROOT = join(import.meta.dirname, "..", "..", "..");

/**
 * A process that takes the state lock and says `won PID` or `refused HOLDER`, then holds what it
 * got until its stdin closes. Separate processes: the lock is between processes.
 */
function locker(dir: string): {
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  out: () => string;
} {
  const script = `
    const { lockStateDir } = await import(${JSON.stringify(LOCK_MODULE)});
    try {
      const lock = await lockStateDir(${JSON.stringify(dir)});
      console.log("won " + process.pid);
      process.stdin.resume();
      process.stdin.on("end", () => lock.release().then(() => process.exit(0)));
    } catch (error) {
      console.log("refused " + (error.holderPid ?? "?") + " " + error.code);
      process.exit(1);
    }`;
  const child = spawn(
    process.execPath,
    ["--conditions=@auditpipe/source", "--input-type=module", "-e", script],
    { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  return { child, out: () => out };
}

describe("the state directory lock", () => {
  it("of several processes starting at once on a dead holder's lock, exactly one wins; the others name it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-statelock-"));
    const started: ReturnType<typeof locker>[] = [];
    try {
      // A holder killed -9: its socket file stays, and nobody listens on it any more.
      const dead = locker(dir);
      started.push(dead);
      await waitUntil(
        () => dead.out().startsWith("won"),
        30_000,
        () => "first locker did not win",
        20,
      );
      dead.child.kill("SIGKILL");
      await new Promise((resolve) => dead.child.once("exit", resolve));
      expect(existsSync(join(dir, "auditpipe.lock"))).toBe(true);

      const racers = [0, 1, 2, 3].map(() => locker(dir));
      started.push(...racers);
      await waitUntil(
        () => racers.every((r) => /^(won|refused) /.test(r.out())),
        60_000,
        () => `not all answered: ${JSON.stringify(racers.map((r) => r.out()))}`,
        20,
      );
      const winners = racers.filter((r) => r.out().startsWith("won"));
      expect(winners).toHaveLength(1);
      const winner = winners[0]!.child.pid;
      for (const r of racers.filter((x) => x !== winners[0]))
        expect(r.out().trim()).toBe(`refused ${winner} AUDITPIPE_ERR_STATE_LOCKED`);

      // Released cleanly: the next one takes it.
      winners[0]!.child.stdin.end();
      await new Promise((resolve) => winners[0]!.child.once("exit", resolve));
      const next = locker(dir);
      started.push(next);
      await waitUntil(
        () => next.out() !== "",
        30_000,
        () => "next locker did not answer",
        20,
      );
      expect(next.out()).toMatch(/^won /);
    } finally {
      for (const s of started) s.child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
