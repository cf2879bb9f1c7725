/**
 * The user's journey with the published package, through a real npm registry (verdaccio on
 * loopback; the runtime dependencies come through it from the registry npm already uses):
 * `pnpm pack:cli`'s tarball is published there, then run with `npx` from an empty directory with
 * an empty npm cache, and installed with `npm install -g --prefix` to run the sidecar.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import {
  duplicates,
  freePort,
  logSettled,
  type NpmRegistry,
  npmEnv,
  type PostgresCluster,
  repoRoot,
  shippedKeys,
  startNpmRegistry,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { dockerfileRuntime, systemdService } from "./_deploy-files.ts";

const ROOT = repoRoot();
const VERSION: string = JSON.parse(readFileSync(join(ROOT, "apps", "cli", "package.json"), "utf8")).version;
const FIXTURE = join(ROOT, "fixtures", "cases", "read-write-once", "postgresql.csv.gz");
/** Installs resolve ~100 real dependencies through the registry: give them time on a busy machine. */
const INSTALL_TIMEOUT_MS = 300_000;

/**
 * A user's environment: this Node first on PATH (the one the suite runs on), and nothing of the
 * workspace: no node_modules/.bin on PATH, no NODE_PATH through which a missing dependency of the
 * package could be found in the repository instead.
 */
function userEnv(cache: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const path = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => dir !== "" && !dir.includes("node_modules"));
  const env = npmEnv({ PATH: [dirname(process.execPath), ...path].join(delimiter), npm_config_cache: cache });
  delete env.NODE_PATH;
  delete env.NODE_OPTIONS;
  return { ...env, ...extra };
}

