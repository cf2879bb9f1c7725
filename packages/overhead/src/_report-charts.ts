/**
 * The HTML report's charts as Chart.js configurations (plain JSON, no functions): overhead with
 * its 95 % interval, latency percentiles, and log bytes against WAL bytes. Each also carries the
 * same figures as a table, the chart's text for readers without a canvas.
 */
import { cellTitle, hasVariants } from "./mitigations.ts";
import { median } from "./stats.ts";
import { BASELINE } from "./summarize.ts";
import type { BenchReport, CellSummary, RunResult } from "./types.ts";

export interface ChartSpec {
  /** Element id of the chart's canvas. */
  id: string;
  title: string;
  /** What the chart shows and how to read it. */
  caption: string;
  /** The Chart.js configuration (type, data, options), serialisable as JSON. */
  config: Record<string, unknown>;
  /** The same figures as a table; its columns from `numericFrom` on are figures. */
  table: { head: string[]; rows: string[][]; numericFrom: number };
}

/** Okabe and Ito's colour-blind-safe palette. */
const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];
const colour = (i: number): string => PALETTE[i % PALETTE.length]!;

/** Two decimals are plenty for a chart, and keep the embedded JSON small; NaN (nothing measured) is a gap. */
/** Two decimals; -0 (a tiny negative rounded) is 0, so nothing prints "-0". */
const round2 = (x: number): number | null => (Number.isFinite(x) ? Math.round(x * 100) / 100 + 0 : null);
const show = (x: number | null, unit = ""): string => (x === null ? "–" : `${x}${unit}`);

function chartOptions(xTitle: string, yTitle: string): Record<string, unknown> {
  return {
    // Drawn at once: the page marks itself ready when every chart is on its canvas.
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    plugins: { legend: { display: true, position: "top" } },
    scales: {
      x: { title: { display: true, text: xTitle } },
      y: { title: { display: true, text: yTitle }, beginAtZero: true },
    },
  };
}

/**
 * The cells in the report's order of configurations, variants, then workloads (the order the user
 * asked for). A workload at other clients than the bench's (`--quick`'s `tpcb@8`, a second line
 * rate for the calibration) is not charted: it is in the table and the calibration.
 */
function orderedCells(report: BenchReport): CellSummary[] {
  const rateOnly = new Set(report.workloads.filter((w) => w.clients !== undefined).map((w) => w.name));
  const configOrder = report.configurations.map((c) => c.name);
  const variantOrder = report.variants.map((v) => v.name);
  const workloadOrder = report.workloads.map((w) => w.name);
  const rank = (list: string[], name: string): number => {
    const i = list.indexOf(name);
    return i < 0 ? list.length : i;
  };
  return [...report.cells.filter((c) => !rateOnly.has(c.workload))].sort(
    (a, b) =>
      rank(configOrder, a.configuration) - rank(configOrder, b.configuration) ||
      rank(variantOrder, a.variant) - rank(variantOrder, b.variant) ||
      rank(workloadOrder, a.workload) - rank(workloadOrder, b.workload),
  );
}

/** The table columns naming a cell: configuration, its mitigations when they vary, workload. */
function cellColumns(withVariant: boolean): string[] {
  return ["configuration", ...(withVariant ? ["mitigations"] : []), "workload"];
}
function cellValues(cell: CellSummary, withVariant: boolean): string[] {
  return [cell.configuration, ...(withVariant ? [cell.variant] : []), cell.workload];
}

const unique = (xs: string[]): string[] => [...new Set(xs)];

function overheadChart(cells: CellSummary[]): ChartSpec {
  const withVariant = hasVariants(cells);
  const treated = cells.filter((c) => c.configuration !== BASELINE);
  const title = (c: CellSummary): string => cellTitle(c, withVariant);
  const configs = unique(treated.map(title));
  const workloads = unique(treated.map((c) => c.workload));
  /** Percent of the baseline's TPS; null where the overhead could not be computed (no baseline runs). */
  const point = (config: string, workload: string): { y: number; yMin: number; yMax: number } | null => {
    const o = treated.find((c) => title(c) === config && c.workload === workload)?.overhead;
    if (!o) return null;
    const [y, yMin, yMax] = [o.median, o.low, o.high].map((x) => round2(x * 100));
    return y == null || yMin == null || yMax == null ? null : { y, yMin, yMax };
  };
  const cpu = treated.some((c) => c.overheadBasis === "cpu");
  return {
    id: "chart-overhead",
    title: cpu ? "CPU-based overhead against the baseline" : "Throughput overhead against the baseline",
    caption: `Bars: ${
      cpu
        ? "the TPS a CPU-bound machine loses: the server CPU time each configuration added per transaction over the baseline (none) measured around each run, in % of a transaction's CPU time (server + pgbench), median over runs; whiskers: its 95 % bootstrap interval. The table below, and the results table, give the TPS-based overhead beside it: what the runs' throughput really lost, whatever limited them."
        : "the overhead of each configuration's median TPS against the baseline's (none), in % of the baseline's TPS; whiskers: its 95 % bootstrap interval over runs."
    } A whisker that crosses 0 means the difference is not significant at this sample size.${withVariant ? " In brackets: the mitigations it ran with (log destination, +once: pgaudit.log_statement_once on, +elsewhere: the log directory on another disk)." : ""}`,
    config: {
      type: "barWithErrorBars",
      data: {
        labels: configs,
        datasets: workloads.map((w, i) => ({
          label: w,
          // A bar the workload did not run (bench --quick's read-heavy runs write and all only) is
          // an empty point: the error-bar plugin reads yMin and yMax of every one, and a null broke it.
          data: configs.map((c) => point(c, w) ?? { y: null, yMin: null, yMax: null }),
          backgroundColor: colour(i),
          errorBarColor: "#222",
          errorBarWhiskerColor: "#222",
          errorBarLineWidth: 1.5,
          errorBarWhiskerLineWidth: 1.5,
          errorBarWhiskerSize: 14,
        })),
      },
      options: chartOptions(
        "configuration",
        cpu ? "CPU-based overhead vs baseline (% of a transaction's CPU)" : "TPS overhead vs baseline (%)",
      ),
    },
    table: {
      numericFrom: cellColumns(withVariant).length,
      head: [
        ...cellColumns(withVariant),
        cpu ? "CPU-based overhead %" : "overhead %",
        "95 % interval",
        ...(cpu ? ["TPS-based overhead %", "95 % interval"] : []),
      ],
      rows: treated.map((c) => {
        const p = point(title(c), c.workload);
        const t = c.tpsOverhead;
        return [
          ...cellValues(c, withVariant),
          show(p?.y ?? null),
          p ? `${p.yMin} … ${p.yMax}` : "not measured (no baseline runs)",
          ...(cpu
            ? t
              ? [show(round2(t.median * 100)), `${round2(t.low * 100)} … ${round2(t.high * 100)}`]
              : ["—", "—"]
            : []),
        ];
      }),
    },
  };
}

