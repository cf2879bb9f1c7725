/**
 * csv-parse's reading of a csvlog file, as LogRecords built by a mapping of the test's own: the
 * oracle for the csvlog splitter (same records, same field values, null only for an empty
 * unquoted field, same byte offsets).
 */
import type { LogRecord } from "@auditpipe/parse";
import { parse } from "csv-parse/sync";

type Row = { record: (string | null)[]; info: { bytes: number } };

export function csvParseRecords(input: Buffer): LogRecord[] {
  const rows = parse(input, {
    relax_column_count: true,
    record_delimiter: "\n",
    info: true,
    cast: (value, context) => (value === "" && !context.quoting ? null : value),
  }) as unknown as Row[];
  let offset = 0;
  return rows.map(({ record: f, info }) => {
    const v = (k: number): string | null => f[k] ?? null;
    const n = (k: number): number | null => (f[k] == null ? null : Number(f[k]));
    const r: LogRecord = {
      offset,
      size: info.bytes - offset,
      timestamp: v(0),
      user: v(1),
      database: v(2),
      pid: n(3),
      remoteHost: v(4),
      sessionId: v(5),
      sessionLine: n(6),
      commandTag: v(7),
      sessionStart: v(8),
      virtualTransactionId: v(9),
      transactionId: v(10),
      severity: v(11) ?? "",
      sqlState: v(12),
      message: v(13) ?? "",
      detail: v(14),
      hint: v(15),
      internalQuery: v(16),
      internalPosition: n(17),
      context: v(18),
      query: v(19),
      queryPosition: n(20),
      location: v(21),
      applicationName: v(22),
      backendType: v(23),
      leaderPid: n(24),
      queryId: v(25),
    };
    offset = info.bytes;
    return r;
  });
}
