// Checks the module layout rule of docs/conventions.md in every library package (packages/* and
// apps/api; run by `pnpm lint`): a file whose name starts with `_` is internal, so no entry point
// (the package.json exports' source files, and the modules they re-export) re-exports a value
// from one; and a file without the prefix is public, so some entry point re-exports it. A type
// declared in an internal file may be re-exported by name (`export type { T }`) where a public
// signature uses it. apps/cli is an application: all of its files are internal to it.
// Imports between folders: no file imports another package's (or app's) `test/` folder, and
// nothing in packages/ imports from apps/ (apps compose packages; an arrow back up is a cycle).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Known exceptions, each with why it stays for now. */
const ALLOWED = new Map([
  [
    "packages/estimate/src/_fingerprint.ts",
    "public (index.ts exports fingerprint); to be renamed with the estimate changes of issue 14",
  ],
]);

const RE_EXPORT = /export\s+(type\s+)?(\*|\{[^}]*\})\s+from\s+"(\.[^"]+)"/g;

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

const problems = [];
const libraries = [
  ...readdirSync(join(ROOT, "packages")).map((d) => join(ROOT, "packages", d)),
  join(ROOT, "apps", "api"),
];
for (const dir of libraries) {
  const manifest = join(dir, "package.json");
  if (!existsSync(manifest) || !existsSync(join(dir, "src"))) continue;
  const exportsField = JSON.parse(readFileSync(manifest, "utf8")).exports ?? {};
  const entries = Object.values(exportsField)
    .map((e) => (typeof e === "object" ? e["@auditpipe/source"] : undefined))
    .filter(Boolean)
    .map((p) => join(dir, p));
  const reached = new Set(); // files whose values an entry point re-exports
  const stack = [...entries];
  while (stack.length > 0) {
    const file = stack.pop();
    if (reached.has(file) || !existsSync(file)) continue;
    reached.add(file);
    for (const [, typeOnly, names, target] of readFileSync(file, "utf8").matchAll(RE_EXPORT)) {
      const path = join(dirname(file), target);
      const valuesToo = !typeOnly && names.split(",").some((n) => n.trim() && !/^type\s/.test(n.trim()));
      if (basename(path).startsWith("_")) {
        if (valuesToo && !ALLOWED.has(relative(ROOT, path)))
          problems.push(`${relative(ROOT, file)} re-exports values from internal ${relative(ROOT, path)}`);
        continue;
      }
      stack.push(path);
    }
  }
  for (const file of sourceFiles(join(dir, "src"))) {
    const rel = relative(ROOT, file);
    if (!basename(file).startsWith("_") && !reached.has(file) && !ALLOWED.has(rel))
      problems.push(`${rel} is not re-exported by any entry point: internal files start with "_"`);
  }
}

/** Every relative import (static, dynamic, re-export) of every TypeScript file of ours. */
const RELATIVE_IMPORT = /\b(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;
/** `packages/<name>` or `apps/<name>` or `fixtures`: the unit a path belongs to, and its folder in it. */
function placeOf(path) {
  const parts = relative(ROOT, path).split(sep);
  if (parts[0] === "fixtures") return { unit: "fixtures", group: "fixtures", folder: parts[1] };
  if (parts[0] === "packages" || parts[0] === "apps")
    return { unit: `${parts[0]}/${parts[1]}`, group: parts[0], folder: parts[2] };
  return { unit: parts[0], group: parts[0], folder: undefined };
}
const units = [
  ...readdirSync(join(ROOT, "packages")).map((d) => join(ROOT, "packages", d)),
  ...readdirSync(join(ROOT, "apps")).map((d) => join(ROOT, "apps", d)),
  join(ROOT, "fixtures"),
];
for (const dir of units) {
  for (const folder of ["src", "test", "bench"]) {
    if (!existsSync(join(dir, folder))) continue;
    for (const file of sourceFiles(join(dir, folder))) {
      const from = placeOf(file);
      for (const [, spec] of readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)) {
        const to = placeOf(resolve(dirname(file), spec));
        const where = `${relative(ROOT, file)} imports ${relative(ROOT, resolve(dirname(file), spec))}`;
        if (to.unit !== from.unit && to.folder === "test")
          problems.push(
            `${where}: another package's test/ folder (shared test helpers live in @auditpipe/testkit)`,
          );
        else if (from.group === "packages" && to.group === "apps")
          problems.push(`${where}: packages/ never import from apps/ (apps compose packages)`);
      }
    }
  }
}

if (problems.length > 0) {
  console.error(`module layout (docs/conventions.md):\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
