/**
 * Every command's flags: a bad number or choice is refused with exit 2 by one message (flags.ts)
 * that names the flag and the value, says what was expected and what to do, and carries
 * AUDITPIPE_ERR_BAD_FLAG; and every command's --help keeps its flags in one block (no paragraph
 * between two flags).
 */

import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { RunConfigSchema, SETTINGS } from "../src/run/config.ts";
import { expectation } from "../src/zod-issues.ts";
import { runCli } from "./_cli.ts";

/** [command, flag, a value it cannot take, other arguments the command needs to get that far]. */
const CASES: [string, string, string, string[]][] = [
  ["analyze", "format", "xml", ["x.csv"]],
  ["advise", "format", "xml", ["x.csv"]],
  ["advise", "top", "ten", ["x.csv"]],
  ["demo", "tps", "fast", []],
  ["demo", "duration", "-1", []],
  ["demo", "audit", "everything", []],
  ["estimate", "interval", "0", []],
  ["estimate", "price-per-gb", "cheap", []],
  ["estimate", "storage-price", "-1", []],
  ["estimate", "compression-ratio", "0.5", []],
  ["estimate", "retention-days", "1.5", []],
  ["recommend", "interval", "abc", []],
  ["recommend", "price-per-gb", "abc", []],
  ["serve", "sample-interval-ms", "500", []],
  ["serve", "log-level", "loud", []],
  ["bench", "scale", "0", []],
  ["bench", "clients", "many", []],
  ["bench", "jobs", "1.5", []],
  ["bench", "duration", "abc", []],
  ["bench", "runs", "0", []],
  ["bench", "warmup", "x", []],
  ["bench", "seed", "x", []],
  ["bench", "audit", "everything", []],
  ["bench", "workload", "tpcx", []],
  ["bench", "log-destination", "eventlog", []],
  ["bench", "log-statement-once", "maybe", []],
  ["bench", "log-dir", "nowhere", []],
];

/** run's settings that take a number or a choice, from its schema. */
const RUN_CASES: [string, string, string, string[]][] = SETTINGS.filter((s) => s.flag && !s.boolean)
  .map(
    (s) => [s, expectation((RunConfigSchema as unknown as z.ZodObject).shape[s.key] as z.ZodType)] as const,
  )
  .filter(([, expected]) => expected !== undefined && /number|one of/.test(expected))
  .map(([s, expected]) => ["run", s.flag!, /one of/.test(expected!) ? "bogus" : "abc", ["--log-dir", "/x"]]);

describe("a bad flag value", () => {
  it("covers run's numeric and choice settings", () => {
    expect(RUN_CASES.map((c) => c[1])).toEqual(
      expect.arrayContaining(["format", "batch-max-entries", "nice", "compression", "log-level", "from"]),
    );
  });

  it.each([...CASES, ...RUN_CASES])(
    "%s --%s %j: exit 2, naming the flag and value, what was expected and what to do, with its code",
    async (command, flag, value, rest) => {
      // --flag=value: a value starting with a dash is a value, and bench's --log-statement-once
      // takes its value only so (alone it is still a switch).
      const { code, stdout, stderr } = await runCli([command, ...rest, `--${flag}=${value}`]);
      expect(code, stderr).toBe(2);
      expect(stdout).toBe("");
      const message = stderr.trim().split("\n").at(-1)!;
      expect(
        message.startsWith(`auditpipe ${command}: --${flag} ${JSON.stringify(value)}: expected `),
        message,
      ).toBe(true);
      expect(message).toMatch(/; give such a value(, or leave it out for the default \S+)? \(see auditpipe /);
      expect(message).toMatch(/ \[AUDITPIPE_ERR_BAD_FLAG\]$/);
      expect(message).not.toMatch(/NaN|Invalid input|received/);
    },
  );
});

describe("--help", () => {
  it("of every command keeps its flags in one block: no paragraph between two flags", async () => {
    const commands = [...(await runCli(["--help"])).stdout.matchAll(/^ {2}([a-z]+)\s/gm)].map((m) => m[1]!);
    expect(commands.length).toBeGreaterThanOrEqual(9);
    for (const command of commands) {
      const { code, stdout } = await runCli([command, "--help"]);
      expect(code).toBe(0);
      const lines = stdout.split("\n");
      expect(lines[0], command).toMatch(new RegExp(`^Usage: auditpipe ${command}\\b`));
      const flagLines = lines.flatMap((l, i) => (/^ {2}-/.test(l) ? [i] : []));
      expect(flagLines.length, command).toBeGreaterThan(0);
      // Between the first and the last flag: flags, their continuation lines, blank lines, and
      // the heading of a group of flags (a paragraph ending in ":" right above its flags, as
      // "Cost, two lines billed on different bytes:"), never other prose.
      for (let i = flagLines[0]!; i <= flagLines.at(-1)!; i++) {
        const line = lines[i]!;
        if (line === "" || /^\s/.test(line)) continue;
        let end = i;
        while (lines[end + 1] !== undefined && /^\S/.test(lines[end + 1]!)) end++;
        const heading = lines[end]!.endsWith(":") && /^ {2}-/.test(lines[end + 1] ?? "");
        expect(heading, `${command} --help line ${i + 1}, prose between two flags: ${line}`).toBe(true);
        i = end;
      }
    }
  });

  it("of analyze comes from its table, the exit codes after the flags (they sat between two)", async () => {
    const { stdout } = await runCli(["analyze", "--help"]);
    expect(stdout.indexOf("Exits 1")).toBeGreaterThan(stdout.indexOf("-h, --help"));
  });
});
