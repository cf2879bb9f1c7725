/**
 * The bench report (`auditpipe bench --json`, schema version 1) and the calibration file
 * (`--calibration-out`). Stable: fields are only ever added; docs/bench.md documents each one.
 */
import type { CollectorCost } from "@auditpipe/estimate";
import type { LogDestination, LogPlacement } from "./mitigations.ts";
import type { OverheadInterval } from "./stats.ts";

export interface Filesystem {
  /** The directory measured. */
  path: string;
  /** Filesystem type (ext4, xfs, tmpfs, overlay …); null when it could not be read. */
  type: string | null;
  /** Device or source of the mount; null when unknown. */
  device: string | null;
  /** Mount point holding the directory; null when unknown. */
  mountPoint: string | null;
}

export interface Environment {
  host: string;
  os: string;
  kernel: string;
  arch: string;
  cpus: { count: number; model: string };
  memoryBytes: number;
  node: string;
  postgres: { version: string; versionNum: number };
  /** pgaudit's extension version, or the library's when no extension is created; null when absent. */
  pgaudit: string | null;
  pgbench: string;
  /** Settings that shape the figures (shared_buffers, fsync, synchronous_commit, logging …), as SHOW prints them. */
  settings: Record<string, string>;
  dataDirectory: Filesystem;
  logDirectory: Filesystem;
  /** Whether the log directory is on the same filesystem as the data directory. */
  logOnDataDisk: boolean;
  /** The 1-minute load average when the bench started (other work on the machine adds noise). */
  loadAverage: number;
}

export interface RunLog {
  /** Log records PostgreSQL wrote during the run (audit entries, statement lines, anything else). */
  records: number;
  /** pgAudit entries among them. */
  auditEntries: number;
  /** Bytes of log written during the run (the byte range of the log files, all records). */
  bytes: number;
  /** Stretches our parser could not read (should be 0). */
  malformed: number;
  /**
   * pgAudit entries by kind, of `auditEntries`: MISC (BEGIN, COMMIT, SET…) and nested (a
   * substatement: a foreign-key check, a function's statement); the rest are statements'. A line's
   * cost differs by kind (docs/estimator.md, "Overhead proof"). Absent in reports made before.
   */
  auditKinds?: { misc: number; nested: number };
}

/** CPU time a run cost, read from /proc (the server's processes must be visible from bench). */
export interface RunCpu {
  /** The server's processes: backends (pgbench's and the ones that ended), the logging collector, background processes. */
  serverSec: number;
  /** The logging collector's share of serverSec. */
  loggerSec: number;
  /** The logging collector's wake-ups during the run (voluntary context switches); absent in older reports. */
  loggerWakeups?: number;
  /** pgbench's own time. */
  clientSec: number;
  /**
   * Every CPU of the machine busy, seconds (from /proc/stat): what is above serverSec + clientSec
   * is other work that ran meanwhile. Null when not readable.
   */
  machineBusySec?: number | null;
}

export interface RunResult {
  index: number;
  round: number;
  configuration: string;
  workload: string;
  /** The mitigation variant it ran under (`variants[].name`); absent in reports before variants. */
  variant?: string;
  startedAt: string;
  /** Wall seconds pgbench ran. */
  durationSec: number;
  tps: number;
  transactions: number;
  failedTransactions: number;
  latencyMs: { mean: number; p50: number; p95: number; p99: number; max: number };
  log: RunLog;
  /** Rows and bytes the trigger configuration wrote to its audit table (null for the others). */
  auditTable: { rows: number; bytes: number } | null;
  /** CPU seconds of the run; null (or absent, in older reports) when the server's processes are not visible. */
  cpu?: RunCpu | null;
  /** WAL generated, from the pg_current_wal_lsn() difference. */
  walBytes: number;
  /** Deltas of pg_stat_wal's counters over the run. */
  statWal: Record<string, number>;
  /** Deltas of pg_stat_io summed per backend type (reads, writes, extends, fsyncs …); {} before PostgreSQL 16. */
  statIo: Record<string, number>;
  /** Deltas of pg_stat_bgwriter's counters. */
  statBgwriter: Record<string, number>;
}

