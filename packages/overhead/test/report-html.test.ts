import {
  type BenchReport,
  type CellSummary,
  type ConfigurationInfo,
  formatOverhead,
  type RunResult,
  renderHtmlReport,
  renderReport,
  seededRng,
  summarizeCells,
} from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";

/** Names a user or a server can choose, each able to break a page that does not escape them. */
const HOSTILE_CONFIG = `<img src=x onerror="alert(1)">`;
const HOSTILE_WORKLOAD = "script:</script><script>alert(2)</script>.sql";

/**
 * A synthetic report (the browser test renders a real one): the baseline, a configuration 20 %
 * slower with tight runs (resolved), and one 1 % slower within ±10 % noise (not resolved).
 */
function syntheticReport(overrides: Partial<BenchReport> = {}): BenchReport {
  const rng = seededRng(3);
  const configs: Array<[string, number, number]> = [
    ["none", 1, 0.01],
    ["all", 0.8, 0.01],
    [HOSTILE_CONFIG, 0.99, 0.1],
  ];
  const runs: RunResult[] = [];
  for (let round = 0; round < 5; round++)
    for (const [configuration, factor, noise] of configs) {
      const tps = 1000 * factor * (1 + noise * (2 * rng() - 1));
      runs.push({
        index: runs.length,
        round,
        configuration,
        workload: HOSTILE_WORKLOAD,
        startedAt: "2026-11-24T10:00:00.000Z",
        durationSec: 10,
        tps,
        transactions: Math.round(tps * 10),
        failedTransactions: 0,
        latencyMs: { mean: 2, p50: 1.5, p95: 4, p99: 8, max: 20 },
        log: {
          records: configuration === "none" ? 0 : 70_000,
          auditEntries: configuration === "none" ? 0 : 70_000,
          bytes: configuration === "none" ? 0 : 9_000_000,
          malformed: 0,
        },
        auditTable: null,
        walBytes: 4_000_000,
        statWal: {},
        statIo: {},
        statBgwriter: {},
      });
    }
  const names = configs.map(([name]) => name);
  const configurations: ConfigurationInfo[] = names.map((name) => ({
    name,
    kind: "pgaudit-session",
    description: `configuration ${name}`,
    preloadPgaudit: name !== "none",
    settings: { "pgaudit.log": name === "none" ? "none" : "all", "pgaudit.role": "" },
    tables: [],
  }));
  return {
    schemaVersion: 1,
    tool: { name: "auditpipe", version: "0.1.0" },
    command: `npx auditpipe bench --script '</script>.sql'`,
    startedAt: "2026-11-24T10:00:00.000Z",
    finishedAt: "2026-11-24T10:05:00.000Z",
    complete: true,
    interruption: null,
    target: { kind: "scratch", baseline: "pgaudit-not-loaded" },
    options: {
      scale: 10,
      clients: 2,
      jobs: 2,
      durationSec: 10,
      runs: 5,
      warmupSec: 5,
      seed: 1,
      logDestination: "csvlog",
      logStatementOnce: false,
      logDirElsewhere: null,
      quick: false,
      durable: false,
      syslogFile: null,
    },
    environment: {
      host: "bench-host",
      os: "Linux",
      kernel: "6.1.0",
      arch: "x64",
      cpus: { count: 2, model: "Test CPU" },
      memoryBytes: 8 * 2 ** 30,
      node: "v22.15.0",
      postgres: { version: "15.18 (Debian 15.18-0+deb12u1)", versionNum: 150018 },
      pgaudit: "1.7",
      pgbench: "pgbench (PostgreSQL) 15.18",
      settings: { shared_buffers: "256MB", log_line_prefix: "<%m> " },
      dataDirectory: { path: "/srv/pg/data", type: "ext4", device: "/dev/vda1", mountPoint: "/" },
      logDirectory: { path: "/srv/pg/log", type: "xfs", device: "/dev/vdb1", mountPoint: "/srv/pg/log" },
      logOnDataDisk: false,
      loadAverage: 0.4,
    },
    configurations,
    workloads: [{ name: HOSTILE_WORKLOAD, description: "a user's script", statementsPerTransaction: 3 }],
    variants: [],
    runs,
    cells: summarizeCells(runs, { configurations: names, workloads: [HOSTILE_WORKLOAD] }),
    calibration: null,
    notes: ["a note from the run <b>"],
    ...overrides,
  };
}

/** The page's markup with its inlined scripts emptied: what the HTML parser sees as elements. */
const markupOf = (html: string): string =>
  html.replace(/<script([^>]*)>[\s\S]*?<\/script>/g, "<script$1></script>");

