import type { CommandIO } from "./command-io.ts";
import { type Command, processIO, runWithExitStatus } from "./command-run.ts";
import { EXIT_USAGE } from "./usage-error.ts";
import { versionLine } from "./version.ts";

export const HELP = `Usage: auditpipe <command> [flags]

Commands:
  analyze FILE...   report the pgAudit volume in PostgreSQL log files (csvlog, jsonlog, stderr, syslog)
  run               the sidecar: follow the logs, meter, ship to a sink, serve /metrics and /v1/volume
  demo              a live demo: scratch PostgreSQL + pgaudit, pgbench load, the sidecar on its logs
  verify ARCHIVE    check an S3 archive against its hourly manifest chain (missing, altered, extra objects)
  compact ARCHIVE   compact each closed host-hour of an archive into one typed Parquet file
  query ARCHIVE     SQL and named reports (who-touched, failed, grants, by-user) over an archive, or OCSF
  estimate          predict entries/s, GB/day, $/month and overhead per pgAudit configuration
  recommend         the cheapest configuration that audits sensitive tables, as an idempotent SQL script
  advise FILE...    what makes audit logs big: the noise, the change that removes it, what it gives up
  serve             the REST API alone: estimates, recommendations, the workload of its database
  bench             measure what pgAudit, log_statement and an audit trigger cost here (TPS, latency, log, WAL)

Run 'auditpipe <command> --help' for a command's flags; 'auditpipe --version' for the version.
`;

/**
 * Each command's module is imported when that command runs, never at start-up: `analyze` must not
 * pay for the AWS SDK, Fastify, prom-client or node-postgres that `run` and `estimate` load.
 */
const COMMANDS: Record<string, (argv: string[]) => Promise<Command>> = {
  analyze: async (argv) => {
    // Its worker threads start before its modules load (analyze/prestart.ts).
    (await import("./analyze/prestart.ts")).prestartWorkers(argv);
    return (await import("./commands/analyze.ts")).analyzeCommand;
  },
  run: async () => (await import("./commands/run.ts")).runCommand,
  demo: async () => {
    const { demoCommand } = await import("./commands/demo.ts");
    return (argv, io) => demoCommand(argv, { ...io, stdoutIsTTY: process.stdout.isTTY === true });
  },
  verify: async () => (await import("./commands/verify.ts")).verifyCommand,
  compact: async () => (await import("./commands/compact.ts")).compactCommand,
  query: async () => (await import("./commands/query.ts")).queryCommand,
  estimate: async () => (await import("./commands/estimate.ts")).estimateCommand,
  recommend: async () => (await import("./commands/recommend.ts")).recommendCommand,
  advise: async () => (await import("./commands/advise.ts")).adviseCommand,
  bench: async () => (await import("./commands/bench.ts")).benchCommand,
  serve: async () => (await import("./commands/serve.ts")).serveCommand,
};

/** Runs the CLI; resolves with the exit code. Usage errors exit 2 with a message naming the flag. */
export async function main(argv: string[], io: CommandIO = processIO()): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    io.stdout(HELP);
    return command === undefined ? EXIT_USAGE : 0;
  }
  if (command === "--version" || command === "-v" || command === "version") {
    io.stdout(`${versionLine()}\n`);
    return 0;
  }
  const load = COMMANDS[command];
  if (!load) {
    io.stderr(`auditpipe: unknown command ${JSON.stringify(command)}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  return runWithExitStatus(command, load, rest, io);
}
