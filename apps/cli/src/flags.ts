/**
 * Every command's flags as one table: what parseArgs accepts, what each value must be (a zod
 * schema), and the lines of `--help`, so the three cannot drift apart. A bad value, from a flag,
 * an environment variable or a config key, is described here and only here: the message names
 * where it came from, what was expected and what to do, with AUDITPIPE_ERR_BAD_FLAG.
 */
import { parseFlags } from "./args.ts";
import { CliErrorCode } from "./errors.ts";
import { UsageError } from "./usage-error.ts";

/** One row of a command's flag table. */
export interface Flag {
  /** `row`: a line of help only (e.g. "(none)" for the default workload), not a flag. */
  type: "string" | "boolean" | "row";
  /** The value's name in help: FILE, N, URL. */
  value?: string;
  /** The help text; a `\n` starts a continuation line. */
  help: string;
  multiple?: boolean;
  short?: string;
  default?: string | boolean;
  /** What each value must be; checked before the command runs. */
  check?: FlagCheck<unknown>;
  /** A line (or a blank line, "") printed before this row: groups in long tables. */
  before?: string;
}

export type FlagTable = Record<string, Flag>;

export interface CommandSpec<T extends FlagTable = FlagTable> {
  command: string;
  /** The usage line(s), after `Usage: `; docs/cli.md's heading for the command is this line. */
  usage: string;
  /** What the command does: the paragraphs between the usage and the flags. */
  about: string;
  flags: T;
  /** Paragraphs after the flags: exit codes, where secrets come from. */
  notes?: string;
}

/** The help flag every command takes, last in every table. */
const HELP_FLAG: Flag = { type: "boolean", short: "h", help: "this text" };
/** Flags whose label is longer than this put their help on the next line. */
const MAX_LABEL = 24;

function label(name: string, flag: Flag): string {
  if (flag.type === "row") return name;
  const long = `--${name}${flag.value ? ` ${flag.value}` : ""}`;
  return flag.short ? `-${flag.short}, ${long}` : long;
}

/** `--help`: usage, what the command does, the flag table, then the notes. */
export function helpText(spec: CommandSpec): string {
  const rows = [...Object.entries(spec.flags), ["help", HELP_FLAG] as const];
  const width = Math.min(MAX_LABEL, Math.max(...rows.map(([name, flag]) => label(name, flag).length))) + 2;
  const lines: string[] = [`Usage: ${spec.usage}`, "", spec.about.trimEnd(), ""];
  for (const [name, flag] of rows) {
    if (flag.before !== undefined) lines.push(flag.before);
    const [first = "", ...more] = flag.help.split("\n");
    const head = `  ${label(name, flag)}`;
    if (head.length - 2 > MAX_LABEL) lines.push(head, `  ${" ".repeat(width)}${first}`);
    else lines.push(`${head.padEnd(width + 2)}${first}`);
    for (const line of more) lines.push(`  ${" ".repeat(width)}${line}`);
  }
  if (spec.notes) lines.push("", spec.notes.trimEnd());
  return `${lines.join("\n")}\n`;
}

/**
 * Parses argv against the table (parseArgs, strict), then checks every value that has a schema;
 * a bad one is a UsageError naming the flag, the value, what was expected and the default.
 */
export function parseCommand<T extends FlagTable>(
  spec: CommandSpec<T>,
  argv: string[],
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  const options: Record<
    string,
    { type: "string" | "boolean"; multiple?: boolean; short?: string; default?: string | boolean }
  > = {};
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (flag.type === "row") continue;
    options[name] = {
      type: flag.type,
      ...(flag.multiple ? { multiple: true } : {}),
      ...(flag.short ? { short: flag.short } : {}),
      ...(flag.default !== undefined ? { default: flag.default } : {}),
    };
  }
  options.help = { type: "boolean", short: "h", default: false };
  const parsed = parseFlags(spec.command, argv, options);
  if (parsed.values.help) return parsed;
  for (const [name, flag] of Object.entries(spec.flags)) {
    const given = parsed.values[name];
    if (!flag.check || given === undefined) continue;
    for (const raw of Array.isArray(given) ? given : [given])
      if (flag.check.parse(raw) === undefined)
        throw badValue(spec.command, `--${name}`, raw, flag.check.expected, {
          default: typeof flag.default === "string" ? flag.default : undefined,
        });
  }
  return parsed;
}

