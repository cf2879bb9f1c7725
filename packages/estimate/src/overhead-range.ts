/**
 * One configuration's overhead on one workload: the server CPU it adds per transaction (from a
 * bench calibration, or from public measurements when there is none), what that costs a
 * CPU-bound server and each transaction's latency, and the answer for this server at the load
 * it was sampled under (regime.ts). A configuration that writes nothing costs nothing.
 */

import { calibrationQuality } from "./calibration-note.ts";
import { wakeupsPerLine } from "./collector-cost.ts";
import {
  type CalibratedCost,
  COLLECTOR_BOUND_WRITES,
  COLLECTOR_LOSS,
  type CpuCostModel,
  HOOK_COST_US,
  LINE_COST_US,
  type OverheadCalibration,
  predictAddedSplit,
  SAME_DISK_FACTOR,
  t95,
  UNCALIBRATED_NOTE,
} from "./overhead.ts";
import { answerFor, CONTENDED } from "./regime.ts";
import type { Interval, Overhead, Workload } from "./types.ts";

/** The logging collector's pipe carries messages in chunks of at most this many payload bytes (PIPE_MAX_PAYLOAD). */
const PIPE_PAYLOAD = 500;

export interface OverheadInput {
  workload: Workload;
  entriesPerSec: number;
  /** Audit and other lines per second. */
  linesPerSec: number;
  /** Of those, pgAudit's MISC and nested entries per second (priced apart by a calibration that measured them); absent: 0. */
  miscLinesPerSec?: number;
  nestedLinesPerSec?: number;
  bytesPerLine: number;
  /** Whether pgaudit does anything (any class or a role): its hooks always run once loaded. */
  auditing: boolean;
  logOnDataDisk: boolean;
  /** Coefficients measured by `auditpipe bench` on this kind of machine; the public ones when absent. */
  calibration?: OverheadCalibration;
}

const ZERO: Interval = { low: 0, estimate: 0, high: 0 };

/** "12.3%", never "-0.0%": a share that rounds to nothing prints as 0. */
export function percent(x: number, digits = 1): string {
  const s = (x * 100).toFixed(digits);
  return `${Number(s) === 0 ? (0).toFixed(digits) : s}%`;
}

const cost = (x: CalibratedCost): string =>
  `${x.estimate.toFixed(1)} µs [${x.low.toFixed(1)}–${x.high.toFixed(1)}]`;

/** Server CPU per transaction a calibration predicts, never below zero; and the collector's share of it. */
function calibratedAdded(
  cal: OverheadCalibration,
  lines: number,
  kinds: { misc: number; nested: number },
  statements: number,
  logElsewhere: boolean,
  linesPerSec: number,
): { added: Interval; offPath: number } {
  if (cal.cpu) {
    // The collector prices a line at the rate this workload sends them at (collector-cost.ts).
    const { added: p, collectorShare } = predictAddedSplit(
      { ...cal, cpu: cal.cpu },
      {
        linesPerTransaction: lines,
        miscLinesPerTransaction: kinds.misc,
        nestedLinesPerTransaction: kinds.nested,
        auditedStatementsPerTransaction: statements,
        logElsewhere,
        baselineUsPerTransaction: 1,
        linesPerSec,
      },
    );
    return {
      added: { low: Math.max(0, p.low), estimate: Math.max(0, p.estimate), high: Math.max(0, p.high) },
      offPath: collectorShare,
    };
  }
  // Wall time from TPS (older files, or a server bench could not see): the costs' ranges, widened by the residual.
  const lineCost = logElsewhere ? (cal.lineCostElsewhereUs ?? cal.lineCostUs) : cal.lineCostUs;
  const terms: Array<[CalibratedCost, number]> = [[lineCost, lines]];
  if (cal.statementCostUs) terms.push([cal.statementCostUs, statements]);
  const sum = (f: (c: CalibratedCost) => number): number => terms.reduce((s, [c, x]) => s + f(c) * x, 0);
  const spread = cal.residualStdErrUs === null ? 0 : t95(cal.degreesOfFreedom) * cal.residualStdErrUs;
  return {
    added: {
      low: Math.max(0, sum((c) => c.low) - spread),
      estimate: Math.max(
        0,
        sum((c) => c.estimate),
      ),
      high: Math.max(0, sum((c) => c.high) + spread),
    },
    offPath: 0,
  };
}

