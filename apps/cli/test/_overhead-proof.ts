/** The overhead proof's arithmetic over real bench reports, and its table in docs/estimator.md. */
import {
  BASELINE,
  type BenchReport,
  type CalibrationFit,
  calibrationPoints,
  fitCalibration,
  type OverheadInterval,
  predictOverhead,
} from "@auditpipe/bench";
import { rewriteDocSection } from "@auditpipe/testkit";

interface Range {
  low: number;
  estimate: number;
  high: number;
}

export interface HeldOut {
  configuration: string;
  /** The fit to the other configurations. */
  fit: CalibrationFit;
  /** The CPU-bound overhead the fit predicts for the held-out configuration: 95 % prediction interval. */
  predicted: Range;
  /** The same at 99.9 %: what a test that must not fail by chance checks. */
  predicted999: Range;
  /** What bench measured for it. */
  measured: OverheadInterval;
}

/**
 * Calibrates on every logging configuration of the report but `heldOut`, predicts `heldOut`'s
 * overhead from its log lines and audited statements per transaction, and returns it beside
 * what the same bench run measured.
 */
export function predictHeldOut(report: BenchReport, heldOut: string, workload = "tpcb"): HeldOut {
  const points = calibrationPoints(report.cells, report.configurations, report.workloads, {
    clients: report.options.clients,
    logElsewhere: !report.environment.logOnDataDisk,
    runs: report.runs,
    seed: report.options.seed,
  }).filter((p) => p.workload === workload);
  const target = points.find((p) => p.configuration === heldOut);
  if (!target) throw new Error(`no calibration point for ${heldOut}`);
  const fit = fitCalibration(points.filter((p) => p !== target));
  if (!fit?.cpu) throw new Error("the fit has no CPU basis: were CPU times measured?");
  const base = report.cells.find((c) => c.workload === workload && c.configuration === BASELINE)!;
  const cell = report.cells.find((c) => c.workload === workload && c.configuration === heldOut)!;
  const cpu = base.cpuUsPerTransaction!;
  const input = {
    linesPerTransaction: target.linesPerTransaction,
    auditedStatementsPerTransaction: target.auditedStatementsPerTransaction,
    logElsewhere: target.logElsewhere,
    baselineUsPerTransaction: (report.options.clients * 1e6) / base.tps.median,
    baselineCpuUsPerTransaction: cpu.server + cpu.client,
  };
  return {
    configuration: heldOut,
    fit,
    predicted: predictOverhead(fit, input).cpuBound!,
    predicted999: predictOverhead(fit, { ...input, level: 0.999 }).cpuBound!,
    measured: cell.overhead!,
  };
}

export interface ProofRow {
  check: string;
  configuration: string;
  /** At 95 %, as bench and estimate print it. */
  predicted: { low: number; high: number; estimate?: number };
  /** At 99.9 %, where the test checks that instead. */
  predicted999?: { low: number; high: number };
  measured: { median: number; low: number; high: number };
  /** The TPS-based overhead of the same runs, for comparison (noisier). */
  tps: { median: number; low: number; high: number } | null;
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** With AUDITPIPE_WRITE_PROOF=1, replaces the table between the overhead-proof markers of docs/estimator.md. */
export function writeOverheadProofTable(rows: readonly ProofRow[], context: string): void {
  const range = (r: { low: number; high: number; estimate?: number }): string =>
    `${r.estimate === undefined ? "" : `${pct(r.estimate)} `}[${pct(r.low)} … ${pct(r.high)}]`;
  const inside = (x: number, r: { low: number; high: number }): boolean => x >= r.low && x <= r.high;
  const table = [
    "| check | configuration | predicted [95%] | [99.9%] | measured (CPU) [95%] | inside 95% | inside 99.9% | measured (TPS) [95%] |",
    "|---|---|--:|--:|--:|:-:|:-:|--:|",
    ...rows.map((r) => {
      const m = r.measured;
      return `| ${r.check} | ${r.configuration} | ${range(r.predicted)} | ${r.predicted999 ? range(r.predicted999) : "—"} | ${pct(m.median)} [${pct(m.low)} … ${pct(m.high)}] | ${inside(m.median, r.predicted) ? "yes" : "**no**"} | ${r.predicted999 ? (inside(m.median, r.predicted999) ? "yes" : "**no**") : "—"} | ${r.tps ? range({ ...r.tps, estimate: r.tps.median }) : "—"} |`;
    }),
  ].join("\n");
  process.stdout.write(`\n${context}\n${table}\n`);
  if (process.env.AUDITPIPE_WRITE_PROOF === "1")
    rewriteDocSection("estimator.md", "overhead-proof", `${context}\n\n${table}`);
}
