/** jsonlog bytes → LogRecords → full pgAudit entries, against JSON.parse per line, same file, same run. */
import { readFileSync } from "node:fs";
import { createJsonlogParser, type LogRecord, parseAuditPayload } from "@auditpipe/parse";
import { type BenchCase, CHUNK_BYTES, type Counts, runCases, writeSuite } from "./_bench-harness.ts";
import { referenceData } from "./_reference-data.ts";

const ROUNDS = 5;

function ours(data: Buffer, decode: boolean): Counts {
  const counts: Counts = { records: 0, entries: 0, checksum: 0 };
  const parser = createJsonlogParser({
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

/** The obvious alternative: split lines, JSON.parse each (no offsets, no chunking). */
function jsonParseLines(data: Buffer): Counts {
  const counts: Counts = { records: 0, entries: 0, checksum: 0 };
  let start = 0;
  for (;;) {
    const nl = data.indexOf(10, start);
    if (nl < 0) break;
    const o = JSON.parse(data.toString("utf8", start, nl)) as { message?: string };
    counts.records++;
    counts.checksum += o.message?.length ?? 0;
    start = nl + 1;
  }
  return counts;
}

const { jsonlog } = await referenceData();
const data = readFileSync(jsonlog);
console.log(`jsonlog: ${jsonlog}, ${(data.length / 1e6).toFixed(1)} MB`);
const cases: BenchCase[] = [
  { name: "auditpipe jsonlog → records + audit entries", run: (d) => ours(d, true) },
  { name: "auditpipe jsonlog → records", run: (d) => ours(d, false) },
  { name: "JSON.parse per line (split only)", run: jsonParseLines, baseline: true },
];
writeSuite("jsonlog", jsonlog, data.length, await runCases(data, cases, ROUNDS));
