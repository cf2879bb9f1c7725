/**
 * The articles behind the estimator are cited by title and author everywhere a user reads: never
 * by this repository's internal file names for them ("seed 003", "003_ebf7….txt"), which mean
 * nothing outside it. Checked over every source file (messages and errors come from there), the
 * docs and READMEs, and every command's --help.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const ROOT = repoRoot();
/** "seed 000", "seeds/000_…", "000_256ad305894d6726.txt": the internal names, in any case. */
const INTERNAL = /\bseeds?[ _/-]*\d{3}\b|\b\d{3}_[0-9a-f]{16}(?:\.txt)?\b/i;

function files(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path, keep));
    else if (keep(name)) out.push(path);
  }
  return out;
}

describe("no internal citations", () => {
  it("no source file, doc or README names an article by its internal file name", () => {
    const checked = [
      ...files(join(ROOT, "packages"), (n) => /\.(ts|md)$/.test(n)),
      ...files(join(ROOT, "apps"), (n) => /\.(ts|md)$/.test(n)),
      ...files(join(ROOT, "docs"), (n) => n.endsWith(".md")),
      join(ROOT, "README.md"),
    ].filter((f) => !f.endsWith("no-internal-citations.test.ts"));
    expect(checked.length).toBeGreaterThan(100);
    const offenders = checked.flatMap((f) => {
      const m = INTERNAL.exec(readFileSync(f, "utf8"));
      return m ? [`${f.slice(ROOT.length + 1)}: ${m[0]}`] : [];
    });
    expect(offenders).toEqual([]);
  });

  it("no command's --help does", async () => {
    const commands = [...(await runCli(["--help"])).stdout.matchAll(/^ {2}([a-z]+)\s/gm)].map((m) => m[1]!);
    expect(commands.length).toBeGreaterThanOrEqual(7);
    for (const command of commands) {
      const { stdout } = await runCli([command, "--help"]);
      expect(stdout, command).not.toMatch(INTERNAL);
    }
  });

  it("the pattern catches the forms the issue named", () => {
    for (const text of ["seed 003 at 56 clients", "(seed 000)", "../shared/seeds/000_256ad305894d6726.txt"])
      expect(text).toMatch(INTERNAL);
    // What a bench user does write: a bootstrap seed and its number.
    expect("--seed 42: seed of the bootstrap intervals").not.toMatch(INTERNAL);
  });
});
