/**
 * README.md walked command by command, as a new user would, from a clean checkout: the files git
 * tracks (as they are in this work tree, nothing built, no node_modules), in a user's environment
 * (the machine's Node first on PATH, nothing of the workspace), one bash session for the walk.
 * The set-up runs for real (pnpm install, the CLI's build); `pnpm demo` runs until Ctrl-C; the package is
 * packed and installed, with the Node.js the README says, into an empty npm prefix from a local
 * registry (verdaccio: node@24 and the package's dependencies come through it); the installed
 * sidecar runs next to a real PostgreSQL; `estimate` samples the demo's database. Then
 * docs/operations.md's Install commands. Every step must succeed.
 *
 * What the test changes, and only that: the ports (a free one for 9187, through
 * AUDITPIPE_LISTEN), the paths of the server (this cluster's data directory, a temp dir for
 * /var/lib/auditpipe), the demo's PGHOST and PGPORT where the README has dots, and npm's global
 * prefix and registry (npm_config_prefix, npm_config_registry), so nothing lands in the machine's.
 * The set-up's caches in this checkout's ignored .tools/ stand in for building and fetching again:
 * MinIO's binary is copied (building it is 4 minutes), and the archive tests' Python venv and
 * Spark's S3A jars are linked (pip's 0.55 GB and mvn: about a minute, and nothing the README's
 * commands use). The set-up still checks each and installs any that is missing or out of date.
 */
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import {
  freePort,
  type NpmRegistry,
  npmEnv,
  repoRoot,
  SETUP_HINT,
  startNpmRegistry,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { walkedCommands } from "./_doc-blocks.ts";
import { type Server, Shell } from "./_doc-walk.ts";

const ROOT = repoRoot();
/** The set-up (pnpm install, the CLI's build) and the installs, on a busy 2-core machine. */
const WALK_TIMEOUT_MS = 1_200_000;

/** The files of a clean checkout of this work tree: tracked or new, never ignored ones. */
function cleanCheckout(to: string): void {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(ROOT, file))) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(join(ROOT, file), join(to, file), { verbatimSymlinks: true });
  }
  const minio = join(ROOT, ".tools", "bin", "minio");
  if (!existsSync(minio)) throw new Error(`.tools/bin/minio is missing: ${SETUP_HINT}`);
  mkdirSync(join(to, ".tools", "bin"), { recursive: true });
  copyFileSync(minio, join(to, ".tools", "bin", "minio"));
  // Linked, not copied: a venv holds absolute paths. The set-up replaces a link whose pinned
  // versions differ (it removes the link, never what it points to).
  for (const cache of ["python", "spark-jars"]) {
    const from = join(ROOT, ".tools", cache);
    if (existsSync(from)) symlinkSync(realpathSync(from), join(to, ".tools", cache));
  }
}

