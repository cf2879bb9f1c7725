/**
 * docs/archive.md's first-time walkthrough, command by command as the page writes them, in one
 * bash session: the set-up's MinIO started with the page's command, the bucket created with its
 * curl, the sidecar run against a real PostgreSQL, the page's `curl` looks, and `verify` with the
 * public key after the sidecar is stopped as the page says (Ctrl-C). Then the "Signed manifests"
 * section's openssl commands. What the test changes, and only that: ports (free ones instead of
 * 9000, 9001, 9187), paths (a temp dir for /tmp/auditpipe-minio and /var/lib/auditpipe, the test
 * cluster's data directory for /var/lib/postgresql/15/main), and batches closed after 200 ms
 * instead of a minute (AUDITPIPE_BATCH_MAX_AGE_MS, so objects appear at once).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { freePort, repoRoot, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { walkedCommands } from "./_doc-blocks.ts";
import { installedBin, type Server, Shell } from "./_doc-walk.ts";

const ROOT = repoRoot();
const PAGE = "docs/archive.md";

describe("docs/archive.md: the first-time walkthrough, as written", () => {
  it("MinIO, bucket, credentials, run, look, verify: every step succeeds, and verify is clean after the stop", async () => {
    const steps = walkedCommands(PAGE, "## First time");
    const keys = walkedCommands(PAGE, "### Signed manifests");
    const work = mkdtempSync(join(tmpdir(), "auditpipe-walkthrough-"));
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write, ddl" } });
    const [minioPort, consolePort, apiPort] = [await freePort(), await freePort(), await freePort()];
    // The installed command, as `npm install -g` would put it on PATH: the built launcher, on the
    // Node.js the suite runs on.
    const bin = installedBin(join(work, "bin"));
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(AWS_|AUDITPIPE_|MINIO_|npm_)/.test(k)),
    );
    env.PATH = [
      bin,
      ...(process.env.PATH ?? "").split(delimiter).filter((d) => !d.includes("node_modules")),
    ].join(delimiter);
    env.AUDITPIPE_LISTEN = `127.0.0.1:${apiPort}`;
    env.AUDITPIPE_BATCH_MAX_AGE_MS = "200";
    const here = (command: string): string =>
      command
        .replaceAll("127.0.0.1:9000", `127.0.0.1:${minioPort}`)
        .replaceAll("127.0.0.1:9001", `127.0.0.1:${consolePort}`)
        .replaceAll("127.0.0.1:9187", `127.0.0.1:${apiPort}`)
        .replaceAll("/tmp/auditpipe-minio", join(work, "minio"))
        .replaceAll("/var/lib/postgresql/15/main", pg.dataDir)
        .replaceAll("/var/lib/auditpipe", join(work, "auditpipe"));
    const shell = new Shell(ROOT, env);
    const api = `http://127.0.0.1:${apiPort}`;
    let sidecar: Server | undefined;
    const ran: string[] = [];
    try {
      for (const step of steps) {
        const command = here(step.text);
        if (/^auditpipe run /.test(command)) {
          sidecar = await shell.start(command);
          await waitUntil(
            async () => (await fetch(`${api}/healthz`).catch(() => undefined))?.ok === true,
            60_000,
            () => `the sidecar never answered:\n${sidecar?.output().slice(-3000)}`,
          );
          ran.push(command);
          continue;
        }
        if (/\/readyz$/.test(command)) {
          // What a user waits for before looking: PostgreSQL writes audit entries, the sink acks them.
          await pg.pgbench(["-i", "-s", "1", "-q"]);
          await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "100"]);
          await waitUntil(
            async () => {
              const metrics = await (await fetch(`${api}/metrics`)).text();
              return (
                Number(/^auditpipe_sink_entries_total\{sink="s3"\} (\d+)/m.exec(metrics)?.[1] ?? 0) >= 800
              );
            },
            60_000,
            () => `nothing acknowledged:\n${sidecar?.output().slice(-3000)}`,
            200,
          );
        }
        if (/^auditpipe verify /.test(command)) {
          // Before the stop there is nothing to verify yet (exit 3); the page says to stop it first.
          const early = await shell.run(command);
          expect(early.code, early.output).toBe(3);
          expect(await sidecar!.stop("SIGINT"), sidecar!.output().slice(-3000)).toBe(0);
        }
        const result = await shell.run(command);
        expect(result.code, `${step.block.page}:${step.line}: ${command}\n${result.output}`).toBe(0);
        ran.push(command);
        if (/\/readyz$/.test(command)) expect(JSON.parse(result.output)).toMatchObject({ ready: true });
        if (/\/metrics/.test(command)) expect(result.output).toMatch(/^auditpipe_spool_bytes \d+/m);
        if (/list-type=2/.test(command))
          expect(result.output).toMatch(/^<Key>pg\/prod\/dt=\d{4}-\d\d-\d\d\/hour=/m);
        if (/^auditpipe verify /.test(command)) expect(result.output).toMatch(/result: clean|no finding/i);
      }
      expect(ran.some((c) => c.startsWith("auditpipe run "))).toBe(true);
      expect(ran.some((c) => c.startsWith("auditpipe verify "))).toBe(true);
      expect(ran.some((c) => c.startsWith("curl -sf --aws-sigv4") && c.includes("-X PUT"))).toBe(true);

      // "Signed manifests": the openssl commands, in a directory of their own.
      mkdirSync(join(work, "keys"));
      expect((await shell.run(`cd ${join(work, "keys")}`)).code).toBe(0);
      for (const step of keys) {
        const result = await shell.run(here(step.text));
        expect(result.code, `${step.block.page}:${step.line}: ${step.text}\n${result.output}`).toBe(0);
      }
      const check = await shell.run("openssl pkey -pubin -in manifest-key.pub.pem -noout -text | head -1");
      expect(check.output).toMatch(/ED25519 Public-Key/);
    } finally {
      await sidecar?.stop("SIGKILL").catch(() => {});
      await shell.close();
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 300_000);
});
