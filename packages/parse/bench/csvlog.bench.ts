/**
 * csvlog bytes → LogRecords → full pgAudit entries, against csv-parse (splitting only) and
 * `pgbadger -f csv`, on the same real pgbench log in the same run.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCsvlogParser, type LogRecord, parseAuditPayload } from "@auditpipe/parse";
import {
  type BenchCase,
  CHUNK_BYTES,
  type Counts,
  measured,
  runCases,
  writeSuite,
} from "./_bench-harness.ts";
import { csvParse } from "./_csv-parse-split.ts";
import { referenceData } from "./_reference-data.ts";

const ROUNDS = 5;

function ours(data: Buffer, decode: boolean): Counts {
  const counts: Counts = { records: 0, entries: 0, checksum: 0 };
  const parser = createCsvlogParser({
    record(r: LogRecord) {
      counts.records++;
      if (decode) {
        const e = parseAuditPayload(r.message);
        if (e !== undefined) {
          counts.entries++;
          counts.checksum += e.statement.length + e.substatementId;
        }
      } else counts.checksum += r.message.length;
    },
    malformed() {
      counts.checksum--;
    },
  });
  for (let pos = 0; pos < data.length; pos += CHUNK_BYTES) parser.push(data.subarray(pos, pos + CHUNK_BYTES));
  parser.end();
  return counts;
}

/** pgbadger is a separate process: timed once per round with the wall clock. */
function pgbadger(file: string): number {
  const out = join(tmpdir(), `auditpipe-bench-pgbadger-${process.pid}.txt`);
  const t0 = performance.now();
  const r = spawnSync("pgbadger", ["-f", "csv", "-j", "1", "-q", "-x", "text", "-o", out, file], {
    stdio: "ignore",
  });
  const ms = performance.now() - t0;
  if (r.status !== 0)
    throw new Error(`pgbadger failed (exit ${r.status}); install it: apt-get install -y pgbadger`);
  return ms;
}

const { csvlog } = await referenceData();
const data = readFileSync(csvlog);
console.log(`csvlog: ${csvlog}, ${(data.length / 1e6).toFixed(1)} MB`);
const cases: BenchCase[] = [
  { name: "auditpipe csvlog → records + audit entries", run: (d) => ours(d, true) },
  { name: "auditpipe csvlog → records", run: (d) => ours(d, false) },
  { name: "csv-parse (split only)", run: csvParse, baseline: true },
];
const results = await runCases(data, cases, ROUNDS);
// The pgbadger baseline is slow (minutes per run at ~9 MB/s): once, after the in-process cases.
const hasPgbadger = spawnSync("pgbadger", ["--version"], { stdio: "ignore" }).status === 0;
if (hasPgbadger) {
  const ms = pgbadger(csvlog);
  const records = results[1]!.records;
  const entries = results[0]!.entries;
  results.push(measured("pgbadger -f csv", { records, entries, checksum: 0 }, ms, data.length, true));
} else console.warn("pgbadger not installed: apt-get install -y pgbadger");
writeSuite("csvlog", csvlog, data.length, results);
