/** Query results as a text table, CSV or JSON (pure). */
import type { QueryResult } from "@auditpipe/query";

const NUMERIC =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL.*)$/;
/** A cell longer than this is cut in the text table (--json and --csv have it whole). */
const CELL_MAX = 200;

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const line = text.replace(/\s*\n\s*/g, " ");
  return line.length > CELL_MAX ? `${line.slice(0, CELL_MAX - 1)}…` : line;
}

export function renderTable(result: QueryResult): string {
  const rows = result.rows.map((r) => r.map(cell));
  const widths = result.columns.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)));
  const right = result.types.map((t) => NUMERIC.test(t));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = [line(result.columns), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)];
  out.push("", `(${result.rows.length.toLocaleString("en-US")} row${result.rows.length === 1 ? "" : "s"})`);
  return `${out.join("\n")}\n`;
}

function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function renderCsv(result: QueryResult): string {
  const lines = [
    result.columns.map(csvField).join(","),
    ...result.rows.map((r) => r.map(csvField).join(",")),
  ];
  return `${lines.join("\r\n")}\r\n`;
}

export function rowObjects(result: QueryResult): Record<string, unknown>[] {
  return result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i] ?? null])));
}

export function renderJson(result: QueryResult): string {
  return `${JSON.stringify(rowObjects(result), null, 2)}\n`;
}