/**
 * The one message for a value a command cannot take: where it came from (`--flag`, a variable, a
 * config key), the value, what was expected, and what to do.
 */
export function badValue(
  command: string,
  where: string,
  raw: unknown,
  expected: string,
  options: { default?: string | undefined; help?: string; secret?: boolean } = {},
): UsageError {
  // A secret (the API token) is never echoed: messages reach terminals, logs and CI output.
  const shown = options.secret ? "(value hidden)" : JSON.stringify(raw ?? null);
  const fallback =
    options.default === undefined ? "" : `, or leave it out for the default ${options.default}`;
  return new UsageError(
    `${command}: ${where} ${shown}: expected ${expected}; give such a value${fallback} (see ${options.help ?? `auditpipe ${command} --help`})`,
    CliErrorCode.BAD_FLAG,
  );
}

/** A flag's value checked (a number, a choice): the value, or badValue's error. */
export function flagValue<T>(
  command: string,
  flag: string,
  raw: unknown,
  check: FlagCheck<T>,
  options: { default?: string } = {},
): T {
  const value = check.parse(raw);
  if (value !== undefined) return value;
  throw badValue(command, `--${flag}`, raw, check.expected, options);
}

// --- value checks that carry what they expect, in words -------------------------------------
// Plain functions, not zod: analyze must start without loading zod (about 100 ms of CPU);
// run's settings schema (zod) words its issues through zod-issues.ts, in the same words.

/** What a flag's value must be: `parse` gives the value, or undefined when it is not one. */
export interface FlagCheck<T> {
  /** In words, after "expected": "a whole number of at least 1". */
  readonly expected: string;
  parse(raw: unknown): T | undefined;
}

/** A number from digits (a flag, a variable) or a JSON number (a config file); nothing else. */
function toNumber(raw: unknown): number | undefined {
  if (typeof raw === "number") return raw;
  if (typeof raw === "string" && raw.trim() !== "") return Number(raw);
  return undefined;
}

export interface Bounds {
  min?: number;
  max?: number;
  above?: number;
  /** Said after the expectation, in parentheses: "milliseconds". */
  unit?: string;
}

/** "a whole number of at least 1 (milliseconds)": the words of a bounded number. */
export function describeNumber(kind: string, bounds: Bounds): string {
  const { min, max, above, unit } = bounds;
  const range =
    above !== undefined
      ? ` above ${above}`
      : min !== undefined && max !== undefined
        ? ` from ${min} to ${max}`
        : min !== undefined
          ? ` of at least ${min}`
          : max !== undefined
            ? ` of at most ${max}`
            : "";
  return `${kind}${range}${unit ? ` (${unit})` : ""}`;
}

function numberCheck(integer: boolean, bounds: Bounds): FlagCheck<number> {
  return {
    expected: describeNumber(integer ? "a whole number" : "a number", bounds),
    parse(raw) {
      const n = toNumber(raw);
      if (n === undefined || !Number.isFinite(n) || (integer && !Number.isInteger(n))) return undefined;
      if (bounds.min !== undefined && n < bounds.min) return undefined;
      if (bounds.max !== undefined && n > bounds.max) return undefined;
      if (bounds.above !== undefined && !(n > bounds.above)) return undefined;
      return n;
    },
  };
}

/** A whole number, e.g. `wholeNumber({ min: 1 })`. */
export function wholeNumber(bounds: Bounds = {}): FlagCheck<number> {
  return numberCheck(true, bounds);
}

/** Any number (decimals allowed), e.g. a price or a ratio. */
export function decimal(bounds: Bounds = {}): FlagCheck<number> {
  return numberCheck(false, bounds);
}

/** One of a few words. */
export function choice<const V extends readonly string[]>(values: V): FlagCheck<V[number]> {
  return {
    expected: `one of ${values.join(", ")}`,
    parse: (raw) => (typeof raw === "string" && values.includes(raw) ? (raw as V[number]) : undefined),
  };
}
