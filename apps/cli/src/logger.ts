import { type Logger, pino } from "pino";

/**
 * pino JSON on stderr, pretty when stderr is a terminal. Secrets are redacted by path; record
 * text never reaches a log call in the first place (statements can hold personal data).
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
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: "pino-pretty",
        options: { destination: 2, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" },
      },
    });
  }
  return pino(options, pino.destination({ fd: 2, sync: false }));
}
