/**
 * The sidecar's compaction child on one 420,000-entry host-hour (the reference csvlog shipped by
 * the real pipeline, packages/compact/bench/_landing-hour.ts), run by _compaction-child.ts: peak
 * RSS, CPU (user + sys, and per row) and wall time of the child as the sidecar starts it, with the
 * build's own default engine limit, and the rows digest it records. With
 * AUDITPIPE_BENCH_BASELINE_BIN=<another build's bin/auditpipe.js> that build too, rounds
 * interleaved. Run by hand (`pnpm build` first):
 *   node --conditions=@auditpipe/source apps/cli/bench/compaction-memory.ts
 * AUDITPIPE_BENCH_CODECS=zstd compacts the zstd hour alone. It prints the rows for
 * docs/benchmarks.md, "Compaction memory", and writes .bench/compaction-memory.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { landingHour } from "../../../packages/compact/bench/_landing-hour.ts";
import { type CompactionChildRun, compactionChild } from "./_compaction-child.ts";

const ROUNDS = Number(process.env.AUDITPIPE_BENCH_ROUNDS ?? 2);
const THIS = join(repoRoot(), "apps", "cli", "bin", "auditpipe.js");
const BASELINE = process.env.AUDITPIPE_BENCH_BASELINE_BIN;
const builds: [string, string][] = [
  ...(BASELINE ? ([["baseline", BASELINE]] as [string, string][]) : []),
  ["this build", THIS],
];
/** Landing codecs to compact (AUDITPIPE_BENCH_CODECS=zstd for the sidecar's default alone). */
const codecs = (process.env.AUDITPIPE_BENCH_CODECS ?? "gzip,zstd").split(",") as ("gzip" | "zstd")[];
const load = () => loadavg()[0]!.toFixed(1);

type Run = CompactionChildRun & { build: string; codec: string };
const runs: Run[] = [];
const loadBefore = load();
for (const codec of codecs) {
  const archive = await landingHour(codec);
  for (let round = 0; round < ROUNDS; round++)
    for (const [build, bin] of builds) {
      const run = { build, codec, ...compactionChild(bin, archive) };
      runs.push(run);
      console.error(JSON.stringify(run));
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

const mb = (n: number) => `${Math.round(n)} MB`;
console.log(
  `Run ${out.date.slice(0, 16).replace("T", " ")} UTC on ${out.machine}; load average ${out.load.join(" → ")}.`,
);
console.log(
  "\n| build | landing codec | peak RSS | CPU (user + sys) | CPU per row | wall | rows | rows digest |",
);
console.log("|---|---|---:|---:|---:|---:|---:|---|");
for (const codec of codecs)
  for (const [build] of builds) {
    const rs = runs.filter((r) => r.codec === codec && r.build === build);
    const digests = new Set(rs.map((r) => r.rowsDigest));
    console.log(
      `| ${build} | ${codec} | ${rs.map((r) => mb(r.maxRssMb)).join(", ")} | ${rs.map((r) => `${r.cpuS.toFixed(1)} s`).join(", ")} | ${rs.map((r) => `${r.cpuMicrosPerRow} µs`).join(", ")} | ${rs.map((r) => `${r.wallS.toFixed(0)} s`).join(", ")} | ${rs[0]!.rows.toLocaleString("en-US")} | \`${[...digests].map((d) => d.slice(7, 19)).join("`, `")}\` |`,
    );
  }