export interface CellSummary {
  configuration: string;
  workload: string;
  /** The mitigation variant (`variants[].name`); "" in reports before variants. */
  variant: string;
  runs: number;
  /** Median TPS over runs with its 95 % bootstrap interval. */
  tps: { median: number; low: number; high: number };
  /**
   * Throughput overhead against the baseline (0.12 = 12 % fewer TPS); null for the baseline itself.
   * With CPU times (`overheadBasis: "cpu"`): the server's added CPU time per transaction as a share
   * of the whole transaction's (server + pgbench), each run against the baseline around it — the TPS a CPU-bound
   * machine loses; otherwise from the runs' TPS.
   */
  overhead: OverheadInterval | null;
  /** What `overhead` is computed from (absent in older reports: "tps"). */
  overheadBasis?: "cpu" | "tps";
  /**
   * The throughput the runs lost, whatever the basis: each run's TPS against the baseline's TPS
   * around it (interpolated, as for CPU times), median over runs; from the medians when fewer
   * than two baseline runs. Null for the baseline.
   */
  tpsOverhead?: OverheadInterval | null;
  /** Median CPU µs per transaction of the server, its logging collector and pgbench; null without CPU times. */
  cpuUsPerTransaction?: { server: number; logger: number; client: number } | null;
  /** Medians over runs of each run's percentile. */
  latencyMs: { p50: number; p95: number; p99: number };
  /** Log records per second (median over runs). */
  logRecordsPerSec: number;
  /** pgAudit entries per second (median over runs). */
  auditEntriesPerSec: number;
  /** Log bytes per second (median over runs). */
  logBytesPerSec: number;
  mbPerHour: number;
  gbPerDay: number;
  /** Median WAL MB per run, and per transaction in bytes. */
  walMbPerRun: number;
  walBytesPerTransaction: number;
  /** Log records and audit-table rows per transaction (median over runs): the calibration's inputs. */
  logRecordsPerTransaction: number;
  /** pgAudit entries per transaction by kind (RunLog.auditKinds; medians); absent in reports made before. */
  auditEntriesByKindPerTransaction?: { statement: number; misc: number; nested: number };
  auditTableRowsPerTransaction: number;
}

export interface ConfigurationInfo {
  name: string;
  kind: string;
  description: string;
  preloadPgaudit: boolean;
  settings: Record<string, string>;
  /** Tables granted to the audit role (object) or carrying the trigger (trigger). */
  tables: string[];
}

/** One combination of mitigations the bench measured (the `variant` of runs and cells). */
export interface VariantInfo {
  /** `csvlog`, `csvlog+once`, `syslog+elsewhere` …: the destination, then what differs from the defaults. */
  name: string;
  logDestination: LogDestination;
  /** pgaudit.log_statement_once (pgaudit configurations only: the others run with it off). */
  logStatementOnce: boolean;
  /** The log directory on the data disk, or at --log-dir-elsewhere's path. */
  logDir: LogPlacement;
  /** Where the log of this variant is written (for syslog: the syslog daemon's file's directory). */
  logDirectory: Filesystem;
  /** Whether that is on the data directory's filesystem. */
  logOnDataDisk: boolean;
}

export interface WorkloadInfo {
  name: string;
  description: string;
  statementsPerTransaction: number;
  /** pgbench clients when not the bench's `--clients` (bench --quick's rate cells: other line rates). */
  clients?: number;
  /**
   * pgbench -R: a fixed rate, transactions per second (bench --quick's `tpcb@300tps`: a low line
   * rate, at which every line wakes the logging collector); absent: as fast as it goes.
   */
  rate?: number;
}

