/**
 * The terminal report in the shape of Gold Lapel's tables ("pgAudit Performance Impact:
 * Benchmarks and Mitigation Strategies"): configuration × workload with TPS, overhead and its
 * interval, latency percentiles, log volume and WAL, then what the figures can and cannot say.
 */
import { percent } from "@auditpipe/estimate";
import { cellTitle, hasVariants } from "./mitigations.ts";
import type { OverheadInterval } from "./stats.ts";
import type { BenchReport, CalibrationFit, CellSummary } from "./types.ts";

const fmt = (x: number, digits = 0): string =>
  x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (x: number): string => percent(x);
/** Beyond this many runs per configuration, "how many would resolve it" stops being advice. */
const MAX_SENSIBLE_RUNS = 200;

/** "13.5% [6.1% … 20.3%]", with "n.s." when the interval includes zero. */
export function formatOverhead(cell: CellSummary): string {
  return formatInterval(cell.overhead);
}

/** The same for the TPS-based overhead (what the runs really lost in throughput). */
export function formatTpsOverhead(cell: CellSummary): string {
  return cell.overhead ? formatInterval(cell.tpsOverhead ?? null) : "baseline";
}

function formatInterval(o: OverheadInterval | null): string {
  if (!o) return "baseline";
  return `${pct(o.median)} [${pct(o.low)} … ${pct(o.high)}]${o.significant ? "" : " n.s."}`;
}

/** The overhead column's heading: what it is computed from. */
export function overheadHeading(cells: readonly CellSummary[]): string {
  return cells.some((c) => c.overheadBasis === "cpu")
    ? "CPU-based overhead [95%]"
    : "overhead [95% interval]";
}

/** Whether the table shows the TPS-based overhead beside a CPU-based one. */
export const showsTpsOverhead = (cells: readonly CellSummary[]): boolean =>
  cells.some((c) => c.overheadBasis === "cpu");

