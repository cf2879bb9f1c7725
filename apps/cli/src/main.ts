import { ANALYZE_HELP, analyzeCommand, type CommandIO } from "./commands/analyze.ts";
import { DEMO_HELP, demoCommand } from "./commands/demo.ts";
import { ESTIMATE_HELP, estimateCommand } from "./commands/estimate.ts";
import { RECOMMEND_HELP, recommendCommand } from "./commands/recommend.ts";
import { RUN_HELP, runCommand } from "./commands/run.ts";
import { SERVE_HELP, serveCommand } from "./commands/serve.ts";
import { verifyCommand } from "./commands/verify.ts";
import { EXIT_FAILURE, EXIT_USAGE, UsageError } from "./usage-error.ts";

export const HELP = `Usage: auditpipe <command> [flags]

Commands:
  analyze FILE...   report the pgAudit volume in PostgreSQL log files (csvlog, jsonlog, stderr, syslog)
  run               the sidecar: follow the logs, meter, ship to a sink, serve /metrics and /v1/volume
  demo              a live demo: scratch PostgreSQL + pgaudit, pgbench load, the sidecar on its logs
  verify ARCHIVE    check an S3 archive against its hourly manifest chain (missing, altered, extra objects)
  estimate          predict entries/s, GB/day, $/month and overhead per pgAudit configuration
  recommend         the cheapest configuration that audits sensitive tables, as an idempotent SQL script
  serve             the REST API alone: estimates, recommendations, the workload of its database
  bench             measure what pgAudit, log_statement and an audit trigger cost here (TPS, latency, log, WAL)

Run 'auditpipe <command> --help' for a command's flags.
`;

const COMMANDS: Record<string, (argv: string[], io: CommandIO) => Promise<number>> = {
  analyze: analyzeCommand,
  run: runCommand,
  demo: (argv, io) => demoCommand(argv, { ...io, stdoutIsTTY: process.stdout.isTTY === true }),
  verify: verifyCommand,
  estimate: estimateCommand,
  recommend: recommendCommand,
  serve: serveCommand,
  // Loaded when it runs: bench pulls in node-postgres and its own package.
  bench: async (argv, io) => (await import("./commands/bench.ts")).benchCommand(argv, io),
};

export { ANALYZE_HELP, DEMO_HELP, ESTIMATE_HELP, RECOMMEND_HELP, RUN_HELP, SERVE_HELP };

const processIO: CommandIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
};

/** Runs the CLI; resolves with the exit code. Usage errors exit 2 with a message naming the flag. */
export async function main(argv: string[], io: CommandIO = processIO): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    io.stdout(HELP);
    return command === undefined ? EXIT_USAGE : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    io.stderr(`auditpipe: unknown command ${JSON.stringify(command)}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  try {
    return await run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`auditpipe ${error.message}\n`);
      return EXIT_USAGE;
    }
    io.stderr(`auditpipe ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_FAILURE;
  }
}