export interface CalibrationCoefficient {
  /** The fitted value. */
  estimate: number;
  /**
   * Its 95 % interval: from the coefficient's standard error (CPU basis), or the fit to the cells'
   * interval ends (TPS basis).
   */
  low: number;
  high: number;
}

/**
 * What a CPU-basis fit adds: enough to give any workload a prediction interval, and the two
 * regimes' denominators (see docs/bench.md#calibration).
 */
export interface CpuCalibration {
  /** The fit's columns, in the covariance's order: "lines", "linesElsewhere", "statements", "transactions", "wakeups". */
  columns: string[];
  /** The coefficients in that order, server CPU µs (the same values as the named costs). */
  coefficients: number[];
  /** Covariance of the coefficients, µs². */
  covariance: number[][];
  /** Rounds per configuration the fit's points were measured over: a new measurement of that many runs is what its intervals cover. */
  runs: number;
  /** The logging collector's share of the added server time (it runs beside the backends, off their path). */
  loggerShare: number;
  /** Server CPU µs per statement of the baseline workload: the cheapest a statement was here. */
  baselineServerUsPerStatement: CalibrationCoefficient;
  /**
   * The machine's state the coefficients are at: the baseline's server µs per statement, median
   * over runs. Each run's added time was put at this state before fitting (see docs/bench.md).
   * Absent in files before the constrained fit.
   */
  referenceUsPerStatement?: number;
  /**
   * The coefficients and their covariance relative to `referenceUsPerStatement` (µs / µs): what
   * travels to a machine in another state, scaled by its own baseline µs per statement.
   */
  relative?: { coefficients: number[]; covariance: number[][] };
  /**
   * Version 3: the logging collector's CPU apart (per wake-up, per line, how long it stays awake;
   * @auditpipe/estimate's collector-cost.ts); the columns' coefficients are then the backends'
   * alone. Absent: one cost per line for both (files before it, or runs without the collector's ticks).
   */
  collector?: CollectorCost;
}

export interface CalibrationFit {
  /** Backend time per log line, µs (log directory on the data disk, or everywhere when not measured apart). */
  lineCostUs: CalibrationCoefficient;
  /** Backend time per log line with the log directory on another disk, µs; null when not measured. */
  lineCostElsewhereUs: CalibrationCoefficient | null;
  /** Time in pgaudit's hooks per statement it processes, µs; null when no pgaudit configuration was measured. */
  statementCostUs: CalibrationCoefficient | null;
  /**
   * CPU basis: server µs per transaction that logs anything (the logging collector's wake-ups and
   * what they cost a busy machine); null when not told apart (absent in older files).
   */
  transactionCostUs?: CalibrationCoefficient | null;
  /** Coefficient of determination over the points (1 = perfect; near 0 or below: the model explains little). */
  r2: number;
  /** Residual standard error of the added time per transaction, µs (null with no degrees of freedom). */
  residualStdErrUs: number | null;
  points: number;
  degreesOfFreedom: number;
  /**
   * "cpu": the costs are server CPU µs per transaction, from paired runs' CPU times; "tps": wall
   * µs derived from TPS overheads (reports and files before CPU times, or without them).
   */
  basis?: "cpu" | "tps";
  /** Present with the CPU basis. */
  cpu?: CpuCalibration | null;
}

