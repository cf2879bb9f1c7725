/**
 * The Parquet archive's columns: one per shipped-record field, named as the NDJSON line names it
 * (docs/archive.md, "Parquet archive"). One table, read by the compaction SQL, the query view, the
 * rows digest, the Spark/Athena/Trino DDL tests and the docs test.
 */

/** Bumped when a column is added, removed or retyped; written into every file's metadata. */
export const PARQUET_SCHEMA_VERSION = 1;

export interface ParquetColumn {
  /** The column name: the shipped-record field (a nested field keeps its struct). */
  name: string;
  /** The DuckDB type the column is written as. */
  type: string;
  /** What it holds, for docs/archive.md. */
  doc: string;
}

export const PARQUET_COLUMNS: readonly ParquetColumn[] = [
  {
    name: "record",
    type: "VARCHAR",
    doc: "`entry`, `attempt`, or `outcome` (a decision whose entry is in an earlier hour)",
  },
  {
    name: "ts",
    type: "TIMESTAMPTZ",
    doc: "log time, UTC, microseconds (Parquet TIMESTAMP, isAdjustedToUTC)",
  },
  { name: "user", type: "VARCHAR", doc: "" },
  { name: "database", type: "VARCHAR", doc: "" },
  { name: "pid", type: "INTEGER", doc: "" },
  { name: "session_id", type: "VARCHAR", doc: "" },
  { name: "session_line", type: "BIGINT", doc: "" },
  { name: "application_name", type: "VARCHAR", doc: "" },
  { name: "remote_host", type: "VARCHAR", doc: "" },
  { name: "audit_type", type: "VARCHAR", doc: "`SESSION` or `OBJECT`" },
  { name: "statement_id", type: "BIGINT", doc: "" },
  { name: "substatement_id", type: "BIGINT", doc: "" },
  { name: "class", type: "VARCHAR", doc: "" },
  { name: "command", type: "VARCHAR", doc: "" },
  { name: "object_type", type: "VARCHAR", doc: "" },
  { name: "object_name", type: "VARCHAR", doc: "" },
  { name: "statement", type: "VARCHAR", doc: "" },
  {
    name: "parameter",
    type: "VARCHAR[]",
    doc: "the values (NULL elements for SQL NULL); NULL when pgAudit printed a marker instead",
  },
  {
    name: "parameter_marker",
    type: "VARCHAR",
    doc: "pgAudit's marker (`<none>`, `<not logged>`, …) when `parameter` was one, else NULL",
  },
  { name: "rows", type: "BIGINT", doc: "" },
  {
    name: "outcome",
    type: "VARCHAR",
    doc: "the entry's final outcome when its decision is in the same file",
  },
  { name: "sqlstate", type: "VARCHAR", doc: "" },
  { name: "source", type: 'STRUCT(file VARCHAR, "offset" BIGINT)', doc: "" },
  { name: "invalid_utf8", type: "BOOLEAN", doc: "" },
  { name: "redacted", type: "VARCHAR[]", doc: "" },
];

/** Quotes an identifier for DuckDB SQL (`user`, `database` and `rows` are keywords). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes a string literal for DuckDB SQL. */
export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The `columns` argument of `read_json` over landing NDJSON: every shipped field with the type
 * it is read as. `ts` is read as text and cast (an ISO 8601 string with its `Z`), `parameter` as
 * JSON (an array of values, or a marker string).
 */
export function ndjsonColumns(): string {
  const read = (c: ParquetColumn): string => {
    if (c.name === "ts") return "VARCHAR";
    if (c.name === "parameter") return "JSON";
    return c.type;
  };
  const fields = PARQUET_COLUMNS.filter((c) => c.name !== "parameter_marker").map(
    (c) => `${quoteIdent(c.name)}: ${quoteLiteral(read(c))}`,
  );
  return `{${fields.join(", ")}}`;
}

/**
 * The typed select list over `read_json(…, columns = ndjsonColumns())`: every Parquet column in
 * table order. `outcome`/`sqlstate` are taken as shipped; the compaction replaces them where a
 * decision in the same hour applies.
 */
export function typedSelectList(): string {
  return PARQUET_COLUMNS.map((c) => {
    const q = quoteIdent(c.name);
    switch (c.name) {
      case "record":
        return `coalesce(${q}, 'entry') AS ${q}`;
      case "ts":
        return `CAST(${q} AS TIMESTAMPTZ) AS ${q}`;
      case "parameter":
        return `CASE WHEN json_type(${q}) = 'ARRAY' THEN CAST(${q} AS VARCHAR[]) END AS ${q}`;
      case "parameter_marker":
        return `CASE WHEN json_type("parameter") = 'VARCHAR' THEN "parameter" ->> '$' END AS ${q}`;
      default:
        return q;
    }
  }).join(", ");
}

/** The total order of rows in a file: log time, then session and line, then place in the source. */
export const ROW_ORDER =
  'ts ASC NULLS FIRST, session_id ASC NULLS FIRST, session_line ASC NULLS FIRST, source."offset" ASC NULLS FIRST, source.file ASC NULLS FIRST, record ASC';
