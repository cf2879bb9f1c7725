/**
 * Every command's flags as one table: what parseArgs accepts, what each value must be (a zod
 * schema), and the lines of `--help`, so the three cannot drift apart. A bad value, from a flag,
 * an environment variable or a config key, is described here and only here: the message names
 * where it came from, what was expected and what to do, with AUDITPIPE_ERR_BAD_FLAG.
 */
import { z } from "zod";
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
  schema?: z.ZodType;
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
    if (!flag.schema || given === undefined) continue;
    for (const raw of Array.isArray(given) ? given : [given]) {
      const result = flag.schema.safeParse(raw);
      if (!result.success)
        throw badValue(spec.command, `--${name}`, raw, describeIssue(result.error.issues[0]!, flag.schema), {
          default: typeof flag.default === "string" ? flag.default : undefined,
        });
    }
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

/** A flag's value checked against a schema (a number, a choice): the value, or badValue's error. */
export function flagValue<T>(
  command: string,
  flag: string,
  raw: unknown,
  schema: z.ZodType<T>,
  options: { default?: string } = {},
): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  throw badValue(command, `--${flag}`, raw, describeIssue(result.error.issues[0]!, schema), options);
}

// --- value schemas that carry what they expect, in words --------------------------------------

/** A number given as digits (flag, variable) or a JSON number (config file); nothing else converts. */
function fromDigits(schema: z.ZodNumber): z.ZodType<number> {
  return z.preprocess((v) => (typeof v === "string" && v.trim() !== "" ? Number(v) : v), schema);
}

function range(min: number | undefined, max: number | undefined, above: number | undefined): string {
  if (above !== undefined) return ` above ${above}`;
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return "";
}

/** A whole number, e.g. `wholeNumber({ min: 1 })`; its description is what errors say was expected. */
export function wholeNumber(
  bounds: { min?: number; max?: number; above?: number; unit?: string } = {},
): z.ZodType<number> {
  let n = z.number().int();
  if (bounds.min !== undefined) n = n.min(bounds.min);
  if (bounds.max !== undefined) n = n.max(bounds.max);
  if (bounds.above !== undefined) n = n.gt(bounds.above);
  const unit = bounds.unit ? ` (${bounds.unit})` : "";
  return fromDigits(n).describe(`a whole number${range(bounds.min, bounds.max, bounds.above)}${unit}`);
}

/** Any number (decimals allowed), e.g. a price or a ratio. */
export function decimal(
  bounds: { min?: number; max?: number; above?: number; unit?: string } = {},
): z.ZodType<number> {
  let n = z.number().finite();
  if (bounds.min !== undefined) n = n.min(bounds.min);
  if (bounds.max !== undefined) n = n.max(bounds.max);
  if (bounds.above !== undefined) n = n.gt(bounds.above);
  const unit = bounds.unit ? ` (${bounds.unit})` : "";
  return fromDigits(n).describe(`a number${range(bounds.min, bounds.max, bounds.above)}${unit}`);
}

/** One of a few words. */
export function choice<const V extends readonly [string, ...string[]]>(values: V): z.ZodType<V[number]> {
  return z.enum(values).describe(`one of ${values.join(", ")}`);
}

/** A schema's default as a user would type it (`10000`, `auto`), if it has a single-valued one. */
export function defaultOf(schema: z.ZodType): string | undefined {
  const def = schema._zod.def as { type: string; defaultValue?: unknown };
  if (def.type !== "default") return undefined;
  const value = def.defaultValue;
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : undefined;
}

/** What a schema takes, in words: its description, else what its type says. */
export function expectation(schema: z.ZodType): string | undefined {
  let s: z.ZodType = schema;
  for (;;) {
    if (s.description) return s.description;
    const def = s._zod.def as { type: string; innerType?: z.ZodType; out?: z.ZodType; element?: z.ZodType };
    if ((def.type === "default" || def.type === "optional" || def.type === "nullable") && def.innerType)
      s = def.innerType;
    else if (def.type === "pipe" && def.out) s = def.out;
    else if (def.type === "array" && def.element) s = def.element;
    else break;
  }
  if (s instanceof z.ZodEnum) return `one of ${(s.options as string[]).join(", ")}`;
  if (s instanceof z.ZodNumber) return s.isInt ? "a whole number" : "a number";
  return undefined;
}

/**
 * What was expected, from a zod issue: the schema's own words when it has them, a custom message
 * next, else the issue's code in words (zod's defaults, "expected number, received NaN", are
 * written for programmers).
 */
export function describeIssue(issue: z.core.$ZodIssue, schema?: z.ZodType): string {
  const custom = !/^(Invalid input|Invalid option|Too (small|big)|Invalid (URL|string|number))/.test(
    issue.message,
  );
  if (custom) return issue.message;
  const described = schema ? expectation(schema) : undefined;
  if (described) return described;
  switch (issue.code) {
    case "invalid_type":
      return issue.expected === "int" ? "a whole number" : `a ${issue.expected}`;
    case "invalid_value":
      return `one of ${issue.values.map(String).join(", ")}`;
    case "too_small":
      return issue.origin === "string"
        ? `at least ${issue.minimum} characters`
        : `a number ${issue.inclusive ? "of at least" : "above"} ${issue.minimum}`;
    case "too_big":
      return issue.origin === "string"
        ? `at most ${issue.maximum} characters`
        : `a number ${issue.inclusive ? "of at most" : "below"} ${issue.maximum}`;
    case "invalid_format":
      return issue.format === "url" ? "a URL" : `a value in the ${issue.format} format`;
    default:
      return issue.message;
  }
}
