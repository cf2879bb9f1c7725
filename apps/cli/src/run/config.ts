import { readFileSync } from "node:fs";
import { sessionClasses } from "@auditpipe/parse";
import { z } from "zod";
import { CliErrorCode } from "../errors.ts";
import { badValue } from "../flags.ts";
import { checkListenSetting } from "../listen-setting.ts";
import { UsageError } from "../usage-error.ts";
import { defaultOf, describeIssue, zNumber } from "../zod-issues.ts";

/**
 * `auditpipe run`'s settings. Each can come from a flag, an environment variable or a JSON
 * config file (`--config`), in that order of precedence. The API token has no flag: a secret on
 * the command line shows in `ps`.
 */
export interface RunConfig {
  logDir?: string | undefined;
  pgdata?: string | undefined;
  format: "auto" | "csvlog" | "jsonlog" | "stderr" | "syslog";
  prefix?: string | undefined;
  /**
   * The server's pgaudit.log, when every session runs with it: with misc (or all) in it every
   * session's transaction control is known to be logged (outcome stage). Absent: inferred.
   */
  pgauditLog?: string | undefined;
  pattern?: string | undefined;
  sink: string;
  state: string;
  listen: string;
  syslog: string[];
  /** Bytes the syslog journal may hold; at it, TCP is not read and UDP is dropped. */
  syslogJournalMaxBytes: number;
  /** A syslog TCP connection silent this long is closed (0: never). */
  syslogTcpIdleTimeoutMs: number;
  from: "beginning" | "end";
  batchMaxEntries: number;
  batchMaxBytes: number;
  batchMaxAgeMs: number;
  pollIntervalMs: number;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  apiToken?: string | undefined;
  s3Endpoint?: string | undefined;
  s3Region?: string | undefined;
  s3ForcePathStyle: boolean;
  host?: string | undefined;
  spool?: string | undefined;
  spoolMaxBytes: number;
  compression: "gzip" | "zstd";
  objectLockMode?: "GOVERNANCE" | "COMPLIANCE" | undefined;
  objectLockDays: number;
  /** Ed25519 key (PEM) that signs the manifests; absent: <state>/manifests/manifest-key.pem, created. */
  manifestKey?: string | undefined;
  /** How often the sidecar compares its open hours' objects in the bucket with its journal (0: never). */
  selfCheckMs: number;
  /** How often the sidecar compacts (child) or adopts (adopt) its closed host-hours' Parquet files (0: never; S3 sinks). */
  compactMs: number;
  /**
   * Who compacts (S3 sinks): `adopt` (default), `auditpipe compact` run off the database host, whose
   * records the sidecar journals; `child`, a child process of the sidecar; `off`, nobody it knows of.
   */
  compaction: "child" | "adopt" | "off";
  redact: ("literals" | "parameters")[];
  db?: string | undefined;
  sampleIntervalMs: number;
  /** A calibration file from `auditpipe bench --calibration-out`, for the estimate routes' overhead ranges. */
  calibration?: string | undefined;
  /** CPU priority (nice value, -20..19); absent: at least DEFAULT_NICE (run/priority.ts). */
  nice?: number | undefined;
  /** Where `listen` came from (`--listen`, `AUDITPIPE_LISTEN`, a config key), for errors. */
  listenSetting: string;
  /** Where `calibration` came from, for errors naming it (default `--calibration`). */
  calibrationSetting?: string | undefined;
}

/** What the schema yields: batchMaxAgeMs is filled in afterwards, from the sink. */
type ParsedRunConfig = Omit<RunConfig, "batchMaxAgeMs" | "listenSetting" | "calibrationSetting"> & {
  batchMaxAgeMs?: number | undefined;
};

/** Segments are a sixteenth of the journal, at least 256 KiB: a smaller journal holds too few. */
const MIN_SYSLOG_JOURNAL_BYTES = 1 << 20;

/**
 * A batch closes at this many entries (or `batchMaxBytes` of log, or its age): the sidecar's CPU
 * per entry falls with fewer, larger batches (each costs the S3 path ~10 ms of CPU: its spool
 * file, journal line, PUT and checkpoint). Its memory sets the limit: a batch's NDJSON lives until
 * the sink has compressed it, and at 20,000 entries the sidecar stays under ~200 MB of RSS
 * (docs/benchmarks.md, the pipeline notes of issue 24).
 */
