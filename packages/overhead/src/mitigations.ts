/**
 * The mitigations axis of the matrix: each variant is one combination of log destination,
 * `pgaudit.log_statement_once` and the log directory's placement, measured as cells of their own
 * beside the configurations. A mitigation that changes nothing for a configuration is not
 * measured for it twice: the baseline and the trigger write no log during a run, and
 * `log_statement_once` is pgaudit's. Pure.
 */
import type { ConfigurationKind } from "./configurations.ts";

/** Where the server's log goes; syslog through libc's syslog() to /dev/log and a syslog daemon. */
export const LOG_DESTINATIONS = ["csvlog", "jsonlog", "stderr", "syslog"] as const;
export type LogDestination = (typeof LOG_DESTINATIONS)[number];

/** The log directory on the data directory's disk, or at --log-dir-elsewhere's path. */
export const LOG_PLACEMENTS = ["data", "elsewhere"] as const;
export type LogPlacement = (typeof LOG_PLACEMENTS)[number];

/** The values asked for on each axis, in the order given (the first is each axis's default). */
export interface MitigationAxes {
  logDestination: readonly LogDestination[];
  logStatementOnce: readonly boolean[];
  logDir: readonly LogPlacement[];
}

/** One combination of mitigations: the `variant` of runs and cells. */
export interface Mitigation {
  /** `csvlog`, `csvlog+once`, `syslog+elsewhere` …: destination, then what differs from the defaults. */
  name: string;
  logDestination: LogDestination;
  logStatementOnce: boolean;
  logDir: LogPlacement;
}

export function mitigationName(m: Omit<Mitigation, "name">): string {
  return [
    m.logDestination,
    ...(m.logStatementOnce ? ["once"] : []),
    ...(m.logDir === "elsewhere" ? ["elsewhere"] : []),
  ].join("+");
}

const mitigation = (m: Omit<Mitigation, "name">): Mitigation => ({ name: mitigationName(m), ...m });
const unique = <T>(xs: readonly T[]): T[] => [...new Set(xs)];

/**
 * Every combination, destination by destination, then statement-once, then placement. syslog
 * has no placement (the daemon's file is where it is): its combinations are counted once.
 */
export function mitigationVariants(axes: MitigationAxes): Mitigation[] {
  const out: Mitigation[] = [];
  for (const logDestination of unique(axes.logDestination))
    for (const logStatementOnce of unique(axes.logStatementOnce))
      for (const placement of unique(axes.logDir)) {
        const logDir = logDestination === "syslog" ? "data" : placement;
        const m = mitigation({ logDestination, logStatementOnce, logDir });
        if (!out.some((x) => x.name === m.name)) out.push(m);
      }
  return out;
}

/**
 * The variants a configuration of this kind is measured under. The baseline and the trigger log
 * nothing during a run: once, under the first destination and placement. `log_statement_once`
 * changes only pgaudit's entries: other kinds run with it off. Order as in `variants`.
 */
export function variantsFor(kind: ConfigurationKind | string, variants: readonly Mitigation[]): Mitigation[] {
  const first = variants[0];
  if (!first) return [];
  if (kind === "baseline" || kind === "trigger")
    return [
      mitigation({ logDestination: first.logDestination, logStatementOnce: false, logDir: first.logDir }),
    ];
  if (kind === "pgaudit-session" || kind === "pgaudit-object") return [...variants];
  const seen = new Map<string, Mitigation>();
  for (const v of variants) {
    const m = mitigation({ logDestination: v.logDestination, logStatementOnce: false, logDir: v.logDir });
    if (!seen.has(m.name)) seen.set(m.name, m);
  }
  return [...seen.values()];
}

/** A cell's name for tables and notes: `write`, or `write (jsonlog+once)` when variants differ. */
export function cellTitle(
  cell: { configuration: string; variant?: string | undefined },
  withVariant: boolean,
): string {
  return withVariant && cell.variant ? `${cell.configuration} (${cell.variant})` : cell.configuration;
}

/** Whether the cells were measured under more than one variant (then tables show it). */
export function hasVariants(cells: ReadonlyArray<{ variant?: string | undefined }>): boolean {
  return new Set(cells.map((c) => c.variant ?? "")).size > 1;
}
