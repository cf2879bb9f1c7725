/**
 * A process out of file descriptors (a flood of connections to the API, say) must not lose its
 * checkpoints or stop: the save waits, reports each retry, and completes once descriptors free up.
 * A real child process with a real open-file limit (`ulimit -n`) really runs out.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const CHILD = fileURLToPath(new URL("./_out-of-files-child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

describe("Checkpointer.save out of file descriptors", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("retries EMFILE with backoff, reports each retry, and saves when descriptors are free", () => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-emfile-"));
    dirs.push(dir);
    const node = [process.execPath, "--conditions=@auditpipe/source", CHILD, dir]
      .map((a) => `'${a}'`)
      .join(" ");
    const run = spawnSync("bash", ["-c", `ulimit -n 128 && exec ${node}`], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 60_000,
    });
    const events = run.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string; code?: string; attempt?: number; position?: number });
    expect(run.stderr).toBe("");
    expect(events[0]).toMatchObject({ event: "exhausted", code: "EMFILE" });
    // Three retries unless the process freed a descriptor of its own in between: at least one.
    const retries = events.filter((e) => e.event === "retry");
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.length).toBeLessThanOrEqual(3);
    expect(retries).toEqual(retries.map((_, i) => ({ event: "retry", attempt: i + 1, code: "EMFILE" })));
    expect(events.at(-1)).toEqual({ event: "saved", position: 4096 });
    expect(run.status).toBe(0);
  });
});
