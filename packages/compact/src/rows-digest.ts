/**
 * The digest of a Parquet file's rows, in file order: what a compaction record carries besides the
 * file's SHA-256, so a rerun (or `verify`) can tell "the same rows in the same order" apart from
 * "the same bytes" — a writer need not be byte-deterministic across versions, the rows must be.
 *
 * Each row is one line: DuckDB's `json_array` of its columns in PARQUET_COLUMNS order, `ts` as
 * microseconds since the epoch. Lines are taken in groups of DIGEST_GROUP_ROWS in file order; each
 * group's lines joined by `\n` are hashed with SHA-256 inside the engine, and the digest is the
 * SHA-256 of the groups' hex digests, each followed by `\n`. The engine does the per-row work (a
 * row-by-row pass in JavaScript cost half of a compaction's CPU); JavaScript only folds the groups.
 */
import { createHash } from "node:crypto";
import type { DuckDBConnection } from "@duckdb/node-api";
import { PARQUET_COLUMNS, quoteIdent } from "./schema.ts";

export interface RowsDigest {
  rows: number;
  /** `sha256:` and 64 hex digits. */
  digest: string;
}

/** Rows per hashed group: a group's text (a few MB) is what the engine holds at once. */
export const DIGEST_GROUP_ROWS = 10_000;

/** One row as a JSON array: `ts` as epoch microseconds, everything else as stored. */
function canonicalRow(): string {
  const cols = PARQUET_COLUMNS.map((c) => (c.name === "ts" ? "epoch_us(ts)" : quoteIdent(c.name)));
  return `CAST(json_array(${cols.join(", ")}) AS VARCHAR)`;
}

/** Reads `from` (a table expression: `read_parquet('…')`, or a table) in its order and digests its rows. */
export async function digestRows(connection: DuckDBConnection, from: string): Promise<RowsDigest> {
  const result = await connection.stream(
    `SELECT g, count(*) AS n, sha256(string_agg(line, chr(10) ORDER BY rn)) AS h
     FROM (SELECT rn, (rn - 1) // ${DIGEST_GROUP_ROWS} AS g, line
           FROM (SELECT row_number() OVER () AS rn, ${canonicalRow()} AS line FROM ${from}))
     GROUP BY g ORDER BY g`,
  );
  const hash = createHash("sha256");
  let rows = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    for (const [, n, h] of chunk.getRows()) {
      hash.update(`${String(h)}\n`);
      rows += Number(n);
    }
  }
  return { rows, digest: `sha256:${hash.digest("hex")}` };
}
