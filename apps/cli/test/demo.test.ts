import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { npmEnv, repoRoot, shippedKeys, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnCli } from "./_sidecar.ts";

/** Runs a command to its exit, stdout and stderr kept. */
async function finished(
  child: ReturnType<typeof spawnCli>,
): Promise<{ code: number | null; out: string; err: string }> {
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, out, err };
}

describe("auditpipe demo", () => {
  // The first three run at once: each demo has a scratch server, ports and temp dirs of its own,
  // and spends most of its time waiting on them. The Ctrl-C one runs alone after them: it checks
  // that its run left no temp dir behind, which a demo running beside it would have.
  it.concurrent("runs a scratch PostgreSQL, pgbench and the sidecar, shows the live view, and cleans up", async ({
    expect,
  }) => {
    const { code, out, err } = await finished(spawnCli(["demo", "--duration", "4", "--tps", "100"]));
    expect(err).toContain("starting a scratch PostgreSQL 15");
    expect(code).toBe(0);
    // 4 s of pgbench is too little log time to project a day from: the view says so.
    expect(out).toMatch(
      /^projected not yet: the entries span [\d.]+ s of log time; a projection needs at least 60 s/m,
    );
    expect(out).toMatch(/^WRITE +[\d,]+ /m);
    const final = /demo: ([\d,]+) audit entries .* metered/.exec(out);
    expect(Number(final?.[1]?.replaceAll(",", ""))).toBeGreaterThan(100);
    // The default archive is a temp directory: the view and the last lines say it is removed.
    expect(out).toMatch(
      /^objects +\S+ \(a temp directory, removed at the end; --sink DIR keeps the objects\)$/m,
    );
    expect(out).toContain("removed with the demo: pnpm demo --sink DIR keeps them");
    const temp = /^objects +(\S+) \(a temp directory/m.exec(out)?.[1];
    expect(temp && existsSync(temp)).toBe(false);
  }, 120_000);

  it.concurrent("with --sink DIR, the last lines point at the objects, which stay", async ({ expect }) => {
    const keep = mkdtempSync(join(tmpdir(), "auditpipe-demo-sink-"));
    try {
      const sink = join(keep, "archive");
      const { code, out } = await finished(
        spawnCli(["demo", "--duration", "3", "--tps", "50", "--sink", sink]),
      );
      expect(code).toBe(0);
      expect(out).toContain(`demo: the zstd NDJSON objects stay in ${sink}`);
      expect(shippedKeys(sink).length).toBeGreaterThan(0);
    } finally {
      rmSync(keep, { recursive: true, force: true });
    }
  }, 120_000);

  it.concurrent("with --minio, the last lines say the scratch MinIO and its archive are gone", async ({
    expect,
  }) => {
    const { code, out } = await finished(spawnCli(["demo", "--duration", "6", "--tps", "50", "--minio"]));
    expect(code).toBe(0);
    const shipped =
      /demo: ([\d,]+) entries shipped in (\d+) objects to s3:\/\/audit\/demo on the scratch MinIO/.exec(out);
    expect(Number(shipped?.[2])).toBeGreaterThan(0);
    expect(out).toContain("the scratch MinIO and its archive are removed with the demo");
  }, 120_000);

  it("`pnpm demo` ends on Ctrl-C (SIGINT to its process group) with exit 0 and no ELIFECYCLE", async () => {
    // As a terminal does it: pnpm and everything under it in one foreground process group, and
    // Ctrl-C signals the whole group; pnpm also forwards a second SIGINT of its own.
    const before = new Set(readdirSync(tmpdir()).filter((d) => d.startsWith("auditpipe-demo-")));
    // A terminal's environment: no node_modules/.bin on PATH (under `pnpm test` it is there, and
    // its `node` is pnpm's shell shim, which would run pnpm itself and die of the SIGINT).
    const PATH = (process.env.PATH ?? "")
      .split(delimiter)
      .filter((dir) => !dir.includes("node_modules"))
      .join(delimiter);
    const child = spawn("pnpm", ["demo", "--tps", "100"], {
      cwd: repoRoot(),
      env: npmEnv({ PATH }),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("close", (code, signal) => resolve({ code, signal })),
    );
    try {
      await waitUntil(
        () => /^shipped +[1-9][\d,]* entries acknowledged/m.test(out) || child.exitCode !== null,
        90_000,
        () => `the demo never showed shipped entries:\n${out.slice(-2000)}`,
        200,
      );
      process.kill(-child.pid!, "SIGINT");
      const { code, signal } = await closed;
      expect(out).not.toContain("ELIFECYCLE");
      expect(out).not.toMatch(/Command failed/);
      expect({ code, signal }, out.slice(-2000)).toEqual({ code: 0, signal: null });
      expect(out).toMatch(/demo: [\d,]+ entries shipped to /);
      const left = readdirSync(tmpdir()).filter((d) => d.startsWith("auditpipe-demo-") && !before.has(d));
      expect(left).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
    }
  }, 150_000);
});