/** A CPU calibration's backend µs per MISC and per nested line, when it priced lines by kind; null otherwise. */
function kindCosts(cpu: CpuCostModel): { misc: number; nested: number | null } | null {
  const at = (name: string): number | null => {
    const i = cpu.columns.indexOf(name);
    return i < 0 ? null : cpu.coefficients[i]!;
  };
  const misc = at("miscLines");
  return misc === null ? null : { misc, nested: at("nestedLines") };
}

/** What a configuration that writes nothing (or a workload without transactions) costs: 0, not a range. */
function nothingAdded(
  input: OverheadInput,
  tps: number,
  statementsPerSec: number,
  clients: number,
): Overhead {
  return {
    throughput: ZERO,
    addedCpuUs: ZERO,
    cpuBound: ZERO,
    latencyMs: ZERO,
    latencyShare: tps > 0 && clients > 0 ? ZERO : null,
    regime: {
      kind: "none",
      reason:
        tps <= 0 || statementsPerSec <= 0
          ? "no transactions in the workload: nothing to slow down"
          : "this configuration writes nothing on this workload: it adds nothing",
      transactionCpuUs: 0,
      transactionCpuSource: "floor",
    },
    linesPerSec: input.linesPerSec,
    collectorBound: false,
    confidence: "high",
    assumptions: [
      tps <= 0 || statementsPerSec <= 0
        ? "no transactions in the workload: nothing to slow down"
        : "writes nothing on this workload: no log line, so no cost (pgaudit's hooks, once it is loaded, are the server's already)",
    ],
  };
}

/** The added CPU per transaction, the collector's share, and the CPU-bound floor with what it rests on. */
interface Costs {
  added: Interval;
  offPath: number;
  cpuFloor: number;
  floorSays: string;
}

/** A calibration's costs for this workload (collector priced at its line rate), with the assumptions they rest on. */
function calibratedCosts(
  cal: OverheadCalibration,
  input: OverheadInput,
  perTxn: { lines: number; statements: number; audited: number },
  assumptions: string[],
): Costs {
  const { lines: linesPerTxn, statements: stmtsPerTxn, audited } = perTxn;
  const tps = input.workload.transactionsPerSec;
  const kinds = {
    misc: tps > 0 ? (input.miscLinesPerSec ?? 0) / tps : 0,
    nested: tps > 0 ? (input.nestedLinesPerSec ?? 0) / tps : 0,
  };
  const { added, offPath } = calibratedAdded(
    cal,
    linesPerTxn,
    kinds,
    audited,
    !input.logOnDataDisk,
    input.linesPerSec,
  );
  assumptions.push(calibrationQuality(cal));
  const line = !input.logOnDataDisk && cal.lineCostElsewhereUs ? cal.lineCostElsewhereUs : cal.lineCostUs;
  assumptions.push(
    `${linesPerTxn.toFixed(2)} log lines and ${audited.toFixed(2)} audited statements per transaction; measured ${cost(line)} ${cal.cpu ? "of server CPU " : ""}per line${cal.statementCostUs ? `, ${cost(cal.statementCostUs)} per statement in pgaudit's hooks` : ""}${cal.transactionCostUs ? `, ${cost(cal.transactionCostUs)} per transaction that logs` : ""}${cal.cpu ? `; ${(offPath * 100).toFixed(0)}% of it in the logging collector, beside the transactions` : ""}`,
  );
  const byKind = cal.cpu ? kindCosts(cal.cpu) : null;
  if (byKind && kinds.misc + kinds.nested > 0)
    assumptions.push(
      `of those lines, ${kinds.misc.toFixed(2)} pgAudit MISC (BEGIN, COMMIT, SET…) and ${kinds.nested.toFixed(2)} nested (foreign-key checks, statements in functions and triggers): ${byKind.misc.toFixed(1)} µs each for MISC${byKind.nested === null ? " and nested ones alike (the calibration's workloads log no nested line: priced as MISC, which names no object either)" : `, ${byKind.nested.toFixed(1)} µs for nested`}, against the statements' own ${cost(line)}`,
    );
  const collector = cal.cpu?.collector;
  if (collector) {
    const u = wakeupsPerLine(input.linesPerSec, collector.awakeUs);
    // Version 4: what the backends pay per wake-up they cause (their pipe write finds it asleep).
    const v = cal.cpu!.columns.indexOf("wakeups");
    const backends = v >= 0 ? cal.cpu!.coefficients[v]! : null;
    assumptions.push(
      `the logging collector: ${cost(collector.wakeupUs)} of CPU per wake-up and ${cost(collector.lineUs)} per line, awake ${collector.awakeUs.toFixed(0)} µs per wake-up; at this workload's ${Math.round(input.linesPerSec)} lines/s, ${u.toFixed(2)} wake-ups per line: ${(collector.lineUs.estimate + u * collector.wakeupUs.estimate).toFixed(1)} µs per line${backends === null ? "" : `; the backends ${backends.toFixed(1)} µs per wake-up they cause`}`,
    );
  }
  const perStatement = cal.cpu?.baselineServerUsPerStatement.low;
  const w = input.workload;
  return {
    added,
    offPath,
    cpuFloor: perStatement ? stmtsPerTxn * perStatement : stmtsPerTxn * (w.meanStatementMs ?? 0.1) * 1000,
    floorSays: perStatement
      ? `its ${stmtsPerTxn.toFixed(1)} statements at the calibration's cheapest ${perStatement.toFixed(1)} µs each (a floor: heavier statements make the share smaller)`
      : `its ${stmtsPerTxn.toFixed(1)} statements' server time`,
  };
}

