/**
 * The queries PostgreSQL's RI triggers run (ri_triggers.c), recognised in pg_stat_statements'
 * normalized text and turned back into what pgaudit logs: pg_stat_statements replaces the
 * constants (`SELECT 1`, `SET "c" = NULL`) with `$n` like any other, while the key values are
 * real bind parameters that pgaudit prints as `$1` (and as values with log_parameter).
 */
import { qualifiedName } from "./_sql.ts";
import type { RelationUse } from "./types.ts";

const KEY = /(?:"(?:[^"]|"")+"|\$\d+) OPERATOR\(pg_catalog\.=\) (?:"(?:[^"]|"")+"|\$\d+)/g;
const NAME = '"((?:[^"]|"")+)"';
const TABLE = new RegExp(`^(SELECT \\$\\d+ FROM|DELETE FROM|UPDATE) (?:ONLY )?${NAME}\\.${NAME}`);

export interface RiStatement {
  /** The text as pgaudit logs it. */
  text: string;
  /** The key values bound per call. */
  params: number;
  kind: "SELECT" | "DELETE" | "UPDATE";
  relation: RelationUse;
}

const unquote = (q: string): string => q.slice(1, -1).replaceAll('""', '"');

/** The RI query behind a nested pg_stat_statements row, or null when `text` is not one. */
export function riStatement(text: string): RiStatement | null {
  const table = TABLE.exec(text);
  if (!table || !text.includes("OPERATOR(pg_catalog.=)")) return null;
  const keys = [...text.matchAll(KEY)].map((m) => m[0]);
  if (keys.length === 0) return null;
  const columns = keys.map((k) =>
    unquote(k.split(" OPERATOR(pg_catalog.=) ").find((p) => p.startsWith('"'))!),
  );
  const relation = qualifiedName(table[2]!.replaceAll('""', '"'), table[3]!.replaceAll('""', '"'));
  // Key values are the real parameters; pg_stat_statements numbers its constants after them.
  const real = Math.max(...keys.flatMap((k) => [...k.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]))));
  if (table[1]!.startsWith("SELECT")) {
    return {
      text: text.replace(/^SELECT \$\d+ FROM/, "SELECT 1 FROM"),
      params: real,
      kind: "SELECT",
      // FOR KEY SHARE needs UPDATE as well as SELECT; no columns are updated.
      relation: { relation, columns, writtenColumns: [], locked: true },
    };
  }
  if (table[1] === "DELETE FROM")
    return { text, params: real, kind: "DELETE", relation: { relation, write: "DELETE", columns } };
  // ON DELETE/UPDATE SET NULL: the constants set are NULL (ON UPDATE CASCADE sets parameters).
  const set = text.replace(/ = \$(\d+)/g, (whole, n: string) => (Number(n) > real ? " = NULL" : whole));
  return {
    text: set,
    params: real,
    kind: "UPDATE",
    relation: { relation, write: "UPDATE", columns, writtenColumns: columns },
  };
}
