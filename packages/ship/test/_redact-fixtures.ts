/**
 * The statements and parameters of every pgAudit entry in the committed fixtures' csvlog
 * captures (real PostgreSQL 15 + pgaudit 1.7 output), for the redaction tests and bench.
 */
import { join } from "node:path";
import { listCases, readFixture } from "@auditpipe/fixtures";
import { type AuditEntry, parseAuditPayload } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";

export interface FixtureEntry {
  case: string;
  statement: string;
  parameter: AuditEntry["parameter"];
}

/** csvlog's `message` column. */
const MESSAGE = 13;

export function fixtureEntries(): FixtureEntry[] {
  const dir = join(repoRoot(), "fixtures", "cases");
  const entries: FixtureEntry[] = [];
  for (const name of listCases(dir)) {
    const rows = parse(readFixture(join(dir, name), "postgresql.csv.gz"), {
      relax_column_count: true,
    }) as string[][];
    for (const row of rows) {
      const entry = parseAuditPayload(row[MESSAGE] ?? "");
      if (entry) entries.push({ case: name, statement: entry.statement, parameter: entry.parameter });
    }
  }
  return entries;
}