/** Runs a command to its end; resolves with what it printed (rejects with it when it fails). */
function exec(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve({ stdout, stderr })
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${stderr}\n${stdout}`)),
    );
  });
}

// The tarball's and npx's tests run first, one after the other; the three installed sidecars then
// run at once (it.concurrent): each has its own PostgreSQL, ports and directories, and most of
// their time is spent waiting on a server.
describe("the published auditpipe package, as a user installs it", () => {
  let registry: NpmRegistry;
  let tarball: string;
  const work = mkdtempSync(join(tmpdir(), "auditpipe-install-"));
  const cache = join(work, "npm-cache");

  beforeAll(async () => {
    execFileSync(process.execPath, [join(ROOT, "scripts", "pack-cli.mjs")], { cwd: ROOT, stdio: "pipe" });
    tarball = join(ROOT, "dist", `auditpipe-${VERSION}.tgz`);
    expect(existsSync(tarball)).toBe(true);
    registry = await startNpmRegistry({ localPackages: ["auditpipe"] });
    registry.publish(tarball);
  }, INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await registry?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("the tarball holds the bundle and a registry-ready package.json: runtime dependencies only", () => {
    const listing = execFileSync("tar", ["tzf", tarball], { encoding: "utf8" }).split("\n");
    for (const file of [
      "package/bin/auditpipe.js",
      "package/dist/main.js",
      "package/README.md",
      "package/LICENSE",
      "package/CHANGELOG.md",
    ])
      expect(listing).toContain(file);
    expect(listing.filter((f) => f.includes("/src/") || f.endsWith(".ts"))).toEqual([]);
    const manifest = JSON.parse(
      execFileSync("tar", ["xzf", tarball, "-O", "package/package.json"], { encoding: "utf8" }),
    );
    expect(manifest).toMatchObject({
      name: "auditpipe",
      version: VERSION,
      license: "MIT",
      engines: { node: ">=22.15" },
    });
    expect(manifest.repository.url).toMatch(/^git\+https:/);
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.scripts).toBeUndefined();
    for (const [name, range] of Object.entries(manifest.dependencies as Record<string, string>)) {
      expect(name.startsWith("@auditpipe/"), name).toBe(false);
      expect(range, name).toMatch(/^\^?\d/);
    }
  });

  it(
    "npx --yes auditpipe@<version> from an empty directory and an empty cache answers as the repository's CLI",
    async () => {
      const dir = mkdtempSync(join(work, "empty-"));
      const env = userEnv(cache);
      const npx = (args: string[]) =>
        exec("npx", ["--yes", "--registry", registry.url, `auditpipe@${VERSION}`, ...args], {
          cwd: dir,
          env,
        });

      const version = await npx(["--version"]);
      expect(version.stdout.trim()).toBe(
        `auditpipe ${VERSION} (Node.js ${process.versions.node}, ${process.platform}-${process.arch})`,
      );

      const analyzed = await npx(["analyze", FIXTURE, "--json"]);
      const expected = await runCli(["analyze", FIXTURE, "--json"]);
      expect(expected.code).toBe(0);
      expect(JSON.parse(analyzed.stdout)).toEqual(JSON.parse(expected.stdout));

      const workload = join(dir, "workload.json");
      writeFileSync(
        workload,
        JSON.stringify({
          transactionsPerSec: 100,
          clients: 8,
          statements: [
            { text: "BEGIN", callsPerSec: 100, kind: "UTILITY", command: "BEGIN" },
            {
              text: "SELECT email FROM public.customers WHERE id = $1",
              callsPerSec: 300,
              kind: "SELECT",
              relations: [{ relation: "public.customers", columns: ["email", "id"] }],
            },
            {
              text: "INSERT INTO public.orders (customer_id, item) VALUES ($1, $2)",
              callsPerSec: 100,
              kind: "INSERT",
              relations: [{ relation: "public.orders", write: "INSERT" }],
            },
            { text: "COMMIT", callsPerSec: 100, kind: "UTILITY", command: "COMMIT" },
          ],
          foreignKeys: [
            {
              child: "public.orders",
              parent: "public.customers",
              columns: ["customer_id"],
              parentColumns: ["id"],
            },
          ],
          log: { destination: "csvlog", user: "app", database: "shop", application: "api" },
        }),
      );
      const estimated = await npx(["estimate", "--workload", workload, "--json"]);
      const expectedEstimate = await runCli(["estimate", "--workload", workload, "--json"]);
      expect(expectedEstimate.code).toBe(0);
      expect(JSON.parse(estimated.stdout)).toEqual(JSON.parse(expectedEstimate.stdout));
    },
    INSTALL_TIMEOUT_MS,
  );

  /** `npm install -g --prefix`, once for the tests below (which run at once: one install they share). */
  let prefix: Promise<string> | undefined;
  function installGlobally(): Promise<string> {
    prefix ??= (async () => {
      const dir = join(work, "prefix");
      await exec("npm", ["install", "-g", "--prefix", dir, "--registry", registry.url, tarball], {
        cwd: work,
        env: userEnv(cache),
      });
      expect(existsSync(join(dir, "bin", "auditpipe"))).toBe(true);
      return dir;
    })();
    return prefix;
  }

  /**
   * Runs `command` (a sidecar, configured by `env` and its arguments) on a real PostgreSQL's
   * csvlog, runs pgbench, waits until every entry PostgreSQL wrote is in the local-dir sink
   * `sinkDir`, then SIGTERMs it: it must exit 0 with every entry shipped once.
   */
  async function shipsEveryEntry(
    pg: PostgresCluster,
    command: string[],
    env: NodeJS.ProcessEnv,
    sinkDir: string,
    whileRunning: (pid: number) => Promise<void> = async () => {},
  ): Promise<void> {
    const [file, ...args] = command;
    const sidecar: ChildProcess = spawn(file!, args, { cwd: work, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    sidecar.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => sidecar.on("exit", (code) => resolve(code)));
    try {
      await waitUntil(
        () => /"url":"http:/.test(stderr) || sidecar.exitCode !== null,
        60_000,
        () => `no API:\n${stderr}`,
      );
      expect(sidecar.exitCode, stderr).toBeNull();
      await whileRunning(sidecar.pid!);

      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "200"]);
      await logSettled(pg.logDir);
      const written = writtenKeys(pg.logDir);
      expect(written.length).toBeGreaterThan(1000);
      await waitUntil(
        () => shippedKeys(sinkDir).length >= written.length,
        60_000,
        () => `sink behind: ${shippedKeys(sinkDir).length} of ${written.length}`,
        200,
      );

      sidecar.kill("SIGTERM");
      expect(await exited, stderr).toBe(0);
      const shipped = shippedKeys(sinkDir);
      expect(duplicates(shipped)).toEqual([]);
      expect(new Set(shipped)).toEqual(new Set(written));
    } finally {
      if (sidecar.exitCode === null) sidecar.kill("SIGKILL");
    }
  }

  it.concurrent(
    "npm install -g --prefix: the installed `auditpipe run` ships every entry of a real PostgreSQL's log and exits 0 on SIGTERM",
    async () => {
      const bin = join(await installGlobally(), "bin", "auditpipe");
      const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
      const out = mkdtempSync(join(work, "global-"));
      try {
        await shipsEveryEntry(
          pg,
          [
            bin,
            "run",
            "--pgdata",
            pg.dataDir,
            "--sink",
            join(out, "sink"),
            "--state",
            join(out, "state"),
            "--listen",
            "127.0.0.1:0",
            "--batch-max-age-ms",
            "200",
          ],
          userEnv(cache),
          join(out, "sink"),
        );
      } finally {
        await pg.stop();
      }
    },
    INSTALL_TIMEOUT_MS,
  );

  it.concurrent(
    "deploy/Dockerfile: its ENTRYPOINT + CMD under its ENV run as one process under tini, answer its HEALTHCHECK, and ship every entry",
    async () => {
      const installed = await installGlobally();
      const image = dockerfileRuntime(readFileSync(join(ROOT, "deploy", "Dockerfile"), "utf8"));
      expect(image.command.slice(0, 2)).toEqual(["/usr/bin/tini", "--"]);
      const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
      const volume = mkdtempSync(join(work, "volume-"));
      const port = await freePort();
      // What the image's paths are here: /opt/auditpipe is the install prefix, the state volume a
      // temp dir; the log directory and the listen port are what `docker run -e` would set.
      const here = (value: string) =>
        value
          .replaceAll("/opt/auditpipe", installed)
          .replaceAll("/var/lib/auditpipe", volume)
          .replaceAll(":9187", `:${port}`);
      const env = userEnv(cache, {
        ...Object.fromEntries(Object.entries(image.env).map(([k, v]) => [k, here(v)])),
        AUDITPIPE_LOG_DIR: pg.logDir,
        AUDITPIPE_FORMAT: "csvlog",
        AUDITPIPE_BATCH_MAX_AGE_MS: "200",
      });
      // The image's build step that starts the installed command (`run --help`, as the image's
      // user): it builds `run`'s snapshot and leaves its command line for the command's shell lines.
      const steps = image.run.filter((step) => step.includes("/opt/auditpipe/bin/auditpipe"));
      expect(steps).toHaveLength(1);
      await exec("/bin/sh", ["-c", here(steps[0]!)], { cwd: work, env });
      try {
        await shipsEveryEntry(pg, image.command.map(here), env, join(volume, "archive"), async (tini) => {
          // One sidecar process under tini: the image's NODE_OPTIONS carry the heap limits.
          const children = readFileSync(`/proc/${tini}/task/${tini}/children`, "utf8").trim().split(/\s+/);
          expect(children).toHaveLength(1);
          expect(readFileSync(`/proc/${children[0]}/task/${children[0]}/children`, "utf8").trim()).toBe("");
          // Started from `run`'s start-up snapshot, kept where the image's AUDITPIPE_SNAPSHOT_CACHE says.
          const argv = readFileSync(`/proc/${children[0]}/cmdline`, "utf8").split("\0");
          expect(argv[argv.indexOf("--snapshot-blob") + 1]).toMatch(
            new RegExp(`^${join(installed, "snapshot")}/run-[0-9a-f]{32}\\.blob$`),
          );
          // Exec'd by the command's shell lines from that record: no Node.js boot of the launcher's.
          expect(readFileSync(`/proc/${children[0]}/environ`, "utf8").split("\0")).toContain(
            "AUDITPIPE_NO_REEXEC=sh",
          );
          const [node, ...check] = image.healthcheck.map(here);
          await exec(node === "node" ? process.execPath : node!, check, { cwd: work, env });
        });
      } finally {
        await pg.stop();
      }
    },
    INSTALL_TIMEOUT_MS,
  );

  it.concurrent(
    "deploy/auditpipe.service: its ExecStart under its Environment= ships every entry and exits 0 on SIGTERM",
    async () => {
      const installed = await installGlobally();
      const unit = systemdService(readFileSync(join(ROOT, "deploy", "auditpipe.service"), "utf8"));
      const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
      const stateDir = mkdtempSync(join(work, "state-directory-"));
      // The unit's paths here: the installed command, this cluster's data directory, a temp
      // StateDirectory. It sets no --listen: the default port is moved to a free one (the variable
      // yields to flags, so the unit's own arguments stay as written). User= is not switched.
      const here = (value: string) =>
        value
          .replace(/^\/usr\/local\/bin\/auditpipe$/, join(installed, "bin", "auditpipe"))
          .replace("/var/lib/postgresql/15/main", pg.dataDir)
          .replaceAll("/var/lib/auditpipe", stateDir);
      const env = userEnv(cache, {
        ...unit.env,
        AUDITPIPE_LISTEN: `127.0.0.1:${await freePort()}`,
        AUDITPIPE_BATCH_MAX_AGE_MS: "200",
      });
      try {
        await shipsEveryEntry(pg, unit.execStart.map(here), env, join(stateDir, "archive"), async (pid) => {
          expect(readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()).toBe(""); // one process
        });
      } finally {
        await pg.stop();
      }
    },
    INSTALL_TIMEOUT_MS,
  );
});
