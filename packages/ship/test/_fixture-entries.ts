/**
 * Every pgAudit entry of every committed fixture (real PostgreSQL 15 + pgaudit 1.7 logs, in
 * csvlog, jsonlog and stderr), with the record that carried it and a source name.
 */
import { join } from "node:path";
import { LOG_LINE_PREFIX, listCases, readFixture } from "@auditpipe/fixtures";
import {
  AUDIT_PREFIX,
  type AuditEntry,
  createParser,
  type LogFormat,
  type LogRecord,
  parseAuditPayload,
} from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";

export interface FixtureAuditEntry {
  entry: AuditEntry;
  record: LogRecord;
  /** `<case>/<file>`. */
  source: string;
}

export function fixtureAuditEntries(): FixtureAuditEntry[] {
  const dir = join(repoRoot(), "fixtures", "cases");
  const out: FixtureAuditEntry[] = [];
  const files: [LogFormat, string][] = [
    ["csvlog", "postgresql.csv.gz"],
    ["jsonlog", "postgresql.json.gz"],
    ["stderr", "postgresql.log.gz"],
  ];
  for (const name of listCases(dir)) {
    for (const [format, file] of files) {
      const parser = createParser(
        format,
        {
          record(record) {
            if (!record.message.startsWith(AUDIT_PREFIX)) return;
            const entry = parseAuditPayload(record.message);
            if (entry) out.push({ entry, record, source: `${name}/${file}` });
          },
          malformed() {},
        },
        format === "stderr" ? { prefix: LOG_LINE_PREFIX } : {},
      );
      parser.push(readFixture(join(dir, name), file));
      parser.end();
    }
  }
  return out;
}
