/**
 * Sizes for values pg_stat_activity cannot show: bind parameters (the extended protocol shows
 * `$n`, and pgaudit logs their values with log_parameter) and constants in texts longer than
 * track_activity_query_size. Each `$n` the text ties to a column (_placeholders.ts) takes the
 * size of that column's values, measured by sample.ts on a few of its rows (only sizes leave the
 * server); the rest keep the log context's constant length.
 */
import type { Catalog } from "./_catalog.ts";
import { placeholderColumns } from "./_placeholders.ts";
import type { UnsizedValues } from "./_snapshot-rates.ts";
import { type RelationLookup, tokenize } from "./_sql.ts";
import type { ParamValue } from "./types.ts";

/** Means over a column's values as text: bytes, double quotes, single quotes, and the share pgaudit's CSV quotes. */
export interface ValueSize {
  bytes: number;
  quotes: number;
  singleQuotes: number;
  quoted: number;
}

export const columnKey = (relation: string, column: string): string => `${relation}\u0000${column}`;

/** The columns whose values' sizes the statements need: relation and column, deduplicated. */
export function columnsToSize(
  unsized: UnsizedValues[],
  lookup: RelationLookup,
): Array<{ relation: string; column: string }> {
  const out = new Map<string, { relation: string; column: string }>();
  for (const u of unsized)
    for (const c of placeholderColumns(u.load.text, lookup).values())
      out.set(columnKey(c.relation, c.column), c);
  return [...out.values()];
}

/** Types whose constants are written bare (no quotes) in SQL. */
const BARE = /^(smallint|integer|bigint|numeric|real|double precision|boolean|oid)\b/;

/**
 * Sets each statement's parameter values (`paramValues`) or its running text's size
 * (`observed`) from the columns' sizes; returns how many it could size from no column at all.
 */
export function applyValueSizes(
  unsized: UnsizedValues[],
  sizes: Map<string, ValueSize>,
  catalog: Catalog,
  lookup: RelationLookup,
  constantLength: number,
): { unsized: number } {
  const types = new Map<string, string>();
  for (const t of catalog.tables)
    for (const c of t.columns) types.set(columnKey(t.qualified, c.name), c.type);
  let blind = 0;
  for (const { load, values } of unsized) {
    const columns = placeholderColumns(load.text, lookup);
    const all = tokenize(load.text).filter((t) => t.type === "param");
    // Bind parameters are `$1`…`$k` (the constants pg_stat_statements replaced come after);
    // a literal's text is sized whole.
    const number = (p: { value: string }): number => Number(p.value.slice(1));
    const params =
      values === "parameters"
        ? [
            ...new Map(all.filter((p) => number(p) <= (load.params ?? 0)).map((p) => [p.value, p])).values(),
          ].sort((a, b) => number(a) - number(b))
        : all;
    const sized = params.map((p) => {
      const c = columns.get(p.value);
      const key = c ? columnKey(c.relation, c.column) : "";
      return { size: sizes.get(key), bare: BARE.test(types.get(key) ?? "") };
    });
    if (sized.every((s) => !s.size)) blind++;
    const literal = ({ size, bare }: (typeof sized)[number]): number =>
      !size ? constantLength : bare ? size.bytes : size.bytes + 2 + size.singleQuotes;
    if (values === "parameters") {
      // pgaudit prints them in $n order.
      load.paramValues = sized.map(
        ({ size }): ParamValue =>
          size
            ? { bytes: round(size.bytes), quotes: round(size.quotes), quoted: round(size.quoted) }
            : { bytes: constantLength, quotes: 0, quoted: 0 },
      );
      // The constants pg_stat_statements numbered after them are in the text as written.
      const constants = all.filter((p) => number(p) > (load.params ?? 0));
      if (constants.length > 0) {
        const sizedConstants = constants.map((p) => {
          const c = columns.get(p.value);
          const key = c ? columnKey(c.relation, c.column) : "";
          return { size: sizes.get(key), bare: BARE.test(types.get(key) ?? "") };
        });
        load.observed = textWith(load.text, constants, sizedConstants.map(literal), sizedConstants);
      }
      continue;
    }
    load.observed = textWith(load.text, params, sized.map(literal), sized);
  }
  return { unsized: blind };
}

const round = (x: number): number => Math.round(x * 100) / 100;

/** The size of `text` with each placeholder of `params` written as a literal of those bytes. */
function textWith(
  text: string,
  params: ReadonlyArray<{ value: string }>,
  bytes: number[],
  sized: ReadonlyArray<{ size?: ValueSize }>,
): { bytes: number; quotes: number } {
  const placeholderBytes = params.reduce((n, p) => n + p.value.length, 0);
  return {
    bytes: round(Buffer.byteLength(text) - placeholderBytes + bytes.reduce((a, b) => a + b, 0)),
    quotes: round(sized.reduce((n, s) => n + (s.size?.quotes ?? 0), 0)),
  };
}
