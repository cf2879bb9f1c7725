/**
 * The digest of a Parquet file's rows, in file order: what a compaction record carries besides the
 * file's SHA-256, so a rerun (or `verify`) can tell "the same rows in the same order" apart from
 * "the same bytes" — a writer need not be byte-deterministic across versions, the rows must be.
 *
 * Each row is one line: DuckDB's `json_array` of its columns in PARQUET_COLUMNS order, `ts` as
 * microseconds since the epoch. The engine hashes each line with SHA-256 as it scans (in file
 * order, nothing buffered); the digest is the SHA-256 of those hex digests, each followed by `\n`.
 * The per-row work stays in the engine: a row-by-row conversion in JavaScript cost half of a
 * compaction's CPU; only 64 characters a row cross over.
 */
import { createHash } from "node:crypto";
import type { DuckDBConnection } from "@duckdb/node-api";
import { PARQUET_COLUMNS, quoteIdent } from "./schema.ts";

export interface RowsDigest {
  rows: number;
  /** `sha256:` and 64 hex digits. */
  digest: string;
}

/** One row as a JSON array: `ts` as epoch microseconds, everything else as stored. */
function canonicalRow(): string {
  const cols = PARQUET_COLUMNS.map((c) => (c.name === "ts" ? "epoch_us(ts)" : quoteIdent(c.name)));
  return `CAST(json_array(${cols.join(", ")}) AS VARCHAR)`;
}

/** Reads `from` (a table expression: `read_parquet('…')`, or a table) in its order and digests its rows. */
export async function digestRows(connection: DuckDBConnection, from: string): Promise<RowsDigest> {
  const result = await connection.stream(`SELECT sha256(${canonicalRow()}) FROM ${from}`);
  const hash = createHash("sha256");
  let rows = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const lines = chunk.getColumnValues(0) as string[];
    hash.update(`${lines.join("\n")}\n`);
    rows += chunk.rowCount;
  }
  return { rows, digest: `sha256:${hash.digest("hex")}` };
}
