/**
 * csv-parse merely splitting a csvlog into rows (nothing decoded): the baseline the csvlog bench
 * and `analyze`'s target (issue 24: ≥ 8x it) are measured against, in the same run.
 */
import { parse } from "csv-parse";
import { CHUNK_BYTES, type Counts } from "./_bench-harness.ts";

export function csvParse(data: Buffer): Counts {
  const counts: Counts = { records: 0, entries: 0, checksum: 0 };
  // on_record runs synchronously for each record; returning null keeps the stream from buffering.
  const parser = parse({
    relax_column_count: true,
    on_record: (row: string[]) => {
      counts.records++;
      counts.checksum += row[13]?.length ?? 0;
      return null;
    },
  });
  for (let pos = 0; pos < data.length; pos += CHUNK_BYTES)
    parser.write(data.subarray(pos, pos + CHUNK_BYTES));
  parser.end();
  return counts;
}