describe("the HTML bench report", () => {
  const report = syntheticReport();
  const html = renderHtmlReport(report);

  it("escapes every name it interpolates, in text, attributes and the embedded chart data", () => {
    const markup = markupOf(html);
    expect(markup).not.toContain("<img");
    expect(markup).not.toContain("alert(2)</script>");
    expect(markup).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(markup).toContain("&lt;%m&gt;"); // a setting's value
    expect(markup).toContain("a note from the run &lt;b&gt;");
    // Only our own script elements, in order: Chart.js, its error bars, the chart data, the page's script.
    expect(html.match(/<script[\s>]/g)).toHaveLength(4);
    expect(html.match(/<\/script>/g)).toHaveLength(4);
    const data = html.match(/<script type="application\/json" id="bench-charts">([\s\S]*?)<\/script>/)![1]!;
    expect(data).not.toContain("<");
    const charts = JSON.parse(data) as Array<{ id: string; config: { data: { labels: string[] } } }>;
    expect(charts.map((c) => c.id)).toEqual(["chart-overhead", "chart-latency", "chart-bytes"]);
    expect(charts[0]!.config.data.labels).toEqual(["all", HOSTILE_CONFIG]); // the baseline has no overhead
    expect(charts[1]!.config.data.labels).toEqual(["none", "all", HOSTILE_CONFIG]);
  });

  it("inlines the chart library and loads nothing: no src, href or url() to fetch, and a CSP that forbids it", () => {
    const markup = markupOf(html);
    expect(html).toContain("Chart.js v4");
    expect(markup).not.toMatch(/<[a-z][^>]*\s(src|href|srcset|action)\s*=/i);
    expect(markup).not.toMatch(/url\(|@import/i);
    expect(markup).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'`,
    );
    expect(html).not.toMatch(/sourceMappingURL/);
  });

  it("shows the intervals, what is not significant and what would resolve it, the environment and the command", () => {
    const all = report.cells.find((c) => c.configuration === "all")!;
    const hostile = report.cells.find((c) => c.configuration === HOSTILE_CONFIG)!;
    expect(all.overhead!.significant).toBe(true);
    expect(hostile.overhead!.significant).toBe(false);
    expect(html).toContain("not significant at this sample size");
    expect(html).toMatch(
      /&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt; × script:&lt;\/script&gt;.*(runs would be needed|would resolve it)/,
    );
    expect(html).not.toMatch(/<li>all × /); // resolved: no advice for it
    for (const text of [
      "15.18 (Debian 15.18-0+deb12u1)",
      "/srv/pg/data (ext4, on /dev/vda1, mounted at /)",
      "/srv/pg/log (xfs, on /dev/vdb1, mounted at /srv/pg/log); on another filesystem",
      "2 × Test CPU",
      "8.0 GiB",
      "shared_buffers",
    ])
      expect(html).toContain(text);
    expect(html).toContain(
      `<code id="reproduce-command">npx auditpipe bench --script &#39;&lt;/script&gt;.sql&#39;</code>`,
    );
    expect(html).not.toContain('id="incomplete"');
  });

  it("says when a run was interrupted and that its figures are what was measured until then", () => {
    const stopped = renderHtmlReport(
      syntheticReport({ complete: false, interruption: "interrupted (Ctrl-C)" }),
    );
    expect(stopped).toContain('<p class="banner" id="incomplete">Incomplete: interrupted (Ctrl-C).');
  });

  it("says what it plots: CPU-based overhead on the axis, the TPS-based beside it in every table", () => {
    // The same runs with CPU times: 250 µs per transaction, 100 more under every configuration.
    const base = syntheticReport();
    const runs = base.runs.map((r) => ({
      ...r,
      cpu: {
        serverSec: (r.transactions * (r.configuration === "none" ? 200 : 300)) / 1e6,
        loggerSec: r.configuration === "none" ? 0 : (r.transactions * 30) / 1e6,
        clientSec: (r.transactions * 50) / 1e6,
      },
    }));
    const names = base.configurations.map((c) => c.name);
    const report = {
      ...base,
      runs,
      cells: summarizeCells(runs, { configurations: names, workloads: [HOSTILE_WORKLOAD] }),
    };
    const page = renderHtmlReport(report);
    const charts = JSON.parse(
      page.match(/<script type="application\/json" id="bench-charts">([\s\S]*?)<\/script>/)![1]!,
    ) as Array<{ id: string; config: { options: { scales: { y: { title: { text: string } } } } } }>;
    const overhead = charts.find((c) => c.id === "chart-overhead")!;
    expect(overhead.config.options.scales.y.title.text).toContain("CPU-based overhead");
    expect(page).toContain("CPU-based overhead against the baseline"); // the chart's heading
    expect(page).toContain("TPS-based overhead %"); // the chart's table
    expect(page).toContain("TPS-based overhead [95%]"); // the results table
    const text = renderReport(report);
    expect(text).toMatch(/CPU-based overhead \[95%\]\s+TPS-based \[95%\]/);
    expect(text).toContain("TPS-based = what the runs' throughput really lost");
  });

  it("never prints -0.0 %: a difference that rounds to nothing is 0.0 %", () => {
    const cell = report.cells.find((c) => c.configuration === "all")!;
    const tiny: CellSummary = {
      ...cell,
      overhead: { median: -0.00004, low: -0.0004, high: 0.01, significant: false, runsToResolve: 9 },
    };
    expect(formatOverhead(tiny)).toBe("0.0% [0.0% … 1.0%] n.s.");
  });
});
