/**
 * `auditpipe bench --report FILE.html`: the bench report as one self-contained page. Charts
 * (overhead with its 95 % interval, latency percentiles, log against WAL bytes), the results
 * table, what the statistics can and cannot resolve, the environment, and the command that
 * reproduces it. Scripts and styles are inlined; the page opens offline and fetches nothing.
 * Pure apart from reading the chart library (the `assets` default).
 */
import { type ChartAssets, loadChartAssets } from "./_chart-assets.ts";
import { type ChartSpec, reportCharts } from "./_report-charts.ts";
import { CONTENT_SECURITY_POLICY, PAGE_SCRIPT, PAGE_STYLE } from "./_report-page.ts";
import { hasVariants } from "./mitigations.ts";
import {
  formatOverhead,
  formatTpsOverhead,
  loggingSummary,
  NOT_SIGNIFICANT,
  overheadHeading,
  renderFit,
  showsTpsOverhead,
  unresolvedNotes,
} from "./render.ts";
import type { BenchReport, Filesystem } from "./types.ts";

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
/** Text for HTML content and attribute values: names, settings and paths come from users and servers. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** JSON inside <script type="application/json">: no `<`, so no `</script>` or `<!--` can end it. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

const fmt = (x: number, digits = 0): string =>
  Number.isFinite(x)
    ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "–";

function table(head: string[], rows: string[][], numericFrom = Number.POSITIVE_INFINITY): string {
  const cell = (tag: "th" | "td", text: string, i: number): string =>
    `<${tag}${i >= numericFrom ? ' class="num"' : ""}>${escapeHtml(text)}</${tag}>`;
  return [
    '<div class="wide"><table>',
    `<thead><tr>${head.map((h, i) => cell("th", h, i)).join("")}</tr></thead>`,
    `<tbody>${rows.map((r) => `<tr>${r.map((c, i) => cell("td", c, i)).join("")}</tr>`).join("\n")}</tbody>`,
    "</table></div>",
  ].join("\n");
}

function definitions(items: Array<[string, string]>): string {
  return `<dl>${items.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl>`;
}

function figure(chart: ChartSpec): string {
  // The canvas's content is its text alternative: shown where no canvas is drawn, read by screen readers.
  return `<figure id="${chart.id}-figure">
<h3>${escapeHtml(chart.title)}</h3>
<div class="chart"><canvas id="${chart.id}" role="img" aria-label="${escapeHtml(chart.title)}">
${table(chart.table.head, chart.table.rows, chart.table.numericFrom)}
</canvas></div>
<figcaption>${escapeHtml(chart.caption)}</figcaption>
</figure>`;
}

function filesystem(fs: Filesystem): string {
  const where = [
    fs.type ?? "type unknown",
    fs.device ? `on ${fs.device}` : null,
    fs.mountPoint ? `mounted at ${fs.mountPoint}` : null,
  ];
  return `${fs.path} (${where.filter((w) => w !== null).join(", ")})`;
}

function resultsTable(report: BenchReport): string {
  const withVariant = hasVariants(report.cells);
  const head = [
    "configuration",
    ...(withVariant ? ["mitigations"] : []),
    "workload",
    "runs",
    "TPS [95% interval]",
    overheadHeading(report.cells),
    ...(showsTpsOverhead(report.cells) ? ["TPS-based overhead [95%]"] : []),
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "log records/s",
    "audit entries/s",
    "MB/hour",
    "GB/day",
    "WAL MB/run",
  ];
  const rows = report.cells.map((c) => [
    c.configuration,
    ...(withVariant ? [c.variant] : []),
    c.workload,
    String(c.runs),
    `${fmt(c.tps.median)} [${fmt(c.tps.low)} … ${fmt(c.tps.high)}]`,
    formatOverhead(c),
    ...(showsTpsOverhead(report.cells) ? [formatTpsOverhead(c)] : []),
    fmt(c.latencyMs.p50, 2),
    fmt(c.latencyMs.p95, 2),
    fmt(c.latencyMs.p99, 2),
    fmt(c.logRecordsPerSec),
    fmt(c.auditEntriesPerSec),
    fmt(c.mbPerHour, 1),
    fmt(c.gbPerDay, 2),
    fmt(c.walMbPerRun, 1),
  ]);
  return table(head, rows, withVariant ? 3 : 2);
}

function significance(report: BenchReport): string {
  const unresolved = unresolvedNotes(report);
  const parts: string[] = [];
  if (unresolved.length > 0) {
    parts.push(`<p><strong>n.s.</strong> = ${escapeHtml(NOT_SIGNIFICANT)}.</p>`);
    parts.push(`<ul class="unresolved">${unresolved.map((n) => `<li>${escapeHtml(n)}</li>`).join("")}</ul>`);
  } else if (report.cells.some((c) => c.overhead)) {
    parts.push(
      "<p>Every overhead's 95 % interval excludes zero: each difference is resolved at this sample size.</p>",
    );
  }
  if (report.calibration) parts.push(`<p>${escapeHtml(renderFit(report.calibration))}</p>`);
  if (report.notes.length > 0)
    parts.push(`<ul class="notes">${report.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join("")}</ul>`);
  return parts.join("\n");
}

function environment(report: BenchReport): string {
  const env = report.environment;
  const o = report.options;
  const baseline =
    report.target.baseline === "pgaudit-not-loaded"
      ? "pgaudit not loaded"
      : "pgaudit loaded with nothing logged (an existing server is not restarted; its hooks' cost is in the baseline)";
  const system = definitions([
    ["host", env.host],
    ["system", `${env.os} ${env.kernel} (${env.arch})`],
    ["CPUs", `${env.cpus.count} × ${env.cpus.model}`],
    ["memory", `${fmt(env.memoryBytes / 2 ** 30, 1)} GiB`],
    ["load at start", `${env.loadAverage.toFixed(2)} (1-minute average)`],
    ["PostgreSQL", env.postgres.version],
    ["pgaudit", env.pgaudit ?? "not installed"],
    ["pgbench", env.pgbench],
    ["Node.js", env.node],
    ["data directory", filesystem(env.dataDirectory)],
    [
      "log directory",
      `${filesystem(env.logDirectory)}; ${env.logOnDataDisk ? "on the data disk" : "on another filesystem"}`,
    ],
    ["target", `${report.target.kind} server; baseline: ${baseline}`],
  ]);
  const options = definitions([
    ["pgbench", `scale ${o.scale}, ${o.clients} clients, ${o.jobs} jobs`],
    [
      "runs",
      `${o.runs} × ${o.durationSec} s per cell, interleaved in rotating order, after a ${o.warmupSec} s warm-up`,
    ],
    ["log", loggingSummary(report)],
    ...(o.logDirElsewhere
      ? ([["log directory elsewhere", o.logDirElsewhere]] as Array<[string, string]>)
      : []),
    ...(o.syslogFile ? ([["syslog file", o.syslogFile]] as Array<[string, string]>) : []),
    [
      "durability",
      `fsync ${env.settings.fsync ?? "?"}, synchronous_commit ${env.settings.synchronous_commit ?? "?"}${o.durable ? " (--durable)" : ""}`,
    ],
    ["bootstrap seed", String(o.seed)],
    ["preset", o.quick ? "--quick" : "none"],
  ]);
  const settings = table(
    ["setting", "value"],
    Object.entries(env.settings).map(([k, v]) => [k, v]),
  );
  const configurations = table(
    ["configuration", "kind", "what it is", "settings", "tables"],
    report.configurations.map((c) => [
      c.name,
      c.kind,
      c.description,
      Object.entries(c.settings)
        .map(([k, v]) => `${k} = ${v === "" ? "''" : v}`)
        .join(", "),
      c.tables.join(", "),
    ]),
  );
  const variants =
    report.variants.length > 0
      ? table(
          ["mitigations", "log destination", "pgaudit.log_statement_once", "log directory"],
          report.variants.map((v) => [
            v.name,
            v.logDestination,
            v.logStatementOnce ? "on" : "off",
            `${filesystem(v.logDirectory)}; ${v.logOnDataDisk ? "on the data disk" : "on another filesystem"}`,
          ]),
        )
      : "<p>One setting, as above.</p>";
  const workloads = table(
    ["workload", "what it is", "statements / transaction"],
    report.workloads.map((w) => [w.name, w.description, fmt(w.statementsPerTransaction)]),
    2,
  );
  return `${system}
<h3>Bench options</h3>
${options}
<h3>Server settings</h3>
${settings}
<h3>Configurations</h3>
${configurations}
<h3>Mitigations</h3>
${variants}
<h3>Workloads</h3>
${workloads}`;
}

function runsTable(report: BenchReport): string {
  return table(
    [
      "#",
      "round",
      "configuration",
      "mitigations",
      "workload",
      "TPS",
      "p50 ms",
      "p95 ms",
      "p99 ms",
      "log records",
      "audit entries",
      "log bytes",
      "WAL bytes",
    ],
    report.runs.map((r) => [
      String(r.index + 1),
      String(r.round + 1),
      r.configuration,
      r.variant ?? "",
      r.workload,
      fmt(r.tps),
      fmt(r.latencyMs.p50, 2),
      fmt(r.latencyMs.p95, 2),
      fmt(r.latencyMs.p99, 2),
      fmt(r.log.records),
      fmt(r.log.auditEntries),
      fmt(r.log.bytes),
      fmt(r.walBytes),
    ]),
    5,
  );
}

/** Library sources go in as they are: the loader refuses any with `</script` or `<!--` in them. */
const inlineScript = (source: string): string => `<script>${source}</script>`;

