import { chmodSync, chownSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { csvlogKeys, writtenKeys } from "@auditpipe/fixtures/oracle";
import { duplicates, logSettled, shippedKeys, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

async function readiness(url: string): Promise<{ status: number; reasons: string[] }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, reasons: ((await response.json()) as { reasons: string[] }).reasons };
}

async function metric(url: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("auditpipe run and a log file it cannot read", () => {
  it("reports a mode-000 file (log, metric, /readyz), ships every other file, and reads it once it can", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-unreadable-"));
    // Mode 000 stops every process but root's (root has CAP_DAC_OVERRIDE, and tests run as root
    // here). So the sidecar runs as the owner of the log directory (PostgreSQL's OS user, as a
    // sidecar sharing PostgreSQL's log volume does): for it, a file at mode 000 is unreadable,
    // exactly as in production. Not root: the test's own user owns the files already.
    const owner = statSync(pg.logDir);
    const user = process.getuid?.() === 0 ? { uid: owner.uid, gid: owner.gid } : undefined;
    if (user) chownSync(work, user.uid, user.gid);
    const sinkDir = join(work, "sink");
    let sidecar: ReturnType<typeof spawnSidecar> | undefined;
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
      const locked = pg.currentLogfiles().csvlog!;
      await pg.rotate();
      await logSettled(pg.logDir);
      chmodSync(locked, 0o000);

      sidecar = spawnSidecar(
        [
          ...[
            "--log-dir",
            pg.logDir,
            "--format",
            "csvlog",
            "--sink",
            sinkDir,
            "--state",
            join(work, "state"),
          ],
          ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "100", "--poll-interval-ms", "50"],
        ],
        {},
        user ? { user } : {},
      );
      const url = await sidecar.url();
      await waitUntil(
        async () => (await readiness(url)).status === 503,
        10_000,
        () => `never unready:\n${sidecar?.stderr()}`,
        50,
      );
      const unready = await readiness(url);
      expect(unready.reasons.join("; ")).toMatch(/1 log file\(s\) cannot be read \(EACCES\)/);
      expect(unready.reasons.join("; ")).not.toContain(locked); // /readyz is unauthenticated: no paths
      expect(await metric(url, "auditpipe_files_unreadable")).toBe(1);
      const warning = sidecar
        .stderr()
        .split("\n")
        .filter((l) => l.includes("AUDITPIPE_ERR_FILE_UNREADABLE"))
        .map((l) => JSON.parse(l) as { level: number; file: string; err: string });
      expect(warning[0]).toMatchObject({ level: 40, file: locked, err: "EACCES" });

      // Every other file is followed meanwhile, new entries included.
      await pg.pgbench(["-n", "-c", "1", "-t", "100"]);
      await logSettled(pg.logDir);
      const current = pg.currentLogfiles().csvlog!;
      const others = csvlogKeys(current);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= others.length,
        30_000,
        () => `the readable file was not shipped:\n${sidecar?.stderr()}`,
        100,
      );
      expect(new Set(shippedKeys(sinkDir))).toEqual(new Set(others));
      expect(sidecar.child.exitCode).toBe(null);

      // Readable again: tried at the next scan, read from its start, and the sidecar is ready.
      chmodSync(locked, 0o600);
      const written = writtenKeys(pg.logDir);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= written.length,
        30_000,
        () => `the file was not read once readable:\n${sidecar?.stderr()}`,
        100,
      );
      await waitUntil(
        async () => (await readiness(url)).status === 200,
        10_000,
        () => "still unready",
        50,
      );
      expect(await metric(url, "auditpipe_files_unreadable")).toBe(0);
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      const shipped = shippedKeys(sinkDir);
      expect(duplicates(shipped)).toEqual([]);
      expect(new Set(shipped)).toEqual(new Set(written));
    } finally {
      sidecar?.child.kill("SIGKILL");
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
