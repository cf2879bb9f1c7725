/** The overhead proof's arithmetic over real bench reports: a configuration held out of the fit. */
import {
  BASELINE,
  type BenchReport,
  type CalibrationFit,
  calibrationPoints,
  fitCalibration,
  type OverheadInterval,
  predictOverhead,
} from "@auditpipe/overhead";

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
    miscLinesPerTransaction: target.linesByKind?.misc ?? 0,
    nestedLinesPerTransaction: target.linesByKind?.nested ?? 0,
    auditedStatementsPerTransaction: target.auditedStatementsPerTransaction,
    logElsewhere: target.logElsewhere,
    baselineUsPerTransaction: (report.options.clients * 1e6) / base.tps.median,
    baselineCpuUsPerTransaction: cpu.server + cpu.client,
    // The collector prices a line at the rate the held-out cell sent them at.
    linesPerSec: target.linesPerTransaction * cell.tps.median,
  };
  return {
    configuration: heldOut,
    fit,
    predicted: predictOverhead(fit, input).cpuBound!,
    predicted999: predictOverhead(fit, { ...input, level: 0.999 }).cpuBound!,
    measured: cell.overhead!,
  };
}