describe("README.md, walked from a clean checkout", () => {
  it(
    "set-up and demo, one real command, the install with the Node.js it names, the sidecar, estimate on the demo",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-readme-"));
      const checkout = join(work, "auditpipe");
      const prefix = join(work, "prefix");
      let registry: NpmRegistry | undefined;
      let shell: Shell | undefined;
      const servers: Server[] = [];
      const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
      try {
        cleanCheckout(checkout);
        registry = await startNpmRegistry({ localPackages: ["auditpipe"] });
        const port = await freePort();
        const path = (process.env.PATH ?? "")
          .split(delimiter)
          .filter((d) => d !== "" && !d.includes("node_modules"));
        const env = npmEnv({
          PATH: [join(prefix, "bin"), ...path].join(delimiter),
          npm_config_prefix: prefix,
          npm_config_registry: registry.url,
          npm_config_cache: join(work, "npm-cache"),
          AUDITPIPE_LISTEN: `127.0.0.1:${port}`,
        });
        for (const key of Object.keys(env))
          if (
            /^(AUDITPIPE_(?!LISTEN)|AWS_|PG|NODE_OPTIONS$|NODE_PATH$|VITEST|npm_(?!config_(prefix|registry|cache)$))/.test(
              key,
            )
          )
            delete env[key];
        shell = new Shell(checkout, env);
        let demo: Server | undefined;
        let demoDatabase: string | undefined;
        const here = (command: string): string =>
          command
            .replaceAll("127.0.0.1:9187", `127.0.0.1:${port}`)
            .replaceAll("/var/lib/postgresql/15/main", pg.dataDir)
            .replaceAll("/var/lib/auditpipe", join(work, "var-lib-auditpipe"))
            .replace(
              /PGHOST=\S*\.\.\.\S* PGPORT=\.\.\. PGUSER=postgres PGDATABASE=postgres/,
              () => demoDatabase!,
            );

        const steps = [...walkedCommands("README.md"), ...walkedCommands("docs/operations.md", "## Install")];
        for (const step of steps) {
          const where = `${step.block.page}:${step.line}`;
          let command = here(step.text);
          const demoAfter = /^(.*?) && (pnpm demo\b.*)$/.exec(command.replace(/\s+#.*$/, ""));
          if (demoAfter) {
            // `bash scripts/setup.sh && pnpm demo`: the set-up to its end, then the demo, which runs
            // until Ctrl-C (stopped at the end of the walk, as the README says).
            const setup = await shell.run(demoAfter[1]!, 900_000);
            expect(setup.code, `${where}: ${demoAfter[1]}\n${setup.output}`).toBe(0);
            demo = await shell.start(demoAfter[2]!);
            servers.push(demo);
            await waitUntil(
              () => /^shipped +[1-9][\d,]* entries acknowledged/m.test(demo!.output()),
              180_000,
              () => `${where}: the demo shows no shipped entries:\n${demo!.output().slice(-3000)}`,
              500,
            );
            demoDatabase = /^database +(PGHOST=\S+ PGPORT=\d+ PGUSER=postgres PGDATABASE=postgres)/m.exec(
              demo.output(),
            )?.[1];
            expect(demoDatabase, demo.output().slice(-2000)).toBeDefined();
            continue;
          }
          command = here(step.text);
          if (/\bauditpipe run\b/.test(command)) {
            const sidecar = await shell.start(command);
            servers.push(sidecar);
            await waitUntil(
              async () =>
                (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true,
              60_000,
              () => `${where}: the sidecar never answered:\n${sidecar.output().slice(-3000)}`,
            );
            await pg.pgbench(["-i", "-s", "1", "-q"]);
            continue;
          }
          const result = await shell.run(command, 600_000);
          expect(result.code, `${where}: ${command}\n${result.output}`).toBe(0);
          // Where the page shows what a command prints from a committed fixture, it prints that,
          // up to the page's "…" (a measurement, as estimate's, differs run to run: checked below).
          if (step.output.length > 0 && /\bfixtures\//.test(command)) {
            const shown = step.output.slice(0, step.output.findIndex((l) => l.startsWith("…")) >>> 0);
            expect(result.output.split("\n").slice(0, shown.length), where).toEqual(shown);
          }
          const comment = /#\s*(auditpipe \d+\.\d+\.\d+ \(Node\.js \d+)/.exec(step.text)?.[1];
          if (comment) expect(result.output, where).toContain(comment);
          if (/\/v1\/volume$/.test(command)) expect(JSON.parse(result.output)).toHaveProperty("totals");
          if (/auditpipe estimate/.test(command))
            expect(result.output).toMatch(/^configuration +entries\/s/m);
        }
        // The installed command and the Node.js it runs on are the prefix's.
        expect(existsSync(join(prefix, "bin", "auditpipe"))).toBe(true);
        expect(existsSync(join(prefix, "bin", "node"))).toBe(true);

        // The machine's own Node, where it is older than the package needs (Debian 12's, this
        // machine's 20): the launcher refuses it, and the command it suggests runs this installed
        // copy on Node.js 24 from the registry.
        const machineNode = path.map((dir) => join(dir, "node")).find((file) => existsSync(file))!;
        const [major = 0, minor = 0] = execFileSync(machineNode, ["-p", "process.versions.node"], {
          encoding: "utf8",
        })
          .trim()
          .split(".")
          .map(Number);
        if (major < 22 || (major === 22 && minor < 15)) {
          const old = await shell.run(`${machineNode} "$(command -v auditpipe)" --version`);
          expect(old.code, old.output).toBe(1);
          const suggested = /^ {2}(npx -y -p node@24 -- node .*)$/m.exec(old.output)?.[1];
          expect(suggested, old.output).toBeDefined();
          const rerun = await shell.run(suggested!, 300_000);
          expect(rerun.code, rerun.output).toBe(0);
          expect(rerun.output).toMatch(/^auditpipe \d+\.\d+\.\d+ \(Node\.js 24\./m);
        }

        // The sidecar stops on SIGTERM with 0; the demo on Ctrl-C with 0, and pnpm says nothing.
        const [sidecar] = servers.filter((s) => s !== demo);
        expect(await sidecar!.stop("SIGTERM"), sidecar!.output().slice(-2000)).toBe(0);
        expect(await demo!.stop("SIGINT"), demo!.output().slice(-2000)).toBe(0);
        expect(demo!.output()).not.toContain("ELIFECYCLE");
      } finally {
        for (const server of servers) await server.stop("SIGKILL").catch(() => {});
        await shell?.close();
        await registry?.stop();
        await pg.stop();
        rmSync(work, { recursive: true, force: true });
      }
    },
    WALK_TIMEOUT_MS,
  );
});
