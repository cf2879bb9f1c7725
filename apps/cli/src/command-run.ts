import type { CommandIO } from "./command-io.ts";
import { EXIT_FAILURE, EXIT_USAGE, UsageError } from "./usage-error.ts";

export type Command = (argv: string[], io: CommandIO) => Promise<number>;

/** The process's own streams (made when a command runs: `run`'s start-up snapshot is built without them). */
export function processIO(): CommandIO {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stderrIsTTY: process.stderr.isTTY === true,
  };
}

/**
 * Runs a command with the CLI's exit statuses: a usage error exits 2 naming the flag, any other
 * failure 1 with its message. main.ts and `run`'s start-up snapshot (run-snapshot.ts) share it.
 */
export async function runWithExitStatus(
  name: string,
  /** The command's module, loaded (it may start work that the arguments call for: analyze's workers). */
  load: (argv: string[]) => Promise<Command>,
  argv: string[],
  io: CommandIO,
): Promise<number> {
  try {
    const run = await load(argv);
    return await run(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`auditpipe ${error.message} [${error.code}]\n`);
      return EXIT_USAGE;
    }
    io.stderr(`auditpipe ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_FAILURE;
  }
}
