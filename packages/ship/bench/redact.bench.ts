/**
 * redactStatement over every statement pgAudit logged in the committed fixtures (real
 * PostgreSQL 15 + pgaudit 1.7 csvlog, pgbench load included), in log order; lexSql alone
 * alongside, to show what the placeholder logic costs on top of lexing.
 */
import { lexSql } from "@auditpipe/parse";
import { redactStatement } from "@auditpipe/ship";
import { type BenchCase, type Counts, runCases, writeSuite } from "../../parse/bench/_bench-harness.ts";
import { fixtureEntries } from "../test/_redact-fixtures.ts";

const ROUNDS = 7;
/** The fixtures hold ~3,700 statements (0.3 MB): passes per sample, so one sample takes ~0.5 s. */
const PASSES = 40;

const statements = fixtureEntries().map((e) => e.statement);
// Only its length is used (MB/s): the statements as UTF-8, one pass.
const data = Buffer.from(statements.join(""));
console.log(
  `${statements.length} statements, ${(data.length / 1e6).toFixed(2)} MB per pass, ${PASSES} passes per sample`,
);

function over(fn: (sql: string) => number): (d: Buffer) => Counts {
  return () => {
    const counts: Counts = { records: 0, entries: 0, checksum: 0 };
    for (let pass = 0; pass < PASSES; pass++) {
      for (const sql of statements) {
        counts.checksum += fn(sql);
        counts.records++;
      }
    }
    counts.entries = counts.records;
    return counts;
  };
}

const cases: BenchCase[] = [
  {
    name: "redactStatement",
    run: over((sql) => {
      const r = redactStatement(sql);
      return r.text.length + r.literals;
    }),
  },
  { name: "lexSql (tokens only)", run: over((sql) => lexSql(sql).length) },
];
const bytes = data.length * PASSES;
const results = await runCases(Buffer.alloc(0), cases, ROUNDS);
// runCases measures MB/s against the buffer it was given; recompute against the bytes redacted.
for (const r of results) r.mbPerSec = Number(((bytes / 1e6) * (1000 / r.minMs)).toFixed(1));
writeSuite("redact", "fixtures/cases/*/postgresql.csv.gz (statements)", bytes, results);
