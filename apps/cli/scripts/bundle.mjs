// Builds the published `auditpipe` package's code: apps/cli/dist/, one ES module per command (`pnpm build`).
//
// The workspace packages (@auditpipe/parse, tail, meter, ship, estimate, api, testkit) are bundled
// in from their TypeScript sources, so users install one package. So are the libraries `run`
// loads before its API answers (BUNDLED: Fastify, zod, pino, prom-client, picomatch and what they import):
// one chunk instead of some hundreds of module files to resolve, read and compile is most of the
// sidecar's start-up CPU on the database host. Their names, versions and licence texts go to
// dist/THIRD-PARTY-NOTICES.md. Every other library stays external and is one of the package's
// runtime `dependencies` (docs/architecture.md, "Packaging").
// Code splitting keeps each command in its own chunk: main.js loads a command's chunk only when it
// runs, so `auditpipe --version` and `analyze` never load the AWS SDK, Fastify or node-postgres.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const CLI = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(CLI, "package.json"), "utf8"));
const runtime = new Set(Object.keys(pkg.dependencies ?? {}));
const builtins = new Set(builtinModules);

/**
 * Third-party libraries bundled into dist/ (devDependencies: installing the package does not fetch
 * them). Their own imports are bundled too unless they are runtime dependencies.
 */
const BUNDLED = new Set(["fastify", "fastify-type-provider-zod", "zod", "pino", "prom-client", "picomatch"]);
for (const name of BUNDLED)
  if (runtime.has(name) || !pkg.devDependencies?.[name])
    throw new Error(`bundle: ${name} is bundled: list it in devDependencies, not dependencies`);

/** The package name of a bare import: `@scope/name` or `name`. */
const packageName = (path) =>
  path.startsWith("@") ? path.split("/").slice(0, 2).join("/") : path.split("/")[0];
const inNodeModules = (file) => file.split(sep).includes("node_modules");

/** A bare import is either ours (bundled), a declared runtime dependency (external), or a build error. */
const dependencyGuard = {
  name: "declared-dependencies-only",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const path = args.path;
      if (path.startsWith("node:") || builtins.has(path.split("/")[0])) return { path, external: true };
      if (path.startsWith("@auditpipe/")) return undefined;
      const name = packageName(path);
      if (BUNDLED.has(name) || (inNodeModules(args.importer) && !runtime.has(name))) return undefined;
      // Libraries are imported for what they export, never for a side effect of importing them:
      // an import whose bindings a command does not use is dropped instead of loaded at start-up.
      if (runtime.has(name)) return { path, external: true, sideEffects: false };
      return {
        errors: [
          {
            text: `${args.importer} imports ${JSON.stringify(path)}, which apps/cli/package.json does not list in "dependencies"`,
          },
        ],
      };
    });
  },
};

// Built beside dist/ and swapped in at the end: tests and users running dist/ while another
// process rebuilds it (the install test packs the CLI while other tests spawn it) never see it
// half written or missing. Same depth as dist/, so the linked source maps' relative paths hold.
const DIST = join(CLI, "dist");
const STAGE = join(CLI, `dist-next-${process.pid}`);
rmSync(STAGE, { recursive: true, force: true });
process.on("exit", () => rmSync(STAGE, { recursive: true, force: true }));
const { metafile } = await build({
  // The worker threads of a parallel `analyze` start from an entry of their own.
  entryPoints: {
    main: join(CLI, "src", "main.ts"),
    "analyze-worker": join(CLI, "src", "analyze", "_worker.ts"),
  },
  outdir: STAGE,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22.15",
  conditions: ["@auditpipe/source"],
  plugins: [dependencyGuard],
  sourcemap: "linked",
  // Bundled CommonJS libraries require() Node's built-ins; an ES module has no `require` of its own.
  banner: {
    js: 'import { createRequire as __auditpipeCreateRequire } from "node:module";\nconst require = __auditpipeCreateRequire(import.meta.url);',
  },
  // Their licence texts are in dist/THIRD-PARTY-NOTICES.md instead, whole.
  legalComments: "none",
  metafile: true,
  chunkNames: "chunks/[name]-[hash]",
  logLevel: "warning",
});

