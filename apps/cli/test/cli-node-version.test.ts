import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const BIN = join(import.meta.dirname, "..", "bin", "auditpipe.js");
/** Makes the real Node report an older version to the launcher, as Node 20 would. */
const AS_NODE_20 = `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"20.20.2"}})`;

function launch(env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, ["--import", AS_NODE_20, BIN, "--version"], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "", ...env },
  });
}

describe("the launcher on an old Node", () => {
  it("exits 1 at once with the version it found and how to get Node 24, not a SyntaxError later", () => {
    const r = launch();
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("needs Node.js 22.15 or later; this is 20.20.2");
    // The way out runs this copy (the one installed), not another one fetched from the registry.
    expect(r.stderr).toContain(`npx -y -p node@24 -- node ${BIN} --version`);
    expect(r.stderr).not.toMatch(/-p auditpipe/);
    expect(r.stderr).toContain("npm install -g node@24");
  });

  it("its minimum is the package's engines.node", () => {
    const engines = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8")).engines;
    const minimum = /const MIN_NODE = \[(\d+), (\d+)\]/.exec(readFileSync(BIN, "utf8"));
    expect(engines.node).toBe(`>=${minimum?.[1]}.${minimum?.[2]}`);
  });

  it("runs anyway with AUDITPIPE_ANY_NODE=1 (for comparing Node versions)", () => {
    const r = launch({ AUDITPIPE_ANY_NODE: "1" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^auditpipe \d+\.\d+\.\d+ \(Node\.js /);
    expect(r.status).toBe(0);
  });
});
