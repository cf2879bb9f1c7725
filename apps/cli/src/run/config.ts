import { readFileSync } from "node:fs";
import { z } from "zod";
import { UsageError } from "../usage-error.ts";

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
  pattern?: string | undefined;
  sink: string;
  state: string;
  listen: string;
  syslog: string[];
  from: "beginning" | "end";
  batchMaxEntries: number;
  batchMaxBytes: number;
  batchMaxAgeMs: number;
  pollIntervalMs: number;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  apiToken?: string | undefined;
}

export const RunConfigSchema: z.ZodType<RunConfig> = z
  .object({
    logDir: z.string().min(1).optional(),
    pgdata: z.string().min(1).optional(),
    format: z.enum(["auto", "csvlog", "jsonlog", "stderr", "syslog"]).default("auto"),
    prefix: z.string().optional(),
    pattern: z.string().min(1).optional(),
    sink: z.string().min(1).default("auditpipe-data/archive"),
    state: z.string().min(1).default("auditpipe-data/state"),
    listen: z.string().min(1).default("127.0.0.1:9187"),
    syslog: z.array(z.string().regex(/^(udp|tcp):\/\//, "a udp:// or tcp:// URL")).default([]),
    from: z.enum(["beginning", "end"]).default("beginning"),
    batchMaxEntries: z.coerce.number().int().positive().default(10_000),
    batchMaxBytes: z.coerce
      .number()
      .int()
      .positive()
      .default(8 << 20),
    batchMaxAgeMs: z.coerce.number().int().positive().default(1_000),
    pollIntervalMs: z.coerce.number().int().positive().default(200),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    apiToken: z.string().min(16, "at least 16 characters").optional(),
  })
  .strict();

type Key = keyof RunConfig;

/** Flag, environment variable and config key of every setting. */
export const SETTINGS: { key: Key; flag?: string; env: string; list?: boolean }[] = [
  { key: "logDir", flag: "log-dir", env: "AUDITPIPE_LOG_DIR" },
  { key: "pgdata", flag: "pgdata", env: "AUDITPIPE_PGDATA" },
  { key: "format", flag: "format", env: "AUDITPIPE_FORMAT" },
  { key: "prefix", flag: "prefix", env: "AUDITPIPE_PREFIX" },
  { key: "pattern", flag: "pattern", env: "AUDITPIPE_PATTERN" },
  { key: "sink", flag: "sink", env: "AUDITPIPE_SINK" },
  { key: "state", flag: "state", env: "AUDITPIPE_STATE" },
  { key: "listen", flag: "listen", env: "AUDITPIPE_LISTEN" },
  { key: "syslog", flag: "syslog", env: "AUDITPIPE_SYSLOG", list: true },
  { key: "from", flag: "from", env: "AUDITPIPE_FROM" },
  { key: "batchMaxEntries", flag: "batch-max-entries", env: "AUDITPIPE_BATCH_MAX_ENTRIES" },
  { key: "batchMaxBytes", flag: "batch-max-bytes", env: "AUDITPIPE_BATCH_MAX_BYTES" },
  { key: "batchMaxAgeMs", flag: "batch-max-age-ms", env: "AUDITPIPE_BATCH_MAX_AGE_MS" },
  { key: "pollIntervalMs", flag: "poll-interval-ms", env: "AUDITPIPE_POLL_INTERVAL_MS" },
  { key: "logLevel", flag: "log-level", env: "AUDITPIPE_LOG_LEVEL" },
  { key: "apiToken", env: "AUDITPIPE_API_TOKEN" },
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
      text = readFileSync(configPath, "utf8");
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
    merged[s.key] = s.list ? (Array.isArray(value) ? value : [String(value)]) : value;
    where[s.key] = `--${s.flag}`;
  }
  const result = RunConfigSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = String(issue.path[0] ?? "");
    const name =
      issue.code === "unrecognized_keys" ? `config key ${issue.keys.join(", ")}` : describeSource(key, where);
    const message =
      issue.code === "unrecognized_keys" ? "is not a setting auditpipe run knows" : issue.message;
    throw new UsageError(`run: ${name}: ${message}`);
  }
  const config = result.data;
  if (!config.logDir && !config.pgdata && config.syslog.length === 0) {
    throw new UsageError("run: nothing to follow: give --log-dir DIR, --pgdata DIR or --syslog URL");
  }
  return config;
}
