import { showSetting } from "@auditpipe/estimate";
import type { Logger } from "pino";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";
import { PgdataSettingError, readPgdataSetting } from "./pgdata-settings.ts";

/** PostgreSQL's built-in log_line_prefix (10 and later), in effect when no file sets one. */
export const DEFAULT_LOG_LINE_PREFIX = "%m [%p] ";

/**
 * The log_line_prefix to read stderr or syslog lines with. A wrong prefix archives wrong users
 * and databases, so it is never guessed: `--prefix` as given, else the running server's (SHOW over
 * `--db`), else the data directory's configuration (`--pgdata`); otherwise the start is refused.
 * `reader` says what needs it ("the stderr log", "syslog"); undefined when nothing does.
 */
export async function resolveLogLinePrefix(
  config: Pick<RunConfig, "prefix" | "db" | "pgdata">,
  reader: string | undefined,
  logger: Logger,
): Promise<string | undefined> {
  if (reader === undefined || config.prefix !== undefined) return config.prefix;
  if (config.db) {
    try {
      const prefix = await showSetting(config.db, "log_line_prefix");
      logger.info({ prefix, from: "--db (SHOW log_line_prefix)" }, "log_line_prefix learned from the server");
      return prefix;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (!config.pgdata)
        throw new Error(
          `run: --db: ${reason}; ${reader} needs the server's log_line_prefix: fix --db or give --prefix`,
        );
      logger.warn({ reason }, "cannot ask the server for log_line_prefix; reading it from --pgdata instead");
    }
  }
  if (config.pgdata) {
    try {
      const { value, from } = readPgdataSetting(config.pgdata, "log_line_prefix", DEFAULT_LOG_LINE_PREFIX);
      logger.info({ prefix: value, from }, "log_line_prefix learned from the data directory's configuration");
      return value;
    } catch (error) {
      if (!(error instanceof PgdataSettingError)) throw error;
      throw new Error(
        `run: --pgdata ${config.pgdata}: cannot learn log_line_prefix: ${error.message}; give --db URL or --prefix`,
      );
    }
  }
  throw new UsageError(
    `run: ${reader} needs the server's log_line_prefix, and auditpipe never ships on a guess: give --pgdata DIR (read from postgresql.conf, its includes and postgresql.auto.conf) or --db URL (SHOW log_line_prefix), or --prefix with the value SHOW log_line_prefix prints`,
  );
}
