/**
 * Runs one read-only statement on the audit view: a SELECT (or WITH … SELECT, or EXPLAIN of one),
 * nothing that writes, attaches, loads or changes a setting. Rows come back as JSON values
 * (64-bit integers as strings, timestamps as ISO 8601 text). Progress is reported while it runs.
 */
import type { Engine } from "@auditpipe/compact";
import { QueryError, QueryErrorCode } from "./errors.ts";

export interface QueryResult {
  columns: string[];
  /** DuckDB type names, one per column (`VARCHAR`, `BIGINT`, `TIMESTAMP WITH TIME ZONE`…). */
  types: string[];
  rows: unknown[][];
}

export interface RunQueryOptions {
  /** Called about every `progressEveryMs` with the engine's estimate (0–100) while the query runs. */
  onProgress?: (percentage: number) => void;
  progressEveryMs?: number;
}

/** Statement types a query may be: reads only. */
const READ_ONLY = new Set(["SELECT", "EXPLAIN"]);

export async function runQuery(
  engine: Engine,
  sql: string,
  options: RunQueryOptions = {},
): Promise<QueryResult> {
  const { StatementType, DuckDBPendingResultState, JsonDuckDBValueConverter } = await import(
    "@duckdb/node-api"
  );
  const c = engine.connection;
  let statement: Awaited<ReturnType<Awaited<ReturnType<typeof c.extractStatements>>["prepare"]>>;
  try {
    const extracted = await c.extractStatements(sql);
    if (extracted.count !== 1)
      throw new QueryError(QueryErrorCode.NOT_READ_ONLY, `give one SQL statement (got ${extracted.count})`);
    statement = await extracted.prepare(0);
  } catch (error) {
    if (error instanceof QueryError) throw error;
    throw new QueryError(QueryErrorCode.FAILED, firstLine(error), { cause: error });
  }
  const type = StatementType[statement.statementType] ?? String(statement.statementType);
  if (!READ_ONLY.has(type))
    throw new QueryError(
      QueryErrorCode.NOT_READ_ONLY,
      `only a SELECT may run on the archive (this statement is ${type}): query reads the archive and writes nothing`,
    );
  try {
    const pending = statement.start();
    const every = options.progressEveryMs ?? 250;
    let last = Date.now();
    for (;;) {
      const state = pending.runTask();
      if (state === DuckDBPendingResultState.RESULT_READY) break;
      if (options.onProgress && Date.now() - last >= every) {
        last = Date.now();
        const p = c.progress.percentage;
        if (p >= 0) options.onProgress(p);
      }
      // Let background threads work (and timers fire) between tasks.
      if (state === DuckDBPendingResultState.NO_TASKS_AVAILABLE) await new Promise((r) => setTimeout(r, 1));
    }
    const reader = await pending.readAll();
    return {
      columns: reader.columnNames(),
      types: reader.columnTypes().map((t) => t.toString()),
      rows: reader.convertRows(JsonDuckDBValueConverter) as unknown[][],
    };
  } catch (error) {
    throw new QueryError(QueryErrorCode.FAILED, firstLine(error), { cause: error });
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
}
