/**
 * docs/architecture.md draws the pipeline with the file that does each step: every path in its
 * drawings must exist, and the class or function named beside a path must be in that file. A
 * file moved or a stage renamed fails here until the drawing follows. Its map draws everything
 * that exists: a package or app directory, or a command of main.ts, missing from it fails here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const ROOT = repoRoot();
const PAGE = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
/** The drawing under "## The whole map". */
const map = /^## The whole map\n[\s\S]*?```\n([\s\S]*?)```/m.exec(PAGE)?.[1] ?? "";
/** The commands main.ts loads, from its COMMANDS table. */
const commands = [
  ...(
    /const COMMANDS\b[^\n]*\{([\s\S]*?)\n\};/.exec(
      readFileSync(join(ROOT, "apps/cli/src/main.ts"), "utf8"),
    )?.[1] ?? ""
  ).matchAll(/^ {2}(\w+): /gm),
].map((m) => m[1]!);
const drawings = [...PAGE.matchAll(/```\n([\s\S]*?)```/g)]
  .map((m) => m[1]!)
  .filter((block) => block.includes("▼"));

/** A full path and the word written after it on its line, for every path in the drawings. */
const named = drawings.flatMap((block) =>
  [...block.matchAll(/((?:packages|apps)\/[\w./-]+)[ \t]+(\w+)?/g)].map((m) => ({ path: m[1]!, name: m[2] })),
);

/** Every file under the packages' and apps' src/ folders, by base name. */
function sourceNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else names.add(entry);
    }
  };
  for (const group of ["packages", "apps"])
    for (const pkg of readdirSync(join(ROOT, group)))
      if (existsSync(join(ROOT, group, pkg, "src"))) walk(join(ROOT, group, pkg, "src"));
  return names;
}

/** An identifier of the code (`FileFollower`, `decodeAuditEntry`), not a word of prose. */
const isIdentifier = (word: string | undefined): word is string =>
  word !== undefined && /^(?:[A-Z]\w+|[a-z]+[A-Z]\w*)$/.test(word);

describe("docs/architecture.md's drawings", () => {
  it("draws the pipeline, syslog's way into it included", () => {
    expect(drawings).toHaveLength(1);
    expect(drawings[0]).toContain("syslog-journal.ts");
    expect(named.length).toBeGreaterThan(10);
  });

  it("name files and folders that exist", () => {
    expect(named.map((n) => n.path).filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it("name each class or function in the file drawn beside it", () => {
    const missing = named
      .filter((n) => isIdentifier(n.name))
      .filter(({ path, name }) => {
        const full = join(ROOT, path);
        const file = statSync(full).isDirectory() ? join(full, "index.ts") : full;
        return !new RegExp(`\\b${name}\\b`).test(readFileSync(file, "utf8"));
      });
    expect(missing).toEqual([]);
  });

  it("name files in the sources when they give a bare file name", () => {
    const names = sourceNames();
    const bare = drawings.flatMap((block) =>
      [...block.matchAll(/(?<![\w/.-])([\w-]+\.ts)\b/g)].map((m) => m[1]!),
    );
    expect(bare.length).toBeGreaterThan(5);
    expect(bare.filter((name) => !names.has(name))).toEqual([]);
  });
});

describe("docs/architecture.md's map", () => {
  it("draws every package and app directory, and fixtures", () => {
    const dirs = ["packages", "apps"].flatMap((group) =>
      readdirSync(join(ROOT, group))
        .filter((name) => existsSync(join(ROOT, group, name, "package.json")))
        .map((name) => `${group}/${name}`),
    );
    expect(dirs).toContain("packages/tail");
    expect(dirs.filter((dir) => !new RegExp(`${dir}\\b`).test(map))).toEqual([]);
    expect(map).toMatch(/\bfixtures\b/);
  });

  it("draws every command of main.ts, and the package table lists them all", () => {
    expect(commands).toContain("run");
    expect(commands.length).toBeGreaterThan(8);
    expect(commands.filter((c) => !new RegExp(`[├└] ${c}\\b`).test(map))).toEqual([]);
    const cliRow = PAGE.split("\n").find((line) => line.startsWith("| `apps/cli`")) ?? "";
    expect(commands.filter((c) => !cliRow.includes(`\`${c}\``))).toEqual([]);
  });
});
