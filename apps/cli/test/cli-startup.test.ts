/**
 * Start-up: `--version` names the version and the Node.js it runs on, and a command loads only
 * what it needs. Checked on the built package (`bin/auditpipe.js` → the bundle in dist/), with a
 * module.registerHooks() resolve hook recording every module the process resolves.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { repoRoot, waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = repoRoot();
const BIN = join(ROOT, "apps", "cli", "bin", "auditpipe.js");
const VERSION: string = JSON.parse(readFileSync(join(ROOT, "apps", "cli", "package.json"), "utf8")).version;
const FIXTURE = join(ROOT, "fixtures", "cases", "read-write-once", "postgresql.csv.gz");

const work = mkdtempSync(join(tmpdir(), "auditpipe-startup-"));
const HOOK = join(work, "record-modules.mjs");
writeFileSync(
  HOOK,
  `import { registerHooks } from "node:module";
import { writeSync } from "node:fs";
const seen = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
process.on("exit", () => writeSync(2, "\\nMODULES " + JSON.stringify([...seen]) + "\\n"));
`,
);

/** Runs the built CLI; returns its output and the URLs of every module it resolved. */
function runBuilt(args: string[]): { status: number | null; stdout: string; modules: string[] } {
  const result = spawnSync(process.execPath, ["--import", HOOK, BIN, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    // `run` from its start-up snapshot resolves no module at all (run-snapshot.test.ts).
    env: { ...process.env, AUDITPIPE_DISABLE_SNAPSHOT: "1" },
  });
  const line = /\nMODULES (.*)\n/.exec(result.stderr);
  if (!line) throw new Error(`no module list:\n${result.stderr}`);
  return { status: result.status, stdout: result.stdout, modules: JSON.parse(line[1]!) as string[] };
}

/**
 * The third-party packages whose code the loaded modules hold: those resolved from node_modules,
 * and those bundled into dist/'s chunks (esbuild heads each bundled module with a `// path` comment).
 */
function packagesIn(modules: string[]): string[] {
  const names = new Set<string>();
  const add = (path: string) => {
    const after = path.split("node_modules/").at(-1)!.split("/");
    names.add(after[0]!.startsWith("@") ? `${after[0]}/${after[1]}` : after[0]!);
  };
  for (const url of modules) {
    if (!url.startsWith("file:")) continue;
    if (url.includes("/node_modules/") && !url.includes("/apps/cli/dist/")) add(url);
    else if (url.includes("/apps/cli/dist/"))
      for (const [, path] of readFileSync(fileURLToPath(url), "utf8").matchAll(
        /^\/\/ (\S*node_modules\/\S+)$/gm,
      ))
        add(path!);
  }
  return [...names].sort();
}

