// `pnpm pack:cli`: the publishable `auditpipe` package, written to dist/auditpipe-<version>.tgz.
//
// apps/cli is built (the workspace packages bundled into apps/cli/dist), then staged with a
// package.json fit for the registry: `catalog:` ranges resolved from pnpm-workspace.yaml, runtime
// dependencies only (no devDependencies, no scripts: nothing runs or compiles on install).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const CLI = join(ROOT, "apps", "cli");

/** The `catalog:` block of pnpm-workspace.yaml: name → version range. */
function readCatalog() {
  const catalog = new Map();
  let inside = false;
  for (const line of readFileSync(join(ROOT, "pnpm-workspace.yaml"), "utf8").split("\n")) {
    if (/^\S/.test(line)) inside = line.startsWith("catalog:");
    const entry = inside && /^ {2}"?([^"#\s][^":]*)"?:\s*(\S+)\s*$/.exec(line);
    if (entry) catalog.set(entry[1], entry[2]);
  }
  return catalog;
}

execFileSync("pnpm", ["--filter", "auditpipe", "run", "build"], { cwd: ROOT, stdio: "inherit" });

const source = JSON.parse(readFileSync(join(CLI, "package.json"), "utf8"));
const catalog = readCatalog();
const dependencies = {};
for (const [name, range] of Object.entries(source.dependencies ?? {})) {
  const resolved = range === "catalog:" ? catalog.get(name) : range;
  if (!resolved || resolved.startsWith("workspace:"))
    throw new Error(`pack:cli: cannot resolve the range of dependency ${name} (${range})`);
  dependencies[name] = resolved;
}
const { devDependencies: _dev, scripts: _scripts, ...published } = source;
published.dependencies = dependencies;
published.exports = { ".": "./dist/main.js" };

const stage = mkdtempSync(join(tmpdir(), "auditpipe-pack-"));
try {
  for (const entry of ["bin", "dist", "README.md", "CHANGELOG.md"])
    cpSync(join(CLI, entry), join(stage, entry), { recursive: true });
  cpSync(join(ROOT, "LICENSE"), join(stage, "LICENSE"));
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  // pnpm's npm_config_* variables mean nothing to npm (it warns about each): npm packs without them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", join(ROOT, "dist")], {
    cwd: stage,
    env,
    encoding: "utf8",
  });
  const [{ filename, size, entryCount }] = JSON.parse(out);
  console.log(`dist/${filename}: ${entryCount} files, ${(size / 1e6).toFixed(2)} MB`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
