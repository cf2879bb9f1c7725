/**
 * The state directory's file system fills up, or is read-only: the sidecar must not die or lose
 * anything. Real file systems: a small tmpfs mounted for the test (root only, as the test suite
 * runs here), a real PostgreSQL and the real `auditpipe run`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { spawnCli, spawnSidecar } from "./_sidecar.ts";

async function readiness(url: string): Promise<{ status: number; reasons: string[] }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, reasons: ((await response.json()) as { reasons: string[] }).reasons };
}

async function metrics(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

/** Mounts a tmpfs of `sizeKb` (read-only with `ro`) at a new directory; the caller unmounts it. */
function mountTmpfs(sizeKb: number, ro = false): string {
  if (process.getuid?.() !== 0)
    throw new Error("this test mounts a tmpfs and needs root: run the test suite as root (as CI does)");
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-statefs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `${ro ? "ro," : ""}size=${sizeKb}k,mode=0755`, "tmpfs", dir]);
  return dir;
}

function unmount(dir: string): void {
  execFileSync("umount", [dir]);
  rmSync(dir, { recursive: true, force: true });
}

/** Writes into `dir` until its file system refuses with ENOSPC; returns the filler's path. */
function fill(dir: string): string {
  const path = join(dir, "filler");
  writeFileSync(path, "");
  let chunk = 1 << 20;
  for (;;) {
    try {
      writeFileSync(path, Buffer.alloc(chunk), { flag: "a" });
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOSPC") throw error;
      if (chunk === 1) return path;
      chunk = Math.max(1, chunk >> 4);
    }
  }
}

describe("auditpipe run when its state directory cannot be written", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("a full state file system: waits, not ready with the reason and a metric, then ships everything once", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write,ddl" } });
    cleanups.push(() => pg.stop());
    const mount = mountTmpfs(4096);
    cleanups.push(() => unmount(mount));
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-state-full-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const sinkDir = join(work, "sink");
    const sidecar = spawnSidecar([
      ...["--pgdata", pg.dataDir, "--sink", sinkDir, "--state", join(mount, "state")],
      ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--poll-interval-ms", "50"],
    ]);
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    const url = await sidecar.url();
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await logSettled(pg.logDir);
    const before = writtenKeys(pg.logDir);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= before.length,
      30_000,
      () => `not shipped before the disk filled:\n${sidecar.stderr()}`,
      100,
    );

    const filler = fill(mount);
    await pg.pgbench(["-n", "-c", "2", "-t", "200"]);
    await waitUntil(
      async () => (await readiness(url)).status === 503,
      20_000,
      () => `never unready:\n${sidecar.stderr()}`,
      100,
    );
    expect((await readiness(url)).reasons.join("; ")).toMatch(
      /checkpoints cannot be saved in the state directory \(ENOSPC: no space left on its file system\); reading waits, nothing is lost/,
    );
    const text = await metrics(url);
    expect(text).toMatch(/^auditpipe_checkpoint_save_failing 1$/m);
    expect(text).toMatch(/^auditpipe_checkpoint_save_errors_total\{code="ENOSPC"\} [1-9]/m);
    const logged = sidecar
      .stderr()
      .split("\n")
      .filter((l) => l.includes('"code":"ENOSPC"'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(logged[0]).toMatchObject({ level: 50 });
    expect(logged[0]!.msg).toMatch(/cannot save checkpoints in the state directory \(ENOSPC/);
    expect(sidecar.child.exitCode).toBe(null);

    // Space comes back: it reads on from where it waited, and nothing is missing or doubled.
    rmSync(filler);
    await logSettled(pg.logDir);
    const written = writtenKeys(pg.logDir);
    expect(written.length).toBeGreaterThan(before.length);
    await waitUntil(
      () => shippedKeys(sinkDir).length >= written.length,
      60_000,
      () => `not shipped after space came back:\n${sidecar.stderr()}`,
      100,
    );
    await waitUntil(
      async () => (await readiness(url)).status === 200,
      20_000,
      () => `still unready: ${sidecar.stderr()}`,
      100,
    );
    expect(await metrics(url)).toMatch(/^auditpipe_checkpoint_save_failing 0$/m);
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
    const shipped = shippedKeys(sinkDir);
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(written));
  });

  it("a state directory to create on a read-only file system: says read-only", async () => {
    const mount = mountTmpfs(64, true);
    cleanups.push(() => unmount(mount));
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-state-ro-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const child = spawnCli([
      "run",
      ...["--log-dir", logDir, "--format", "csvlog", "--sink", join(work, "sink")],
      ...["--state", join(mount, "state", "a"), "--listen", "127.0.0.1:0"],
    ]);
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain(`--state ${join(mount, "state", "a")}: EROFS: cannot create`);
    expect(stderr).toContain(`${mount} is on a read-only file system`);
    expect(stderr).not.toContain("ENOENT");
  });
});
