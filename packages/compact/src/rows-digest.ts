/**
 * The digest of a Parquet file's rows, in file order: what a compaction record carries besides the
 * file's SHA-256, so a rerun (or `verify`) can tell "the same rows in the same order" apart from
 * "the same bytes" — a writer need not be byte-deterministic across versions, the rows must be.
 *
 * Each row is one line: the JSON array of its columns in PARQUET_COLUMNS order, `ts` as
 * microseconds since the epoch (a string), 64-bit integers as strings, lists as arrays, `source` as
 * `{"file":…,"offset":…}`; the digest is the SHA-256 of the lines joined by `\n` (each ends in one).
 */
import { createHash } from "node:crypto";
import type { DuckDBConnection } from "@duckdb/node-api";
import { PARQUET_COLUMNS, quoteIdent } from "./schema.ts";

export interface RowsDigest {
  rows: number;
  /** `sha256:` and 64 hex digits. */
  digest: string;
}

/** The canonical select list: `ts` as epoch microseconds, everything else as stored. */
function canonicalSelect(): string {
  return PARQUET_COLUMNS.map((c) => (c.name === "ts" ? "epoch_us(ts) AS ts" : quoteIdent(c.name))).join(", ");
}

/**
 * Reads `from` (a table expression: `read_parquet('…')`, or a table) in its order and digests its
 * rows. One pass, a chunk (2,048 rows) at a time.
 */
export async function digestRows(connection: DuckDBConnection, from: string): Promise<RowsDigest> {
  const { JsonDuckDBValueConverter } = await import("@duckdb/node-api");
  const hash = createHash("sha256");
  let rows = 0;
  const result = await connection.stream(`SELECT ${canonicalSelect()} FROM ${from}`);
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const lines: string[] = [];
    for (const row of chunk.convertRows(JsonDuckDBValueConverter)) lines.push(JSON.stringify(row));
    hash.update(`${lines.join("\n")}\n`);
    rows += chunk.rowCount;
  }
  return { rows, digest: `sha256:${hash.digest("hex")}` };
}
