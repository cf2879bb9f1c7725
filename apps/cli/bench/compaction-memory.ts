/**
 * The sidecar's compaction child on one 420,000-entry host-hour (the reference csvlog shipped by
 * the real pipeline, packages/compact/bench/_landing-hour.ts): peak RSS (the kernel's maxrss, through GNU
 * time), CPU (user + sys) and wall time of `node <the child's heap flags> bin/auditpipe.js compact
 * DIR --json` — the child as the sidecar starts it, with the build's own default engine limit —
 * and the rows digest it records. With AUDITPIPE_BENCH_BASELINE_BIN=<another build's
 * bin/auditpipe.js> that build too, rounds interleaved. Run by hand (`pnpm build` first):
 *   node --conditions=@auditpipe/source apps/cli/bench/compaction-memory.ts
 * It prints the rows for docs/benchmarks.md, "Compaction memory", and writes
 * .bench/compaction-memory.json.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { landingHour } from "../../../packages/compact/bench/_landing-hour.ts";
import { CHILD_HEAP_FLAGS } from "../src/run/compaction.ts";

const ROUNDS = Number(process.env.AUDITPIPE_BENCH_ROUNDS ?? 2);
const THIS = join(repoRoot(), "apps", "cli", "bin", "auditpipe.js");
const BASELINE = process.env.AUDITPIPE_BENCH_BASELINE_BIN;
const builds: [string, string][] = [
  ...(BASELINE ? ([["baseline", BASELINE]] as [string, string][]) : []),
  ["this build", THIS],
];
const codecs = ["gzip", "zstd"] as const;
const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-compaction-memory-"));
const load = () => loadavg()[0]!.toFixed(1);

interface Run {
  build: string;
  codec: string;
  maxRssMb: number;
  cpuS: number;
  wallS: number;
  rows: number;
  rowsDigest: string;
}
const runs: Run[] = [];
const loadBefore = load();
for (const codec of codecs) {
  const archive = await landingHour(codec);
  for (let round = 0; round < ROUNDS; round++)
    for (const [build, bin] of builds) {
      const dir = join(work, `${codec}-${round}-${build.replace(" ", "-")}`);
      cpSync(archive, dir, { recursive: true });
      const r = spawnSync(
        "/usr/bin/time",
        ["-f", "%M %U %S %e", process.execPath, ...CHILD_HEAP_FLAGS, bin, "compact", dir, "--json"],
        { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
      );
      if (r.error) throw new Error(`GNU time is needed (apt-get install -y time): ${r.error.message}`);
      const [rss, user, sys, wall] = r.stderr.trim().split("\n").pop()!.split(" ").map(Number) as number[];
      const report = JSON.parse(r.stdout) as {
        partitions: {
          state: string;
          record?: { rows: number; rowsDigest: string };
          error?: { message: string };
        }[];
      };
      const p = report.partitions[0];
      if (!p?.record) throw new Error(`${build} did not compact the hour: ${p?.error?.message ?? r.stderr}`);
      const run = {
        build,
        codec,
        maxRssMb: rss! / 1024,
        cpuS: user! + sys!,
        wallS: wall!,
        rows: p.record.rows,
        rowsDigest: p.record.rowsDigest,
      };
      runs.push(run);
      console.error(JSON.stringify(run));
      rmSync(dir, { recursive: true, force: true });
    }
}
const out = {
  kind: "compaction-memory",
  date: new Date().toISOString(),
  machine: `${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, Node ${process.version}`,
  load: [loadBefore, load()],
  runs,
};
mkdirSync(join(repoRoot(), ".bench"), { recursive: true });
writeFileSync(join(repoRoot(), ".bench", "compaction-memory.json"), `${JSON.stringify(out, null, 2)}\n`);
rmSync(work, { recursive: true, force: true });

const mb = (n: number) => `${Math.round(n)} MB`;
console.log(
  `Run ${out.date.slice(0, 16).replace("T", " ")} UTC on ${out.machine}; load average ${out.load.join(" → ")}.`,
);
console.log("\n| build | landing codec | peak RSS | CPU (user + sys) | wall | rows | rows digest |");
console.log("|---|---|---:|---:|---:|---:|---|");
for (const codec of codecs)
  for (const [build] of builds) {
    const rs = runs.filter((r) => r.codec === codec && r.build === build);
    const digests = new Set(rs.map((r) => r.rowsDigest));
    console.log(
      `| ${build} | ${codec} | ${rs.map((r) => mb(r.maxRssMb)).join(", ")} | ${rs.map((r) => `${r.cpuS.toFixed(1)} s`).join(", ")} | ${rs.map((r) => `${r.wallS.toFixed(0)} s`).join(", ")} | ${rs[0]!.rows.toLocaleString("en-US")} | \`${[...digests].map((d) => d.slice(7, 19)).join("`, `")}\` |`,
    );
  }
