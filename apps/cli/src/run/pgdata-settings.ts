import { readdirSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { type ConfItem, parseConfText, parsePostmasterOpts } from "./pg-conf.ts";

/** PostgreSQL stops following includes this deep (guc-file.l: "nesting depth exceeded"). */
const MAX_INCLUDE_DEPTH = 10;

export interface LearnedSetting {
  value: string;
  /** Where the value was read: `postgresql.auto.conf`, `conf.d/10-logging.conf:3`, ... */
  from: string;
}

export class PgdataSettingError extends Error {
  override name = "PgdataSettingError";
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return undefined;
    throw new PgdataSettingError(
      `cannot read ${path} (${(error as { code?: string }).code ?? String(error)})`,
    );
  }
}

/**
 * A setting as the server in `pgdata` reads it, in PostgreSQL's order (last one wins): the
 * configuration file (postgresql.conf, or the `config_file` given on the command line) with its
 * `include`, `include_if_exists` and `include_dir` directives, then postgresql.auto.conf (ALTER
 * SYSTEM), then the command line recorded in postmaster.opts. `fallback` (the built-in default)
 * when none sets it. Throws PgdataSettingError when the configuration cannot be read.
 */
export function readPgdataSetting(pgdata: string, name: string, fallback: string): LearnedSetting {
  const commandLine = parsePostmasterOpts(readText(join(pgdata, "postmaster.opts")) ?? "");
  const configFile = commandLine.get("config_file") ?? join(pgdata, "postgresql.conf");
  let found: LearnedSetting | undefined;
  const label = (path: string): string =>
    path.startsWith(`${pgdata}/`) ? path.slice(pgdata.length + 1) : path;

  const walk = (file: string, depth: number, required: boolean): void => {
    if (depth > MAX_INCLUDE_DEPTH)
      throw new PgdataSettingError(`${file}: includes nested more than ${MAX_INCLUDE_DEPTH} deep`);
    const text = readText(file);
    if (text === undefined) {
      if (required) throw new PgdataSettingError(`${file} does not exist`);
      return;
    }
    for (const item of parseConfText(text)) visit(file, item, depth);
  };
  const visit = (file: string, item: ConfItem, depth: number): void => {
    if (item.kind === "setting") {
      if (item.name === name) found = { value: item.value, from: `${label(file)}:${item.line}` };
      return;
    }
    const path = isAbsolute(item.path) ? item.path : join(dirname(file), item.path);
    if (item.kind !== "include_dir") {
      walk(path, depth + 1, item.kind === "include");
      return;
    }
    let names: string[];
    try {
      names = readdirSync(path);
    } catch (error) {
      throw new PgdataSettingError(
        `include_dir ${path} (${label(file)}:${item.line}): cannot read it (${(error as { code?: string }).code})`,
      );
    }
    // guc-file.l: only *.conf, never hidden files, in strcmp order.
    for (const entry of names.filter((n) => n.endsWith(".conf") && !n.startsWith(".")).sort())
      walk(join(path, entry), depth + 1, true);
  };

  walk(configFile, 0, true);
  walk(join(pgdata, "postgresql.auto.conf"), 0, false);
  const given = commandLine.get(name);
  if (given !== undefined) found = { value: given, from: "the postmaster's command line (postmaster.opts)" };
  return (
    found ?? {
      value: fallback,
      from: `PostgreSQL's default (not set in ${label(configFile)} or postgresql.auto.conf)`,
    }
  );
}
