import { type ParseArgsConfig, parseArgs } from "node:util";
import { badValue } from "./flags.ts";
import { UsageError } from "./usage-error.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * node:util parseArgs, with its errors turned into UsageErrors that name the flag and what was
 * expected (its own messages are written for programmers).
 */
export function parseFlags<T extends Options>(
  command: string,
  argv: string[],
  options: T,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | string[] | undefined>, positionals };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const flag = /'(-{1,2}[^' ,]+)/.exec(message)?.[1];
    if (/Unknown option/.test(message))
      throw new UsageError(`${command}: unknown flag ${flag ?? ""} (see auditpipe ${command} --help)`);
    if (/argument missing/.test(message))
      throw new UsageError(`${command}: ${flag ?? "a flag"} needs a value`);
    if (/does not take an argument/.test(message))
      throw new UsageError(`${command}: ${flag ?? "a flag"} takes no value`);
    throw new UsageError(`${command}: ${message}`);
  }
}

/** One of `allowed`, or a UsageError naming the flag and the choices (flags.ts words it). */
export function oneOf<const A extends readonly string[]>(
  command: string,
  flag: string,
  value: string,
  allowed: A,
): A[number] {
  if ((allowed as readonly string[]).includes(value)) return value as A[number];
  throw badValue(command, `--${flag}`, value, `one of ${allowed.join(", ")}`);
}