function label(cell: CellSummary, workloads: number, withVariant: boolean): string {
  const name = cellTitle(cell, withVariant);
  return workloads > 1 ? `${name} · ${cell.workload}` : name;
}

function latencyChart(cells: CellSummary[]): ChartSpec {
  const workloads = unique(cells.map((c) => c.workload)).length;
  const withVariant = hasVariants(cells);
  const series = [
    { key: "p50", label: "p50" },
    { key: "p95", label: "p95" },
    { key: "p99", label: "p99" },
  ] as const;
  return {
    id: "chart-latency",
    title: "Latency percentiles",
    caption:
      "Per configuration, the median over runs of each run's 50th, 95th and 99th percentile transaction latency, from pgbench's per-transaction log.",
    config: {
      type: "bar",
      data: {
        labels: cells.map((c) => label(c, workloads, withVariant)),
        datasets: series.map((s, i) => ({
          label: s.label,
          data: cells.map((c) => round2(c.latencyMs[s.key])),
          backgroundColor: colour(i),
        })),
      },
      options: chartOptions("configuration", "latency (ms)"),
    },
    table: {
      numericFrom: cellColumns(withVariant).length,
      head: [...cellColumns(withVariant), "p50 ms", "p95 ms", "p99 ms"],
      rows: cells.map((c) => [
        ...cellValues(c, withVariant),
        ...series.map((s) => show(round2(c.latencyMs[s.key]))),
      ]),
    },
  };
}

function bytesChart(report: BenchReport, cells: CellSummary[]): ChartSpec {
  const workloads = unique(cells.map((c) => c.workload)).length;
  const withVariant = hasVariants(cells);
  const medianPerTxn = (cell: CellSummary, bytes: (r: RunResult) => number | null): number | null => {
    const values = report.runs
      .filter(
        (r) =>
          r.configuration === cell.configuration &&
          r.workload === cell.workload &&
          (r.variant ?? "") === cell.variant,
      )
      .flatMap((r) => {
        const b = bytes(r);
        return b === null || r.transactions <= 0 ? [] : [b / r.transactions];
      });
    return values.length === 0 ? null : round2(median(values));
  };
  const series: Array<{ label: string; bytes: (r: RunResult) => number | null }> = [
    { label: "server log bytes", bytes: (r) => r.log.bytes },
    { label: "WAL bytes", bytes: (r) => r.walBytes },
  ];
  // The trigger configuration writes its audit trail into a table (and so into the WAL) instead of the log.
  if (report.runs.some((r) => r.auditTable !== null))
    series.push({ label: "audit table bytes", bytes: (r) => r.auditTable?.bytes ?? null });
  const values = cells.map((c) => series.map((s) => medianPerTxn(c, s.bytes)));
  return {
    id: "chart-bytes",
    title: "Log bytes against WAL bytes",
    caption:
      "Bytes written per transaction (median over runs): what the server logged during each run (all records, counted by auditpipe's parser over that run's byte range of the log) against the WAL it generated (pg_current_wal_lsn() difference).",
    config: {
      type: "bar",
      data: {
        labels: cells.map((c) => label(c, workloads, withVariant)),
        datasets: series.map((s, i) => ({
          label: s.label,
          data: values.map((v) => v[i] ?? null),
          backgroundColor: colour(i),
        })),
      },
      options: chartOptions("configuration", "bytes per transaction"),
    },
    table: {
      numericFrom: cellColumns(withVariant).length,
      head: [...cellColumns(withVariant), ...series.map((s) => `${s.label} / transaction`)],
      rows: cells.map((c, i) => [...cellValues(c, withVariant), ...values[i]!.map((v) => show(v ?? null))]),
    },
  };
}

export function reportCharts(report: BenchReport): ChartSpec[] {
  const cells = orderedCells(report);
  return [overheadChart(cells), latencyChart(cells), bytesChart(report, cells)];
}
