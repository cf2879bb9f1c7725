/**
 * The run plan: every (configuration, workload) cell `runs` times, interleaved in rotating order
 * so slow drift of a busy machine (other tenants, caches, autovacuum) spreads over every cell
 * instead of landing on one; a discarded warm-up first.
 */

export interface Cell {
  configuration: string;
  workload: string;
  /** The mitigation variant (mitigations.ts) the cell runs under; absent when none were planned. */
  variant?: string;
}

export interface PlannedRun extends Cell {
  /** Position in the plan, 0-based (the warm-up is -1). */
  index: number;
  /** Round number, 0-based; each round runs every cell once. */
  round: number;
  warmup: boolean;
}

export interface PlanOptions {
  configurations: readonly string[];
  workloads: readonly string[];
  runs: number;
  /** Run a discarded warm-up of the first cell first; default true. */
  warmup?: boolean;
  /** The mitigation variants each configuration runs under (a cell each); none when absent. */
  variants?: (configuration: string) => readonly string[];
  /**
   * The configurations a workload runs, where not all of them (bench --quick's `all` at 8
   * clients and at 300 TPS, other line rates, run with their baseline only).
   */
  configurationsOf?: (workload: string) => readonly string[] | undefined;
  /** The rounds a workload runs in, where fewer than `runs` (bench --quick's rate cells: the first ones). */
  roundsOf?: (workload: string) => number | undefined;
}

/**
 * Cells workload by workload, then variant by variant, so consecutive cells differ in
 * configuration (the variants cycle like the configurations do).
 */
export function cellsOf(
  configurations: readonly string[],
  workloads: readonly string[],
  variants?: (configuration: string) => readonly string[],
): Cell[] {
  if (!variants)
    return workloads.flatMap((workload) =>
      configurations.map((configuration) => ({ configuration, workload })),
    );
  const names = [...new Set(configurations.flatMap((c) => variants(c)))];
  return workloads.flatMap((workload) =>
    names.flatMap((variant) =>
      configurations
        .filter((configuration) => variants(configuration).includes(variant))
        .map((configuration) => ({ configuration, workload, variant })),
    ),
  );
}

const sameCell = (a: Cell | undefined, b: Cell | undefined): boolean =>
  a !== undefined &&
  b !== undefined &&
  a.configuration === b.configuration &&
  a.workload === b.workload &&
  a.variant === b.variant;

/**
 * Round r runs the cells rotated by r places, so each cell takes each position in a round in
 * turn; where a rotation would repeat the previous round's last cell (two cells), the round's
 * first two swap.
 */
export function planRuns(options: PlanOptions): PlannedRun[] {
  const only = options.configurationsOf;
  const cells = cellsOf(options.configurations, options.workloads, options.variants).filter(
    (c) => only?.(c.workload)?.includes(c.configuration) ?? true,
  );
  const out: PlannedRun[] = [];
  if (cells.length === 0 || options.runs < 1) return out;
  if (options.warmup ?? true) out.push({ ...cells[0]!, index: -1, round: -1, warmup: true });
  let index = 0;
  let previous: Cell | undefined;
  for (let round = 0; round < options.runs; round++) {
    const shift = round % cells.length;
    const order = [...cells.slice(shift), ...cells.slice(0, shift)].filter(
      (c) => round < (options.roundsOf?.(c.workload) ?? options.runs),
    );
    if (order.length > 1 && sameCell(previous, order[0])) [order[0], order[1]] = [order[1]!, order[0]!];
    for (const cell of order) out.push({ ...cell, index: index++, round, warmup: false });
    previous = order.at(-1);
  }
  return out;
}

export interface DurationOptions {
  /** pgbench -T of each run, seconds. */
  durationSec: number;
  /** Warm-up length, seconds. */
  warmupSec: number;
  /** Time around each run (restart, CHECKPOINT, reading the log), seconds. */
  perRunOverheadSec: number;
  /** One-off set-up (initdb, pgbench -i, ANALYZE), seconds. */
  setupSec: number;
}

/** The plan's expected wall time in seconds: printed before it starts, and the base of the ETA. */
export function plannedSeconds(plan: readonly PlannedRun[], options: DurationOptions): number {
  let total = options.setupSec;
  for (const run of plan)
    total += (run.warmup ? options.warmupSec : options.durationSec) + options.perRunOverheadSec;
  return total;
}
