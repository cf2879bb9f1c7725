/**
 * The digest of a Parquet file's rows, in file order: what a compaction record carries besides the
 * file's SHA-256, so a rerun (or `verify`) can tell "the same rows in the same order" apart from
 * "the same bytes" — a writer need not be byte-deterministic across versions, the rows must be.
 *
 * Each row is one line: DuckDB's `json_array` of its columns in PARQUET_COLUMNS order, `ts` as
 * microseconds since the epoch. The engine hashes each line with SHA-256 as it scans (in file
 * order, nothing buffered); the digest is the SHA-256 of those hex digests, each followed by `\n`.
 * The per-row work stays in the engine: the engine writes the hex digests, one a line, to a
 * scratch file in scan order (COPY keeps insertion order), and Node hashes that file. Fetching
 * them into JavaScript instead cost ~1 µs a row (a native call and a string decode per value:
 * a third of the read-back; docs/benchmarks.md, "CPU per row").
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { DuckDBConnection } from "@duckdb/node-api";
import { PARQUET_COLUMNS, quoteIdent, quoteLiteral } from "./schema.ts";

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

/** A row's line in the scratch file: 64 hex digits and `\n`. */
const LINE_BYTES = 65;

/**
 * Reads `from` (a table expression: `read_parquet('…')`, or a table) in its order and digests its
 * rows. The scratch file (~65 bytes a row) goes to a private directory under `workDir` (default
 * the OS temp dir), removed before this returns.
 */
export async function digestRows(
  connection: DuckDBConnection,
  from: string,
  options: { workDir?: string } = {},
): Promise<RowsDigest> {
  const scratch = await mkdtemp(join(options.workDir ?? tmpdir(), "auditpipe-digest-"));
  try {
    const lines = join(scratch, "rows.sha256");
    // Hex digits need no quoting or escaping; no header; `\n` after each line, the last too.
    await connection.run(
      `COPY (SELECT sha256(${canonicalRow()}) FROM ${from}) TO ${quoteLiteral(lines)}
       (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', NEW_LINE '\\n')`,
    );
    const { size } = await stat(lines);
    if (size % LINE_BYTES !== 0)
      throw new Error(
        `rows digest: ${size} bytes of row digests is not a whole number of ${LINE_BYTES}-byte lines`,
      );
    const hash = createHash("sha256");
    await pipeline(createReadStream(lines), hash);
    return { rows: size / LINE_BYTES, digest: `sha256:${hash.digest("hex")}` };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