export interface CalibrationPoint {
  configuration: string;
  workload: string;
  clients: number;
  /**
   * pgbench -R the point ran at (bench --quick's `tpcb@300tps`); absent: as fast as it went. Its
   * runs are not scaled to the reference state: their baseline costs more per statement because
   * of the rate (every transaction wakes its backend), not because the machine was busier.
   */
  rate?: number;
  linesPerTransaction: number;
  /**
   * Of `linesPerTransaction`, pgAudit's MISC lines and nested ones (RunLog.auditKinds), where the
   * runs counted them: not fitted apart yet, kept so that a calibration file can be fitted again
   * by kind of line.
   */
  linesByKind?: { misc: number; nested: number };
  auditedStatementsPerTransaction: number;
  logElsewhere: boolean;
  /**
   * Added time per transaction, µs, median and 95 % interval: the server's CPU time (CPU basis), or
   * overhead × clients / TPS (TPS basis).
   */
  addedUs: { median: number; low: number; high: number };
  /** CPU basis: the added server µs per transaction of each run (against the baseline around it). */
  samples?: number[];
  /** CPU basis: the logging collector's added µs per transaction, median over runs. */
  addedLoggerUs?: number;
  /** CPU basis: the baseline's server CPU µs per transaction, median and interval. */
  baselineServerUs?: { median: number; low: number; high: number };
  /** Statements per transaction of the workload (pgaudit's or not). */
  statementsPerTransaction?: number;
  /** CPU basis: the baseline's server µs per transaction around each run (in `samples`' order). */
  baselineSamples?: number[];
  /** CPU basis: the collector's added µs per transaction of each run (in `samples`' order); absent before version 3. */
  loggerSamples?: number[];
  /** CPU basis: the log lines per second the collector received in each run (added lines × the run's TPS). */
  linesPerSecSamples?: number[];
  /** CPU basis: the collector's added wake-ups per transaction of each run; absent where not measured. */
  wakeupSamples?: number[];
}

export interface Calibration {
  kind: "auditpipe-calibration";
  /**
   * 5: lines priced by kind (`miscLines`, maybe `nestedLines`: pgAudit's MISC and nested lines apart
   * from the statements' own), the fixed-rate cell left to the collector's fit (no `wakeups`);
   * 4: the backends' cost per collector wake-up as a column (`wakeups`, from a low fixed-rate cell);
   * 3: the logging collector's CPU fitted apart, per wake-up and per line (`fit.cpu.collector`);
   * 2: the constrained fit at a reference state of the machine; 1: files before it. Versions 1
   * and 2 are read as before (one cost per line) if their values are physical.
   */
  version: 1 | 2 | 3 | 4 | 5;
  createdAt: string;
  host: string;
  environment: Environment;
  fit: CalibrationFit;
  points: CalibrationPoint[];
}

export interface BenchReport {
  schemaVersion: 1;
  tool: { name: "auditpipe"; version: string };
  /** The command that reproduces this report. */
  command: string;
  startedAt: string;
  finishedAt: string;
  /** False when interrupted (Ctrl-C, an error): the runs measured so far are still reported. */
  complete: boolean;
  interruption: string | null;
  target: {
    kind: "scratch" | "existing";
    /** What "none" means here: pgaudit not loaded (scratch), or loaded with nothing logged (existing). */
    baseline: "pgaudit-not-loaded" | "pgaudit-loaded-nothing-logged";
  };
  options: {
    scale: number;
    /** pgbench -i --foreign-keys (bench --quick); absent: without. */
    foreignKeys?: boolean;
    clients: number;
    jobs: number;
    durationSec: number;
    runs: number;
    warmupSec: number;
    seed: number;
    /** The log destinations measured, comma-separated (one before variants). */
    logDestination: string;
    /** Whether every variant had pgaudit.log_statement_once on. */
    logStatementOnce: boolean;
    logDirElsewhere: string | null;
    quick: boolean;
    /** Whether the scratch server ran with fsync, synchronous_commit and full_page_writes on (--durable). */
    durable: boolean;
    /** The file the syslog daemon writes PostgreSQL's messages to (--syslog-file), or null. */
    syslogFile: string | null;
  };
  environment: Environment;
  configurations: ConfigurationInfo[];
  workloads: WorkloadInfo[];
  /** The mitigation variants measured; [] in reports before variants. */
  variants: VariantInfo[];
  runs: RunResult[];
  cells: CellSummary[];
  calibration: CalibrationFit | null;
  notes: string[];
}