/** The public measurements' costs (no calibration), with the assumptions they rest on. */
function uncalibratedCosts(
  input: OverheadInput,
  perTxn: { lines: number; statements: number; hooks: boolean },
  assumptions: string[],
): Costs {
  const { lines: linesPerTxn, statements: stmtsPerTxn } = perTxn;
  const w = input.workload;
  const c = Math.max(1, w.clients ?? 0);
  const highLine =
    LINE_COST_US.highOneClient +
    ((LINE_COST_US.highAt56 - LINE_COST_US.highOneClient) * Math.min(c - 1, 55)) / 55;
  const hook = perTxn.hooks ? HOOK_COST_US : { low: 0, high: 0 };
  const low = linesPerTxn * LINE_COST_US.low + stmtsPerTxn * hook.low;
  const high = linesPerTxn * highLine + stmtsPerTxn * hook.high;
  assumptions.push(UNCALIBRATED_NOTE);
  assumptions.push(
    `${linesPerTxn.toFixed(2)} log lines and ${stmtsPerTxn.toFixed(2)} statements per transaction; ${LINE_COST_US.low}–${highLine.toFixed(1)} µs per line (digoal, 2018, at 56 clients: 23 µs), ${hook.low}–${hook.high} µs of pgaudit hooks per statement`,
  );
  const ms = w.meanStatementMs ?? 0.1;
  return {
    added: { low, estimate: Math.sqrt(low * high), high },
    offPath: 0,
    cpuFloor: stmtsPerTxn * ms * 1000,
    floorSays: `its ${stmtsPerTxn.toFixed(1)} statements' server time (${ms.toFixed(3)} ms each, pg_stat_statements)`,
  };
}

/**
 * The throughput range past the collector-bound onset (digoal's losses bound it), and, uncalibrated
 * with logs on the data disk, Gold Lapel's factor on its high end.
 */
function boundedThroughput(
  answer: Interval,
  input: OverheadInput,
  assumptions: string[],
): { throughput: Interval; collectorBound: boolean } {
  let throughput = answer;
  const writes = input.linesPerSec * Math.max(1, Math.ceil(input.bytesPerLine / PIPE_PAYLOAD));
  const collectorBound = writes >= COLLECTOR_BOUND_WRITES.onset;
  if (collectorBound) {
    throughput = {
      low:
        writes >= COLLECTOR_BOUND_WRITES.saturated
          ? Math.max(throughput.low, COLLECTOR_LOSS.low)
          : throughput.low,
      estimate: throughput.estimate,
      high: Math.max(throughput.high, COLLECTOR_LOSS.high),
    };
    assumptions.push(
      `${Math.round(writes)} pipe writes/s: in the range where digoal (2018) saw the logging collector's pipe become the bottleneck (−8% to −70% at 56 clients)`,
    );
  }
  if (!input.calibration && input.logOnDataDisk) {
    throughput = { ...throughput, high: Math.min(0.95, throughput.high * SAME_DISK_FACTOR) };
    assumptions.push(
      "logs on the data disk: high bound x1.87 (Gold Lapel's pgAudit benchmarks: a separate log volume halved session-ALL overhead)",
    );
  }
  return { throughput, collectorBound };
}

