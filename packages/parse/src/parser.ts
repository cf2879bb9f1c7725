import { createCsvlogParser } from "./csvlog.ts";
import { createJsonlogParser } from "./jsonlog.ts";
import { createStderrParser } from "./stderr.ts";
import { createSyslogParser } from "./syslog.ts";
import type { LogFormat, LogParser, ParserOptions, RecordSink } from "./types.ts";

/** The incremental parser for a log format (see each format's module for what it reads). */
export function createParser(format: LogFormat, sink: RecordSink, options: ParserOptions = {}): LogParser {
  switch (format) {
    case "csvlog":
      return createCsvlogParser(sink, options);
    case "jsonlog":
      return createJsonlogParser(sink, options);
    case "stderr":
      return createStderrParser(sink, options);
    case "syslog":
      return createSyslogParser(sink, options);
  }
}
