import { createRequire } from "node:module";
import { type DestinationStream, type Logger, pino } from "pino";

/**
 * pino JSON on stderr, pretty when stderr is a terminal. Secrets are redacted by path; record
 * text never reaches a log call in the first place (statements can hold personal data).
 *
 * No pino transports: a transport is a worker thread started from a file pino resolves at run
 * time, which a bundled pino (apps/cli/scripts/bundle.mjs) does not have. The terminal's
 * pino-pretty is a stream in this thread, loaded only when stderr is a terminal.
 */
export function createLogger(level: string, pretty: boolean = process.stderr.isTTY === true): Logger {
  const options = {
    level,
    base: { pid: process.pid },
    redact: {
      paths: ["apiToken", "token", "req.headers.authorization", "*.password", "*.secretAccessKey"],
      censor: "[redacted]",
    },
  };
  if (pretty) return pino(options, prettyStream());
  return pino(options, pino.destination({ fd: 2, sync: false }));
}

/** pino-pretty writing to stderr (a runtime dependency, required where it is first needed). */
function prettyStream(): DestinationStream {
  const require = createRequire(import.meta.url);
  const pinoPretty = require("pino-pretty") as (options: Record<string, unknown>) => DestinationStream;
  return pinoPretty({ destination: 2, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", sync: false });
}
