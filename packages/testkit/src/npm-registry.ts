import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SETUP_HINT } from "./paths.ts";
import { freePort, onExit, removeTree, waitUntil } from "./process.ts";
import { refuseInUnitTier } from "./tiers.ts";

export interface NpmRegistryOptions {
  /**
   * Package names served only from this registry, never looked up upstream (the package under
   * test: a same-named package on the public registry must not stand in for it).
   */
  localPackages: string[];
}

export interface NpmRegistry {
  /** `http://127.0.0.1:<port>/`. */
  readonly url: string;
  /** An npm user config file that authenticates to this registry and uses it by default. */
  readonly npmrc: string;
  /** `npm publish` of a packed tarball to this registry. */
  publish(tarball: string): void;
  /** Stops verdaccio and removes its storage; safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;

/** The registry npm is configured with here: verdaccio's uplink for everything not local. */
function upstreamRegistry(): string {
  try {
    return execFileSync("npm", ["config", "get", "registry"], { encoding: "utf8", env: npmEnv() }).trim();
  } catch {
    return "https://registry.npmjs.org/";
  }
}

/** The environment for npm: without pnpm's npm_config_* variables, which npm warns about one by one. */
export function npmEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key)));
  return { ...env, ...extra };
}

/** verdaccio's launcher script, from the package testkit depends on. */
function verdaccioBin(): string {
  let verdaccioPackage: string;
  try {
    verdaccioPackage = createRequire(import.meta.url).resolve("verdaccio/package.json");
  } catch {
    throw new Error(`verdaccio is not installed (a devDependency of @auditpipe/testkit): ${SETUP_HINT}`);
  }
  const declared: string | Record<string, string> = JSON.parse(readFileSync(verdaccioPackage, "utf8")).bin;
  return join(
    dirname(verdaccioPackage),
    typeof declared === "string" ? declared : (declared.verdaccio ?? ""),
  );
}

/** The registry's config: storage under `base`, `localPackages` published here, everything else proxied. */
function verdaccioConfig(base: string, localPackages: readonly string[]): string {
  const local = localPackages
    .map((name) => `  ${JSON.stringify(name)}:\n    access: $all\n    publish: $all\n`)
    .join("");
  return `storage: ${JSON.stringify(join(base, "storage"))}
auth:
  htpasswd:
    file: ${JSON.stringify(join(base, "htpasswd"))}
    max_users: 10
uplinks:
  upstream:
    url: ${JSON.stringify(upstreamRegistry())}
    timeout: 60s
    max_fails: 5
packages:
${local}  "**":
    access: $all
    proxy: upstream
log: { type: stdout, format: json, level: warn }
`;
}

/** A user for `npm publish` (npm will not publish without credentials, even where anyone may): its npmrc. */
async function publisherNpmrc(url: string, port: number, base: string): Promise<string> {
  const response = await fetch(`${url}-/user/org.couchdb.user:testkit`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "testkit", password: "testkit-password", type: "user", roles: [] }),
  });
  const { token } = (await response.json()) as { token?: string };
  if (!response.ok || !token) throw new Error(`verdaccio refused to create a user (HTTP ${response.status})`);
  const npmrc = join(base, "npmrc");
  writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  return npmrc;
}

/**
 * Starts a real npm registry (verdaccio, a devDependency of testkit) on a free loopback port with
 * its own storage. Packages in `localPackages` are published here; all others are proxied from
 * the registry npm already uses, so an install resolves real dependencies as a user's would.
 */
export async function startNpmRegistry(options: NpmRegistryOptions): Promise<NpmRegistry> {
  refuseInUnitTier("startNpmRegistry");
  const bin = verdaccioBin();
  const base = mkdtempSync(join(tmpdir(), "auditpipe-npm-registry-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  writeFileSync(join(base, "config.yaml"), verdaccioConfig(base, options.localPackages));
  let child: ChildProcess | undefined;
  const output: string[] = [];
  const unregister = onExit(() => {
    if (child?.exitCode === null) child.kill("SIGKILL");
    removeTree(base);
  });

  const proc = spawn(
    process.execPath,
    [bin, "--config", join(base, "config.yaml"), "--listen", `127.0.0.1:${port}`],
    {
      env: npmEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child = proc;
  proc.stdout?.setEncoding("utf8").on("data", (d: string) => output.push(d));
  proc.stderr?.setEncoding("utf8").on("data", (d: string) => output.push(d));

  const stop = async (): Promise<void> => {
    if (proc.exitCode === null) {
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    removeTree(base);
    unregister();
  };

  try {
    await waitUntil(
      async () => {
        if (proc.exitCode !== null) return true;
        try {
          return (await fetch(`${url}-/ping`)).ok;
        } catch {
          return false;
        }
      },
      START_TIMEOUT_MS,
      () => `verdaccio was not ready within ${START_TIMEOUT_MS / 1000}s:\n${output.join("")}`,
    );
    if (proc.exitCode !== null)
      throw new Error(`verdaccio exited at start (code ${proc.exitCode}):\n${output.join("")}`);

    const npmrc = await publisherNpmrc(url, port, base);

    return {
      url,
      npmrc,
      publish(tarball: string) {
        execFileSync(
          "npm",
          ["publish", tarball, "--registry", url, "--userconfig", npmrc, "--ignore-scripts"],
          {
            env: npmEnv(),
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
