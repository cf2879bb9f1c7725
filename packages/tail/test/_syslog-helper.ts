/** Helpers for the syslog source tests: collecting what a source reports (sending: @auditpipe/testkit). */
import type { LogRecord, MalformedRecord } from "@auditpipe/parse";
import { type SyslogRecordSource, type SyslogSource, startSyslogSource } from "@auditpipe/tail";

export interface Received {
  record: LogRecord;
  source: SyslogRecordSource;
}

export interface Collected {
  source: SyslogSource;
  records: Received[];
  malformed: { error: MalformedRecord; source: string }[];
}

export async function collectingSource(
  listen: string[],
  options: { prefix?: string; flushAfterMs?: number; maxFrameBytes?: number } = {},
): Promise<Collected> {
  const records: Received[] = [];
  const malformed: Collected["malformed"] = [];
  const source = await startSyslogSource({
    listen,
    ...options,
    onRecord: (record, from) => records.push({ record, source: from }),
    onMalformed: (error, from) => malformed.push({ error, source: from }),
  });
  return { source, records, malformed };
}