export const RUN_BATCH_MAX_ENTRIES = 20_000;

export const RunConfigSchema: z.ZodType<ParsedRunConfig> = z
  .object({
    logDir: z.string().min(1).optional(),
    pgdata: z.string().min(1).optional(),
    format: z.enum(["auto", "csvlog", "jsonlog", "stderr", "syslog"]).default("auto"),
    prefix: z.string().optional(),
    pgauditLog: z
      .string()
      .refine(
        (v) => {
          try {
            sessionClasses(v);
            return true;
          } catch {
            return false;
          }
        },
        {
          message:
            "expected a pgaudit.log value: classes from read, write, function, role, ddl, misc, misc_set, all, none (- removes one)",
        },
      )
      .optional(),
    pattern: z.string().min(1).optional(),
    sink: z.string().min(1).default("auditpipe-data/archive"),
    state: z.string().min(1).default("auditpipe-data/state"),
    listen: z.string().min(1).default("127.0.0.1:9187"),
    syslog: z.array(z.string().regex(/^(udp|tcp):\/\//, "a udp:// or tcp:// URL")).default([]),
    syslogJournalMaxBytes: zNumber(true, {
      min: MIN_SYSLOG_JOURNAL_BYTES,
      unit: "bytes, 1 MiB or more",
    }).default(1 << 30),
    syslogTcpIdleTimeoutMs: zNumber(true, { min: 0, unit: "milliseconds; 0 for never, else 1000 or more" })
      .refine((n) => n === 0 || n >= 1000, "0 (never) or at least 1000")
      .default(300_000),
    from: z.enum(["beginning", "end"]).default("beginning"),
    batchMaxEntries: zNumber(true, { min: 1 }).default(RUN_BATCH_MAX_ENTRIES),
    batchMaxBytes: zNumber(true, { min: 1, unit: "bytes" }).default(8 << 20),
    // Default depends on the sink (see resolveRunConfig): a batch is an object in S3.
    batchMaxAgeMs: zNumber(true, { min: 1, unit: "milliseconds" }).optional(),
    pollIntervalMs: zNumber(true, { min: 1, unit: "milliseconds" }).default(200),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    apiToken: z.string().min(16, "at least 16 characters").optional(),
    s3Endpoint: z.url({ protocol: /^https?$/, error: "an http:// or https:// URL" }).optional(),
    s3Region: z.string().min(1).optional(),
    s3ForcePathStyle: z
      .union([z.boolean(), z.enum(["true", "false", "1", "0"])])
      .describe("true, false, 1 or 0")
      .transform((v) => v === true || v === "true" || v === "1")
      .default(false),
    host: z.string().min(1).optional(),
    spool: z.string().min(1).optional(),
    spoolMaxBytes: zNumber(true, { min: 1, unit: "bytes" }).default(1 << 30),
    compression: z.enum(["gzip", "zstd"]).default("zstd"),
    objectLockMode: z.enum(["GOVERNANCE", "COMPLIANCE"]).optional(),
    objectLockDays: zNumber(true, { min: 1, unit: "days" }).default(365),
    manifestKey: z.string().min(1).optional(),
    selfCheckMs: zNumber(true, { min: 0, unit: "milliseconds; 0 never" }).default(60_000),
    compactMs: zNumber(true, { min: 0, unit: "milliseconds; 0 never" }).default(600_000),
    compaction: z.enum(["child", "adopt", "off"]).default("adopt"),
    redact: z.array(z.enum(["literals", "parameters"])).default([]),
    db: z.string().min(1).optional(),
    sampleIntervalMs: zNumber(true, { min: 1000, unit: "milliseconds" }).default(60_000),
    calibration: z.string().min(1).optional(),
    nice: zNumber(true, { min: -20, max: 19 }).optional(),
  })
  .strict();

type Key = keyof RunConfig;

/**
 * A batch closes after this long when the sink is a local directory: the archive follows the log
 * within a second. An S3 batch is an object (a PUT, a spool file, a manifest line): a minute, so a
 * moderately loaded database writes about one object a minute (or one per 20,000 entries).
 */
export const LOCAL_BATCH_MAX_AGE_MS = 1_000;
export const S3_BATCH_MAX_AGE_MS = 60_000;

function defaultBatchMaxAgeMs(sink: string): number {
  return sink.startsWith("s3://") ? S3_BATCH_MAX_AGE_MS : LOCAL_BATCH_MAX_AGE_MS;
}

/** Flag, environment variable and config key of every setting. */
export const SETTINGS: { key: Key; flag?: string; env: string; list?: boolean; boolean?: boolean }[] = [
  { key: "logDir", flag: "log-dir", env: "AUDITPIPE_LOG_DIR" },
  { key: "pgdata", flag: "pgdata", env: "AUDITPIPE_PGDATA" },
  { key: "format", flag: "format", env: "AUDITPIPE_FORMAT" },
  { key: "prefix", flag: "prefix", env: "AUDITPIPE_PREFIX" },
  { key: "pgauditLog", flag: "pgaudit-log", env: "AUDITPIPE_PGAUDIT_LOG" },
  { key: "pattern", flag: "pattern", env: "AUDITPIPE_PATTERN" },
  { key: "sink", flag: "sink", env: "AUDITPIPE_SINK" },
  { key: "state", flag: "state", env: "AUDITPIPE_STATE" },
  { key: "listen", flag: "listen", env: "AUDITPIPE_LISTEN" },
  { key: "syslog", flag: "syslog", env: "AUDITPIPE_SYSLOG", list: true },
  {
    key: "syslogJournalMaxBytes",
    flag: "syslog-journal-max-bytes",
    env: "AUDITPIPE_SYSLOG_JOURNAL_MAX_BYTES",
  },
  {
    key: "syslogTcpIdleTimeoutMs",
    flag: "syslog-tcp-idle-timeout-ms",
    env: "AUDITPIPE_SYSLOG_TCP_IDLE_TIMEOUT_MS",
  },
  { key: "from", flag: "from", env: "AUDITPIPE_FROM" },
  { key: "batchMaxEntries", flag: "batch-max-entries", env: "AUDITPIPE_BATCH_MAX_ENTRIES" },
  { key: "batchMaxBytes", flag: "batch-max-bytes", env: "AUDITPIPE_BATCH_MAX_BYTES" },
  { key: "batchMaxAgeMs", flag: "batch-max-age-ms", env: "AUDITPIPE_BATCH_MAX_AGE_MS" },
  { key: "pollIntervalMs", flag: "poll-interval-ms", env: "AUDITPIPE_POLL_INTERVAL_MS" },
  { key: "logLevel", flag: "log-level", env: "AUDITPIPE_LOG_LEVEL" },
  { key: "apiToken", env: "AUDITPIPE_API_TOKEN" },
  { key: "s3Endpoint", flag: "s3-endpoint", env: "AUDITPIPE_S3_ENDPOINT" },
  { key: "s3Region", flag: "s3-region", env: "AUDITPIPE_S3_REGION" },
  {
    key: "s3ForcePathStyle",
    flag: "s3-force-path-style",
    env: "AUDITPIPE_S3_FORCE_PATH_STYLE",
    boolean: true,
  },
  { key: "host", flag: "host", env: "AUDITPIPE_HOST" },
  { key: "spool", flag: "spool", env: "AUDITPIPE_SPOOL" },
  { key: "spoolMaxBytes", flag: "spool-max-bytes", env: "AUDITPIPE_SPOOL_MAX_BYTES" },
  { key: "compression", flag: "compression", env: "AUDITPIPE_COMPRESSION" },
  { key: "objectLockMode", flag: "object-lock-mode", env: "AUDITPIPE_OBJECT_LOCK_MODE" },
  { key: "objectLockDays", flag: "object-lock-days", env: "AUDITPIPE_OBJECT_LOCK_DAYS" },
  { key: "manifestKey", flag: "manifest-key", env: "AUDITPIPE_MANIFEST_KEY" },
  { key: "selfCheckMs", flag: "self-check-ms", env: "AUDITPIPE_SELF_CHECK_MS" },
  { key: "compactMs", flag: "compact-ms", env: "AUDITPIPE_COMPACT_MS" },
  { key: "compaction", flag: "compaction", env: "AUDITPIPE_COMPACTION" },
  { key: "redact", flag: "redact", env: "AUDITPIPE_REDACT", list: true },
  { key: "db", flag: "db", env: "AUDITPIPE_DB" },
  { key: "sampleIntervalMs", flag: "sample-interval-ms", env: "AUDITPIPE_SAMPLE_INTERVAL_MS" },
  { key: "calibration", flag: "calibration", env: "AUDITPIPE_CALIBRATION" },
  { key: "nice", flag: "nice", env: "AUDITPIPE_NICE" },
];

function describeSource(key: string, where: Record<string, string>): string {
  return where[key] ?? key;
}

/**
 * Merges flags over environment over the config file and validates the result; a bad value
 * is a UsageError naming the flag (or variable, or config key) and what was expected.
 */
export function resolveRunConfig(
  flags: Record<string, string | boolean | string[] | undefined>,
  env: NodeJS.ProcessEnv,
): RunConfig {
  const merged: Record<string, unknown> = {};
  const where: Record<string, string> = {};
  const configPath = (flags.config as string | undefined) ?? env.AUDITPIPE_CONFIG;
  if (configPath) {
    let text: string;
    try {
      // A UTF-8 byte order mark (Windows editors write one) is not part of the JSON.
      text = readFileSync(configPath, "utf8").replace(/^\uFEFF/, "");
    } catch {
      throw new UsageError(`run: --config ${configPath}: cannot read the file`);
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new UsageError(`run: --config ${configPath}: not valid JSON`);
    }
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new UsageError(`run: --config ${configPath}: expected a JSON object of settings`);
    }
    for (const [key, value] of Object.entries(data)) {
      merged[key] = value;
      where[key] = `config key ${key} (${configPath})`;
    }
  }
  for (const s of SETTINGS) {
    const value = env[s.env];
    if (value === undefined || value === "") continue;
    merged[s.key] = s.list
      ? value
          .split(",")
          .map((v) => v.trim())
          .filter(Boolean)
      : value;
    where[s.key] = s.env;
  }
  for (const s of SETTINGS) {
    if (!s.flag) continue;
    const value = flags[s.flag];
    if (value === undefined) continue;
    merged[s.key] = s.list
      ? (Array.isArray(value) ? value : [String(value)]).flatMap((v) => v.split(",").map((x) => x.trim()))
      : value;
    where[s.key] = `--${s.flag}`;
  }
  const result = RunConfigSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    if (issue.code === "unrecognized_keys")
      throw new UsageError(
        `run: config key ${issue.keys.join(", ")} is not a setting auditpipe run knows (docs/configuration.md lists them)`,
        CliErrorCode.BAD_FLAG,
      );
    const key = String(issue.path[0] ?? "");
    const schema = (RunConfigSchema as unknown as z.ZodObject).shape[key] as z.ZodType | undefined;
    const raw = issue.path.length > 1 ? (merged[key] as unknown[])[Number(issue.path[1])] : merged[key];
    throw badValue("run", describeSource(key, where), raw, describeIssue(issue, schema), {
      default: schema ? defaultOf(schema) : undefined,
      secret: key === "apiToken",
      help: "auditpipe run --help; docs/configuration.md",
    });
  }
  const config: RunConfig = {
    ...result.data,
    batchMaxAgeMs: result.data.batchMaxAgeMs ?? defaultBatchMaxAgeMs(result.data.sink),
    listenSetting: where.listen ?? "--listen",
    calibrationSetting: where.calibration ?? "--calibration",
  };
  checkListenSetting("run", config.listen, config.listenSetting, config.apiToken !== undefined);
  if (!config.logDir && !config.pgdata && config.syslog.length === 0) {
    throw new UsageError("run: nothing to follow: give --log-dir DIR, --pgdata DIR or --syslog URL");
  }
  return config;
}