export function renderHtmlReport(report: BenchReport, assets: ChartAssets = loadChartAssets()): string {
  const charts = reportCharts(report);
  const title = `auditpipe bench on ${report.environment.host}, ${report.startedAt.slice(0, 10)}`;
  const banner = report.complete
    ? ""
    : `<p class="banner" id="incomplete">Incomplete: ${escapeHtml(report.interruption ?? "stopped")}. The figures below are the runs measured before it stopped.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="${escapeHtml(`${report.tool.name} ${report.tool.version}`)}">
<title>${escapeHtml(title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
<h1>What auditing costs on ${escapeHtml(report.environment.host)}</h1>
<p class="meta">${escapeHtml(`${report.tool.name} ${report.tool.version} bench · ${report.startedAt} to ${report.finishedAt} · PostgreSQL ${report.environment.postgres.version}, pgaudit ${report.environment.pgaudit ?? "not installed"}`)}</p>
</header>
${banner}
<section id="charts">
<h2>Charts</h2>
<div class="charts">
${charts.map(figure).join("\n")}
</div>
</section>
<section id="significance">
<h2>What these runs can and cannot tell</h2>
${significance(report)}
</section>
<section id="results">
<h2>Results</h2>
${resultsTable(report)}
</section>
<section id="environment">
<h2>Environment</h2>
${environment(report)}
</section>
<section id="reproduce">
<h2>Reproduce</h2>
<p>The command that made this report; run it again on the machine to measure:</p>
<pre><code id="reproduce-command">${escapeHtml(report.command)}</code></pre>
</section>
<section id="runs">
<h2>Runs</h2>
<details><summary>${report.runs.length} runs, in the order they ran</summary>
${runsTable(report)}
</details>
</section>
${assets.scripts.map(inlineScript).join("\n")}
<script type="application/json" id="bench-charts">${scriptJson(charts.map((c) => ({ id: c.id, config: c.config })))}</script>
${inlineScript(PAGE_SCRIPT)}
</body>
</html>
`;
}