/**
 * dist/run-snapshot.cjs: `run` as one CommonJS file that requires only Node's built-ins, the entry
 * of its V8 start-up snapshot (src/run-snapshot.ts; bin/run-snapshot.js builds the blob for the
 * Node.js that runs it, and the launcher starts `run` from it). What a snapshot cannot hold is
 * deferred here:
 * - the runtime dependencies (AWS SDK, pg, ...): required, from the installed package, where they
 *   are first imported (a snapshot has no dynamic import());
 * - node:http, https and http2, whose native bindings cannot be serialized: loaded on first use;
 *   the plain data Fastify reads while loading (STATUS_CODES, METHODS) is this Node's copy;
 * - prom-client's process start time, which it takes when loaded: taken when the metric is made.
 * And what `run` never executes is left out (~3 ms a start for each MB of source the blob holds):
 * - NEVER_RUN: Fastify's default compilers (ajv, fast-json-stringify: zod's compile every route,
 *   apps/api/src/app.ts) and light-my-request (app.inject(), which `run` never calls), each a stub
 *   throwing a clear error if it ever is;
 * - zod's locales but English (z.locales, which nothing of ours reads; zod's default is English).
 */
const NEVER_RUN = ["@fastify/ajv-compiler", "@fastify/fast-json-stringify-compiler", "light-my-request"];
const LAZY_BUILTINS = ["http", "https", "http2"];
const nodeRequire = createRequire(import.meta.url);
const snapshotDeferrals = {
  name: "snapshot-deferrals",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const path = args.path;
      const builtin = path.replace(/^node:/, "");
      if (args.namespace === "lazy-builtin") return { path: `node:${builtin}`, external: true };
      if (LAZY_BUILTINS.includes(builtin)) return { path: builtin, namespace: "lazy-builtin" };
      if (path.startsWith("node:") || builtins.has(path.split("/")[0])) return { path, external: true };
      if (runtime.has(packageName(path))) return { path, namespace: "runtime-dependency" };
      if (NEVER_RUN.includes(path)) return { path, namespace: "never-run" };
      return undefined;
    });
    b.onLoad({ filter: /.*/, namespace: "never-run" }, ({ path }) => ({
      loader: "js",
      contents: `module.exports = () => {
  throw new Error(${JSON.stringify(`auditpipe: ${path} is not in run's start-up snapshot (apps/cli/scripts/bundle.mjs, NEVER_RUN)`)});
};`,
    }));
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, ({ path }) => {
      const english = 'export { default as en } from "./en.js";';
      if (!readFileSync(path, "utf8").includes(english))
        throw new Error(`bundle: ${path} changed; check zod's English locale`);
      return { loader: "js", contents: english, resolveDir: dirname(path) };
    });
    b.onLoad({ filter: /.*/, namespace: "lazy-builtin" }, ({ path }) => {
      const real = nodeRequire(`node:${path}`);
      const keys = Object.keys(real);
      const data = Object.fromEntries(
        ["STATUS_CODES", "METHODS"].filter((k) => k in real).map((k) => [k, real[k]]),
      );
      return {
        loader: "js",
        contents: `let m;
const load = () => (m ??= require("node:${path}"));
const data = ${JSON.stringify(data)};
const keys = ${JSON.stringify(keys)};
module.exports = new Proxy({}, {
  get: (_, k) => (Object.hasOwn(data, k) ? data[k] : load()[k]),
  has: (_, k) => k in load(),
  ownKeys: () => keys,
  getOwnPropertyDescriptor: (_, k) =>
    keys.includes(k) ? { configurable: true, enumerable: true, get: () => load()[k] } : undefined,
});`,
      };
    });
    b.onLoad({ filter: /.*/, namespace: "runtime-dependency" }, ({ path }) => ({
      loader: "js",
      contents: `module.exports = require("node:module").createRequire(globalThis.__auditpipeEntry)(${JSON.stringify(path)});`,
    }));
    b.onLoad({ filter: /prom-client[\\/]lib[\\/]metrics[\\/]processStartTime\.js$/ }, ({ path }) => {
      const taken = "const startInSeconds = Math.round(Date.now() / 1000 - process.uptime());";
      const source = readFileSync(path, "utf8");
      if (!source.includes(taken)) throw new Error(`bundle: ${path} changed; check what it reads at load`);
      return {
        loader: "js",
        contents: source
          .replace(taken, "let startInSeconds;")
          .replace(
            "module.exports = (registry, config = {}) => {",
            "module.exports = (registry, config = {}) => {\n\tstartInSeconds ??= Math.round(Date.now() / 1000 - process.uptime());",
          ),
      };
    });
  },
};
await build({
  entryPoints: [join(CLI, "src", "run-snapshot.ts")],
  outfile: join(STAGE, "run-snapshot.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node22.15",
  conditions: ["@auditpipe/source"],
  plugins: [snapshotDeferrals],
  define: { "import.meta.url": "globalThis.__auditpipeEntryUrl" },
  legalComments: "none",
  logLevel: "warning",
});
// The launcher keys a blob on this (with the Node.js binary and its flags): a blob built from
// another build of the entry is never used.
const snapshotEntry = readFileSync(join(STAGE, "run-snapshot.cjs"));
writeFileSync(
  join(STAGE, "run-snapshot.id"),
  `${createHash("sha256").update(snapshotEntry).digest("hex").slice(0, 32)}\n`,
);
// A module that opens a handle or loads a native binding at load time breaks the snapshot: say
// so here rather than have every start fall back to the slow path.
{
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-snapshot-check-"));
  try {
    const r = spawnSync(
      process.execPath,
      ["--snapshot-blob", join(dir, "blob"), "--build-snapshot", join(STAGE, "run-snapshot.cjs")],
      { encoding: "utf8", timeout: 120_000, killSignal: "SIGKILL" },
    );
    if (r.status !== 0)
      throw new Error(`bundle: dist/run-snapshot.cjs does not build a snapshot:\n${r.stderr.slice(-4000)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * dist/THIRD-PARTY-NOTICES.md: every third-party package whose code is in dist/, as name@version
 * (what `npm audit` would have checked had it been a dependency), its licence and its licence text.
 */
function packageRoot(file) {
  const parts = file.split("/");
  const at = parts.lastIndexOf("node_modules");
  return parts.slice(0, at + (parts[at + 1]?.startsWith("@") ? 3 : 2)).join("/");
}
/** A package without a LICENSE file: the README's licence section, else what its package.json declares. */
function readmeLicence(dir, manifest) {
  const readme = readdirSync(dir).find((f) => /^readme(\.|$)/i.test(f));
  const section =
    readme &&
    /^#+\s*licen[cs]e\s*$([\s\S]*?)(?=^#|(?![\s\S]))/im.exec(readFileSync(join(dir, readme), "utf8"));
  const author = typeof manifest.author === "string" ? manifest.author : manifest.author?.name;
  return (
    section?.[1]?.trim() ||
    `${manifest.license} (package.json; no licence file in the package)${author ? `, by ${author}` : ""}`
  );
}
const roots = new Set();
for (const [output, { inputs }] of Object.entries(metafile.outputs))
  if (output.endsWith(".js"))
    for (const input of Object.keys(inputs))
      if (input.includes("node_modules/")) roots.add(packageRoot(input));
const notices = [...roots]
  .map((root) => {
    const dir = join(process.cwd(), root);
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const licenceFile = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    return {
      id: `${manifest.name}@${manifest.version}`,
      license: manifest.license ?? "UNKNOWN",
      text: licenceFile ? readFileSync(join(dir, licenceFile), "utf8").trim() : readmeLicence(dir, manifest),
    };
  })
  .filter((n, i, all) => all.findIndex((m) => m.id === n.id) === i)
  .sort((a, b) => a.id.localeCompare(b.id));
for (const n of notices)
  if (n.text === undefined) throw new Error(`bundle: ${n.id} is bundled but ships no LICENSE file`);
writeFileSync(
  join(STAGE, "THIRD-PARTY-NOTICES.md"),
  [
    "# Third-party code in this package",
    "",
    "auditpipe's dist/ holds the code of these packages (bundled at build time; apps/cli/scripts/bundle.mjs).",
    "They are not installed as dependencies, so `npm audit` does not see them: check these versions",
    "against advisories (for example `npm audit` in a project depending on them, or the GitHub advisory database).",
    "",
    ...notices.map((n) => `- ${n.id} (${n.license})`),
    "",
    ...notices.flatMap((n) => [`## ${n.id}`, "", `License: ${n.license}`, "", "```", n.text, "```", ""]),
  ].join("\n"),
);

// The swap: two renames, so dist/ is missing for an instant only, never partly written.
{
  const old = join(CLI, `dist-old-${process.pid}`);
  let hadDist = true;
  try {
    renameSync(DIST, old);
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
    hadDist = false;
  }
  renameSync(STAGE, DIST);
  if (hadDist) rmSync(old, { recursive: true, force: true });
}

// AUDITPIPE_BUNDLE_METAFILE=path writes esbuild's metafile there (what each chunk holds and why: esbuild's analyzer reads it).
if (process.env.AUDITPIPE_BUNDLE_METAFILE)
  writeFileSync(process.env.AUDITPIPE_BUNDLE_METAFILE, JSON.stringify(metafile));