/** The overhead of one configuration on the workload. */
export function overheadRange(input: OverheadInput): Overhead {
  const w = input.workload;
  const tps = w.transactionsPerSec;
  const statementsPerSec = w.statements.reduce((sum, s) => sum + s.callsPerSec, 0);
  const clients = w.clients ?? 0;
  if (tps <= 0 || statementsPerSec <= 0 || input.linesPerSec <= 0)
    return nothingAdded(input, tps, statementsPerSec, clients);
  const assumptions: string[] = [];
  const linesPerTxn = input.linesPerSec / tps;
  const stmtsPerTxn = statementsPerSec / tps;
  // pgaudit's work per statement (log_select_dml on every DML statement, foreign-key checks
  // included) runs once any class or the audit role is on: a server where pgaudit logs something
  // already pays for it in the CPU the sample measured, so it is not added again. Loaded with
  // nothing to log, the hook skips it: added (the calibration's cost per statement is against a
  // server without pgaudit, so it also holds the little a loaded, idle pgaudit does: a bound).
  const hooksAlready = w.pgauditLogging === true;
  const audited = input.auditing && !hooksAlready ? stmtsPerTxn : 0;
  const cal = input.calibration;
  const { added, offPath, cpuFloor, floorSays } = cal
    ? calibratedCosts(cal, input, { lines: linesPerTxn, statements: stmtsPerTxn, audited }, assumptions)
    : uncalibratedCosts(
        input,
        { lines: linesPerTxn, statements: stmtsPerTxn, hooks: input.auditing && !hooksAlready },
        assumptions,
      );
  if (input.auditing && hooksAlready)
    assumptions.push(
      "pgaudit logs on this server already: its work per statement is in the CPU sampled, not added again",
    );
  else if (input.auditing && w.pgauditLoaded === true)
    assumptions.push(
      "pgaudit is loaded here but logs nothing: its work per statement (log_select_dml on every DML statement, foreign-key checks included) starts with the first class, so it is added",
    );
  const answer = answerFor({
    addedUs: added,
    offPathShare: offPath,
    transactionsPerSec: tps,
    clients,
    load: w.load,
    cpuFloorUs: cpuFloor,
  });
  const { throughput, collectorBound } = boundedThroughput(answer.throughput, input, assumptions);
  const source = answer.cpuMeasured
    ? "measured"
    : w.load?.busy != null && w.load.cores != null
      ? "given"
      : "floor";
  assumptions.push(answer.regime.reason);
  assumptions.push(
    `CPU-bound: against ${answer.cpuUsPerTransaction.toFixed(0)} µs of CPU per transaction (${
      source === "measured"
        ? `measured on this host: PostgreSQL's processes${(w.load?.localClientCpuUsPerTransaction ?? 0) > 0 ? " and its clients on the same machine" : ""}`
        : source === "given"
          ? "--cpu-busy × --cores / TPS: every busy core taken as this server's"
          : floorSays
    })`,
  );
  if (offPath > 0 && (w.load?.stretch ?? 1) > CONTENDED)
    assumptions.push(
      `other work stretches each CPU µs ${w.load!.stretch!.toFixed(1)}x: the logging collector may fall behind and make the backends wait for its pipe, so the high end counts its CPU on the transactions' path too`,
    );
  for (const note of w.load?.notes ?? []) assumptions.push(note);
  return {
    throughput,
    addedCpuUs: added,
    cpuBound: answer.cpuBound,
    latencyMs: answer.latencyMs,
    latencyShare: answer.latencyShare,
    regime: {
      kind: answer.regime.kind,
      reason: answer.regime.reason,
      transactionCpuUs: answer.cpuUsPerTransaction,
      transactionCpuSource: source,
    },
    linesPerSec: input.linesPerSec,
    collectorBound,
    confidence:
      !cal || collectorBound ? "low" : answer.regime.kind === "unknown" || !cal.cpu ? "medium" : "high",
    assumptions,
  };
}