/** The results table; a `mitigations` column when the cells ran under more than one variant. */
export function renderTable(cells: readonly CellSummary[]): string {
  const withVariant = hasVariants(cells);
  const head = [
    "configuration",
    ...(withVariant ? ["mitigations"] : []),
    "workload",
    "runs",
    "TPS",
    overheadHeading(cells),
    ...(showsTpsOverhead(cells) ? ["TPS-based [95%]"] : []),
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "entries/s",
    "MB/hour",
    "GB/day",
    "WAL MB",
  ];
  const rows = cells.map((c) => [
    c.configuration,
    ...(withVariant ? [c.variant] : []),
    c.workload,
    String(c.runs),
    fmt(c.tps.median),
    formatOverhead(c),
    ...(showsTpsOverhead(cells) ? [formatTpsOverhead(c)] : []),
    fmt(c.latencyMs.p50, 2),
    fmt(c.latencyMs.p95, 2),
    fmt(c.latencyMs.p99, 2),
    fmt(Math.max(c.logRecordsPerSec, c.auditTableRowsPerTransaction * c.tps.median)),
    fmt(c.mbPerHour, 1),
    fmt(c.gbPerDay, 2),
    fmt(c.walMbPerRun, 1),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const textColumns = withVariant ? 3 : 2;
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i < textColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function renderFit(fit: CalibrationFit): string {
  const c = (x: { estimate: number; low: number; high: number }): string =>
    `${fmt(x.estimate, 2)} µs [${fmt(x.low, 2)} … ${fmt(x.high, 2)}]`;
  const k = fit.cpu?.collector;
  const parts = [
    `${k ? "backends: " : ""}per log line${fit.cpu?.columns.includes("miscLines") ? " of a statement" : ""} ${c(fit.lineCostUs)}`,
  ];
  if (fit.lineCostElsewhereUs) parts.push(`per log line, log dir elsewhere ${c(fit.lineCostElsewhereUs)}`);
  if (fit.statementCostUs) parts.push(`per statement in pgaudit's hooks ${c(fit.statementCostUs)}`);
  if (fit.transactionCostUs) parts.push(`per transaction that logs ${c(fit.transactionCostUs)}`);
  const byKind = (name: string, what: string): void => {
    const i = fit.cpu?.columns.indexOf(name) ?? -1;
    if (i >= 0) parts.push(`per ${what} ${fmt(fit.cpu!.coefficients[i]!, 2)} µs`);
  };
  byKind("miscLines", "pgAudit MISC line (BEGIN, COMMIT, SET…)");
  byKind("nestedLines", "nested line (foreign-key checks, functions)");
  const wakeups = fit.cpu?.columns.indexOf("wakeups") ?? -1;
  if (wakeups >= 0)
    parts.push(`per collector wake-up they cause ${fmt(fit.cpu!.coefficients[wakeups]!, 2)} µs`);
  if (k)
    parts.push(
      `the logging collector: ${c(k.wakeupUs)} per wake-up and ${c(k.lineUs)} per line, awake ${fmt(k.awakeUs, 0)} µs per wake-up (at ${fmt(k.linesPerSec.low, 0)}–${fmt(k.linesPerSec.high, 0)} lines/s)`,
    );
  if (fit.cpu)
    parts.push(
      `${(fit.cpu.loggerShare * 100).toFixed(0)}% of it in the logging collector; baseline ${fmt(fit.cpu.baselineServerUsPerStatement.estimate, 1)} µs per statement`,
    );
  const quality =
    fit.residualStdErrUs === null
      ? `${fit.points} points for ${fit.points - fit.degreesOfFreedom} coefficients: an exact fit, its quality unknown`
      : `R² ${fit.r2.toFixed(2)}, residual ${fmt(fit.residualStdErrUs, 1)} µs/transaction over ${fit.points} configurations${fit.cpu ? ` × ${fit.cpu.runs} runs` : ""}`;
  return `calibration${fit.cpu ? " in server CPU time" : ""}: ${parts.join("; ")} (${quality})`;
}

export const CPU_BASIS_NOTE =
  "CPU-based overhead = the server CPU time auditing added per transaction, as a share of a transaction's CPU time (server + pgbench), each run against the baseline measured around it: the TPS a CPU-bound machine loses. TPS-based = what the runs' throughput really lost, each against the baseline's TPS around it, whatever limited them (CPU, commits, locks); it swings with other load on the machine.";

export const NOT_SIGNIFICANT = "not significant at this sample size: the 95% interval includes no difference";

/** One line per cell whose overhead is not resolved: what would resolve it (terminal and HTML report). */
export function unresolvedNotes(report: BenchReport): string[] {
  const withVariant = hasVariants(report.cells);
  return report.cells
    .filter((c) => c.overhead && !c.overhead.significant)
    .map((c) => {
      const n = c.overhead!.runsToResolve ?? 0;
      const cell = `${cellTitle(c, withVariant)} × ${c.workload}`;
      return n > MAX_SENSIBLE_RUNS
        ? `${cell}: more than ${MAX_SENSIBLE_RUNS} runs would be needed: too small a difference to resolve in this much noise`
        : `${cell}: about ${n} runs of ${report.options.durationSec} s per configuration (or longer runs) would resolve it`;
    });
}

/** What was logged where: the variants, or the one destination and placement. */
export function loggingSummary(report: BenchReport): string {
  const env = report.environment;
  const o = report.options;
  const variants = report.variants ?? [];
  const durable = o.durable ? "; durable (fsync, synchronous_commit on)" : "";
  if (variants.length > 1)
    return `mitigations: ${variants.map((v) => v.name).join(", ")} (the baseline and trigger, which log nothing, once)${durable}`;
  return `log ${o.logDestination}${o.logStatementOnce ? ", log_statement_once on" : ""} ${env.logOnDataDisk ? "on the data disk" : "on another filesystem"}${durable}`;
}

/** The whole terminal report: what ran, the table, then notes on what is and is not resolved. */
export function renderReport(report: BenchReport): string {
  const o = report.options;
  const env = report.environment;
  const lines = [
    `PostgreSQL ${env.postgres.version}, pgaudit ${env.pgaudit ?? "not installed"}, ${env.cpus.count} cores, ${fmt(env.memoryBytes / 2 ** 30, 1)} GiB, load ${env.loadAverage.toFixed(2)} at start`,
    `pgbench scale ${o.scale}, ${o.clients} clients, ${o.jobs} jobs, ${o.durationSec} s × ${o.runs} runs per cell, interleaved; ${loggingSummary(report)}`,
    `baseline: ${report.target.baseline === "pgaudit-not-loaded" ? "pgaudit not loaded" : "pgaudit loaded with nothing logged (an existing server is not restarted; its hooks' cost is in the baseline)"}`,
    "",
    renderTable(report.cells),
    "",
  ];
  if (report.cells.some((c) => c.overheadBasis === "cpu")) lines.push(CPU_BASIS_NOTE);
  const unresolved = unresolvedNotes(report);
  if (unresolved.length > 0) {
    lines.push(`n.s. = ${NOT_SIGNIFICANT}.`);
    for (const note of unresolved) lines.push(`  ${note}`);
  }
  if (report.calibration) lines.push(renderFit(report.calibration));
  for (const note of report.notes) lines.push(`note: ${note}`);
  if (!report.complete)
    lines.push(`incomplete: ${report.interruption ?? "stopped"}; the runs above were measured`);
  lines.push(`reproduce: ${report.command}`);
  return `${lines.join("\n")}\n`;
}