// zod too: flags.ts checks analyze's flags without it (its import alone is ~100 ms of CPU).
const HEAVY = ["@aws-sdk", "fastify", "/pg/", "prom-client", "pino", "/zod/", "@duckdb"];

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("start-up of the built CLI", () => {
  it("--version prints the version from apps/cli/package.json and the Node.js it runs on, loading no command", () => {
    const { status, stdout, modules } = runBuilt(["--version"]);
    expect(status).toBe(0);
    expect(stdout).toBe(
      `auditpipe ${VERSION} (Node.js ${process.versions.node}, ${process.platform}-${process.arch})\n`,
    );
    expect(
      modules.filter((m) =>
        /\/chunks\/(analyze|run|demo|verify|compact|query|estimate|recommend|serve)-/.test(m),
      ),
    ).toEqual([]);
    expect(modules.filter((m) => m.includes("node_modules"))).toEqual([]);
    expect(packagesIn(modules)).toEqual([]);
  });

  it("analyze loads neither the AWS SDK, Fastify, node-postgres, prom-client, pino nor zod", () => {
    const { status, stdout, modules } = runBuilt(["analyze", FIXTURE, "--json"]);
    expect(status).toBe(0);
    expect(JSON.parse(stdout).entries).toBe(1042);
    expect(modules.some((m) => m.includes("/chunks/analyze-"))).toBe(true);
    expect(modules.filter((m) => HEAVY.some((name) => m.includes(name)))).toEqual([]);
    // Fastify, zod, pino and prom-client are bundled into dist/'s chunks: none of them in analyze's.
    expect(packagesIn(modules).filter((p) => HEAVY.some((name) => `/${p}/`.includes(name)))).toEqual([]);
  });

  it("run with a local sink loads neither the AWS SDK, node-postgres nor @fastify/swagger, and nothing from node_modules, in one process", async () => {
    // Each of these is loaded when first used (an s3:// sink, --db, a request for /docs/json),
    // not by every sidecar: they were most of its start-up CPU.
    const dir = join(work, "run-local");
    mkdirSync(join(dir, "log"), { recursive: true });
    const child = spawn(
      process.execPath,
      [
        ...["--import", HOOK, BIN, "run", "--log-dir", join(dir, "log"), "--format", "csvlog"],
        ...["--sink", join(dir, "sink"), "--state", join(dir, "state"), "--listen", "127.0.0.1:0"],
      ],
      // Heap limits given: one process, so the hook sees the sidecar itself. Without the start-up
      // snapshot, which resolves no module at all (run-snapshot.test.ts): this is `run` where
      // there is none.
      {
        cwd: ROOT,
        env: { ...process.env, NODE_OPTIONS: "--max-old-space-size=128", AUDITPIPE_DISABLE_SNAPSHOT: "1" },
      },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await waitUntil(
      () => stderr.includes('"url":"http') || child.exitCode !== null,
      30_000,
      () => `run did not start:\n${stderr}`,
    );
    // Still one process (same PID, no child), now with an initial old generation of half the
    // given limit, which Node refuses in NODE_OPTIONS (bin/auditpipe.js replaced itself).
    expect(readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0")).toContain(
      "--initial-old-space-size=64",
    );
    expect(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim()).toBe("");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const modules = JSON.parse(/\nMODULES (.*)\n/.exec(stderr)?.[1] ?? "[]") as string[];
    expect(modules.some((m) => m.includes("/chunks/run-"))).toBe(true);
    // Fastify is bundled (its code is in a chunk run loaded), and nothing resolves from node_modules:
    // the libraries run needs before its API answers are all in dist/.
    // The estimate routes' schemas and answers load on their first request, not at start.
    expect(modules.filter((m) => m.includes("/chunks/_routes-estimate-answers-"))).toEqual([]);
    const loaded = packagesIn(modules);
    expect(loaded).toContain("fastify");
    expect(modules.filter((m) => m.includes("/node_modules/") && !m.includes("/apps/cli/dist/"))).toEqual([]);
    expect(
      modules.filter((m) => ["@aws-sdk", "/pg/", "@fastify/swagger", "/yaml/"].some((n) => m.includes(n))),
    ).toEqual([]);
    expect(loaded.filter((p) => ["@aws-sdk", "pg", "@fastify/swagger", "yaml"].includes(p))).toEqual([]);
  });

  it("on a terminal, run logs through pino-pretty in its own thread (no transport file to resolve in the bundle)", async () => {
    // util-linux's script(1) gives the sidecar a pseudo-terminal for stdout and stderr.
    const dir = join(work, "run-tty");
    mkdirSync(join(dir, "log"), { recursive: true });
    const command = [
      ...[process.execPath, BIN, "run", "--log-dir", join(dir, "log"), "--format", "csvlog"],
      ...["--sink", join(dir, "sink"), "--state", join(dir, "state"), "--listen", "127.0.0.1:0"],
    ].join(" ");
    // Its own process group: script(1), its shell and the sidecar are stopped together.
    const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: ROOT, detached: true });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await waitUntil(
      () => out.includes("listening") || child.exitCode !== null,
      30_000,
      () => `run did not start on a terminal:\n${out}`,
    );
    process.kill(-child.pid!, "SIGTERM");
    await exited;
    expect(out).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] .*INFO/);
    expect(out).not.toContain('{"level"');
  });

  it("the engine of compact and query (DuckDB) loads only when they run, not for their --help", () => {
    const help = runBuilt(["query", "--help"]);
    expect(help.status).toBe(0);
    expect(help.modules.some((m) => m.includes("/chunks/query-"))).toBe(true);
    expect(help.modules.filter((m) => m.includes("@duckdb"))).toEqual([]);
  });

  it("a command's chunk loads when that command runs (run --help)", () => {
    const { status, stdout, modules } = runBuilt(["run", "--help"]);
    expect(status).toBe(0);
    expect(stdout).toMatch(/^Usage: auditpipe run/);
    expect(modules.some((m) => m.includes("/chunks/run-"))).toBe(true);
  });
});
