// Builds the published `auditpipe` package's code: apps/cli/dist/, one ES module per command (`pnpm build`).
//
// The workspace packages (@auditpipe/parse, tail, meter, ship, estimate, api, testkit) are bundled
// in from their TypeScript sources, so users install one package; third-party libraries stay
// external and are the package's runtime `dependencies` (docs/architecture.md, "Packaging").
// Code splitting keeps each command in its own chunk: main.js loads a command's chunk only when it
// runs, so `auditpipe --version` and `analyze` never load the AWS SDK, Fastify or node-postgres.
import { readFileSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const CLI = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(CLI, "package.json"), "utf8"));
const runtime = new Set(Object.keys(pkg.dependencies ?? {}));
const builtins = new Set(builtinModules);

/** A bare import is either ours (bundled), a declared runtime dependency (external), or a build error. */
const dependencyGuard = {
  name: "declared-dependencies-only",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const path = args.path;
      if (path.startsWith("node:") || builtins.has(path.split("/")[0])) return { path, external: true };
      if (path.startsWith("@auditpipe/")) return undefined;
      const name = path.startsWith("@") ? path.split("/").slice(0, 2).join("/") : path.split("/")[0];
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

rmSync(join(CLI, "dist"), { recursive: true, force: true });
await build({
  // The worker threads of a parallel `analyze` start from an entry of their own.
  entryPoints: {
    main: join(CLI, "src", "main.ts"),
    "analyze-worker": join(CLI, "src", "analyze", "_worker.ts"),
  },
  outdir: join(CLI, "dist"),
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22.15",
  conditions: ["@auditpipe/source"],
  plugins: [dependencyGuard],
  sourcemap: "linked",
  legalComments: "none",
  chunkNames: "chunks/[name]-[hash]",
  logLevel: "warning",
});
