/**
 * zod's issues in the CLI's words: what a setting expected, read from its schema's description
 * (zNumber below puts flags.ts's words there) or its type, never zod's defaults ("expected
 * number, received NaN" is written for programmers). run's settings (run/config.ts) use it.
 */
import { z } from "zod";
import { type Bounds, describeNumber } from "./flags.ts";

/**
 * A number given as digits (a flag, a variable) or a JSON number (the config file); only strings
 * are converted (z.coerce.number() took `true` for 1 and `[7]` for 7). Described in flags.ts's words.
 */
export function zNumber(integer: boolean, bounds: Bounds = {}): z.ZodType<number> {
  let n = integer ? z.number().int() : z.number();
  if (bounds.min !== undefined) n = n.min(bounds.min);
  if (bounds.max !== undefined) n = n.max(bounds.max);
  if (bounds.above !== undefined) n = n.gt(bounds.above);
  return z
    .preprocess((v) => (typeof v === "string" && v.trim() !== "" ? Number(v) : v), n)
    .describe(describeNumber(integer ? "a whole number" : "a number", bounds));
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
