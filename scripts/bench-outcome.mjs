// Renders apps/cli/bench/outcome.bench.ts's `.bench/outcome.json` as a section of docs/benchmarks.md
// (used by scripts/bench.mjs): what the outcome stage costs, before and after, in one run.

const fmt = (n, digits = 2) => Number(n).toFixed(digits);

/** The section's lines. */
export function renderOutcomeSection(s) {
  const builds = [...new Set(s.analyze.map((a) => a.build))];
  const base = builds.includes("baseline") ? "baseline" : undefined;
  const loads = Object.entries(s.loads)
    .map(([part, [a, b]]) => `${part} ${a} → ${b}`)
    .join(", ");
  const lines = [
    "## Outcome stage: what it costs",
    "",
    `Run ${s.date.slice(0, 16).replace("T", " ")} UTC on ${s.machine}; load average (1 min) before → after each part: ${loads}.`,
    `\`apps/cli/bench/outcome.bench.ts\`; ${base ? `baseline: the build at \`${s.baseline}\` (the branch point), ` : ""}each part's builds interleaved round by round, best of the rounds.`,
    "CPU is user + system time of every thread (`/usr/bin/time`, `/proc/<pid>/stat`), steadier than wall time on a shared machine.",
    "",
    "The join in the sidecar's code path (the reference csvlog, in memory, 64 KiB slices; `_cpu-stages.ts`):",
    "",
    "| stage | CPU µs/entry added | cumulative |",
    "|---|---:|---:|",
    ...s.stages.map((st) => `| ${st.name} | ${st.added} | ${st.cumulative} |`),
    "",
    "`auditpipe analyze --json` of the reference files, whole command:",
    "",
    `| file | build | entries | CPU s | wall s | CPU µs/entry${base ? " | vs baseline (CPU)" : ""} |`,
    `|---|---|---:|---:|---:|---:|${base ? "---:|" : ""}`,
    ...s.analyze.map((a) => {
      const b = s.analyze.find((x) => x.file === a.file && x.build === base);
      const ratio = b ? ` | ${fmt(a.cpuSeconds / b.cpuSeconds)}x` : base ? " | " : "";
      return `| ${a.file} | ${a.build} | ${a.entries.toLocaleString("en-US")} | ${fmt(a.cpuSeconds)} | ${fmt(a.wallSeconds)} | ${fmt((a.cpuSeconds * 1e6) / a.entries)}${ratio} |`;
    }),
    "",
    "`auditpipe run` over the reference csvlog into a local directory, to the last acknowledgement (every process and thread):",
    "",
    "| build | entries | CPU µs/entry | seconds |",
    "|---|---:|---:|---:|",
    ...s.sidecar.map(
      (r) => `| ${r.build} | ${r.entries.toLocaleString("en-US")} | ${r.cpuUsPerEntry} | ${r.seconds} |`,
    ),
    "",
    "Latency from appending a real record (one every 200 ms) to the sink's acknowledgement of it:",
    "",
    "| build | p50 ms | p99 ms | max ms |",
    "|---|---:|---:|---:|",
    ...s.latency.map((r) => `| ${r.build} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} |`),
    "",
  ];
  return lines;
}
