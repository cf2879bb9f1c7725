/**
 * docs/architecture.md draws the pipeline with the file that does each step: every path in its
 * drawings must exist, and the class or function named beside a path must be in that file. A
 * file moved or a stage renamed fails here until the drawing follows.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const ROOT = repoRoot();
const drawings = [...readFileSync(join(ROOT, "docs/architecture.md"), "utf8").matchAll(/```\n([\s\S]*?)```/g)]
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
