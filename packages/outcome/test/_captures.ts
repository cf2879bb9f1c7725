/**
 * The real outcome captures (fixtures/outcomes) as the outcome tests read them: each case's csvlog,
 * stderr and syslog file, parsed and decoded into records and their pgAudit entries.
 */
import { join } from "node:path";
import { listCases, readExpected } from "@auditpipe/fixtures";
import {
  type AuditEntry,
  createParser,
  decodeAuditEntry,
  type LogFormat,
  type LogRecord,
} from "@auditpipe/parse";

export const DIR = join(import.meta.dirname, "..", "..", "..", "fixtures", "outcomes");

export type Rec = { record: LogRecord; entry?: AuditEntry };

export function read(bytes: Buffer, format: LogFormat, prefix: string): Rec[] {
  const out: Rec[] = [];
  const parser = createParser(
    format,
    {
      record(record) {
        const entry = decodeAuditEntry(record, () => {});
        out.push(entry ? { record, entry } : { record });
      },
      malformed() {},
    },
    { prefix },
  );
  parser.push(bytes);
  parser.end();
  return out;
}

/** Every case's three files, with the format and log_line_prefix they were written with. */
export const captures = listCases(DIR).flatMap((name) => {
  const expected = readExpected(join(DIR, name));
  return ["postgresql.csv.gz", "postgresql.log.gz", "syslog-rfc5424.log.gz"].map((file) => ({
    name,
    file,
    format: expected.formats[file]!.format,
    prefix: expected.settings.log_line_prefix,
  }));
});
