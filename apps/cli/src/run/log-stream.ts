import { readdirSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import type { LogFormat } from "@auditpipe/parse";
import { UsageError } from "../usage-error.ts";

/** Preference when PostgreSQL writes several destinations: the richest format first. */
const PREFERENCE: LogFormat[] = ["csvlog", "jsonlog", "stderr"];
const EXTENSIONS: Record<string, LogFormat> = { ".csv": "csvlog", ".json": "jsonlog", ".log": "stderr" };

/**
 * The directory and format to follow: from `--pgdata` (its current_logfiles names the files
 * being written) or `--log-dir`, whose file names tell the format when `--format auto`. Under
 * `--pgdata` with `--format auto` the format is `auto`: every destination the server writes, now
 * and after a reload changes log_destination (FileSource's `auto`).
 */
export function resolveLogStream(options: {
  logDir?: string | undefined;
  pgdata?: string | undefined;
  format: LogFormat | "auto";
  /** Syslog is received too: a data directory without log files then only gives settings. */
  syslog?: boolean;
}): { logDir: string; format: LogFormat | "auto" } | undefined {
  if (options.pgdata) {
    let text: string;
    try {
      text = readFileSync(join(options.pgdata, "current_logfiles"), "utf8");
    } catch {
      if (options.syslog && !options.logDir) return undefined;
      throw new UsageError(
        `run: --pgdata ${options.pgdata}: no current_logfiles there (is logging_collector on, and is this a data directory?)`,
      );
    }
    const current = new Map<string, string>();
    for (const line of text.split("\n")) {
      const space = line.indexOf(" ");
      if (space > 0) current.set(line.slice(0, space), line.slice(space + 1));
    }
    const format = options.format === "auto" ? PREFERENCE.find((f) => current.has(f)) : options.format;
    const file = format ? current.get(format) : undefined;
    if (!format || !file) {
      throw new UsageError(
        `run: --pgdata ${options.pgdata}: PostgreSQL writes no ${options.format === "auto" ? "csvlog, jsonlog or stderr" : options.format} file (current_logfiles lists ${[...current.keys()].join(", ") || "nothing"})`,
      );
    }
    const path = isAbsolute(file) ? file : join(options.pgdata, file);
    return { logDir: options.logDir ?? dirname(path), format: options.format === "auto" ? "auto" : format };
  }
  if (!options.logDir) return undefined;
  if (options.format !== "auto") return { logDir: options.logDir, format: options.format };
  let names: string[];
  try {
    names = readdirSync(options.logDir);
  } catch {
    throw new UsageError(`run: --log-dir ${options.logDir}: cannot read the directory`);
  }
  const present = new Set(names.map((n) => EXTENSIONS[n.slice(n.lastIndexOf("."))]).filter(Boolean));
  const format = PREFERENCE.find((f) => present.has(f));
  if (!format) {
    throw new UsageError(
      `run: --log-dir ${options.logDir}: no .csv, .json or .log files to tell the format by; pass --format`,
    );
  }
  return { logDir: options.logDir, format };
}
