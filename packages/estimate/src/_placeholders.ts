/**
 * Which column each `$n` of a statement stands for, where the SQL says so plainly: an INSERT's
 * VALUES item, `column = $n` (SET or a comparison), `$n = column`, `column IN ($n, …)`. A value's size then comes
 * from that column's values (sample.ts measures them): what a bind parameter or a constant too
 * long for pg_stat_activity holds is seen nowhere else before pgaudit is on.
 */
import { qualifiedName, type RelationLookup, type Token, tokenize } from "./_sql.ts";

export interface PlaceholderColumn {
  /** The relation, qualified as pgaudit prints it. */
  relation: string;
  column: string;
}

const isName = (t: Token | undefined): t is Token =>
  t !== undefined && (t.type === "ident" || t.type === "qident");

/** Words after which a relation is named. */
const RELATION_BEFORE = new Set(["from", "join", "into", "update", "using"]);
const COMPARISONS = new Set(["=", "<", ">"]);
const OPERATOR_START = new Set(["<", ">", "!"]);

interface Named {
  relation: string;
  columns: string[];
}

/** The relations a statement names, by alias and by bare name. */
function namedRelations(
  tokens: Token[],
  lookup: RelationLookup,
): { byName: Map<string, Named>; all: Named[] } {
  const byName = new Map<string, Named>();
  const all: Named[] = [];
  tokens.forEach((t, i) => {
    if (t.type !== "ident" || !RELATION_BEFORE.has(t.value)) return;
    let at = i + 1;
    if (tokens[at]?.value === "only") at++;
    const a = tokens[at];
    if (!isName(a)) return;
    let schema: string | null = null;
    let name = a.value;
    let next = at + 1;
    if (tokens[next]?.value === "." && isName(tokens[next + 1])) {
      schema = name;
      name = tokens[next + 1]!.value;
      next += 2;
    }
    const rel = lookup.find(schema, name);
    if (!rel) return;
    const named = { relation: qualifiedName(rel.schema, rel.name), columns: rel.columns };
    all.push(named);
    byName.set(name, named);
    const aliasToken = tokens[next]?.value === "as" ? tokens[next + 1] : tokens[next];
    if (isName(aliasToken)) byName.set(aliasToken.value, named);
  });
  return { byName, all };
}

/** The column reference ending at token `end` (`col` or `qualifier.col`), resolved. */
function columnAt(
  tokens: Token[],
  end: number,
  relations: { byName: Map<string, Named>; all: Named[] },
): PlaceholderColumn | undefined {
  const t = tokens[end];
  if (!isName(t)) return undefined;
  if (tokens[end - 1]?.value === "." && isName(tokens[end - 2])) {
    const rel = relations.byName.get(tokens[end - 2]!.value);
    return rel?.columns.includes(t.value) ? { relation: rel.relation, column: t.value } : undefined;
  }
  const rel = relations.all.find((r) => r.columns.includes(t.value));
  return rel ? { relation: rel.relation, column: t.value } : undefined;
}

/** The index after a `$n` and any `::type` casts that follow it. */
function afterCasts(tokens: Token[], at: number): number {
  let i = at + 1;
  while (tokens[i]?.value === ":" && tokens[i + 1]?.value === ":" && isName(tokens[i + 2])) {
    i += 3;
    while (tokens[i]?.value === "[" && tokens[i + 1]?.value === "]") i += 2;
  }
  return i;
}

/** The columns an INSERT's VALUES items fill, by the `$n` that is the whole item. */
function insertValues(
  tokens: Token[],
  relations: { byName: Map<string, Named>; all: Named[] },
): Map<string, PlaceholderColumn> {
  const out = new Map<string, PlaceholderColumn>();
  const into = tokens.findIndex((t) => t.type === "ident" && t.value === "into");
  if (into < 0 || tokens[0]?.value !== "insert") return out;
  const target = relations.all[0];
  if (!target) return out;
  let at = tokens.findIndex(
    (t, i) => i > into && t.type === "ident" && (t.value === "values" || t.value === "select"),
  );
  if (at < 0 || tokens[at]!.value !== "values") return out;
  // The column list, if any: between the target's name and VALUES.
  const open = tokens.findIndex((t, i) => i > into && i < at && t.value === "(");
  const columns: string[] = [];
  if (open >= 0)
    for (let i = open + 1; i < at && tokens[i]!.value !== ")"; i++)
      if (isName(tokens[i]) && tokens[i - 1]?.value !== ".") columns.push(tokens[i]!.value);
  const list = columns.length > 0 ? columns : target.columns;
  at++;
  while (tokens[at]?.value === "(") {
    let item = 0;
    let depth = 0;
    let i = at + 1;
    for (; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t.value === "(" || t.value === "[") depth++;
      else if (t.value === "]") depth--;
      else if (t.value === ")") {
        if (depth-- === 0) break;
      } else if (t.value === "," && depth === 0) item++;
      else if (t.type === "param" && depth === 0) {
        const prev = tokens[i - 1]!.value;
        const next = tokens[afterCasts(tokens, i)]?.value;
        const column = list[item];
        if ((prev === "(" || prev === ",") && (next === "," || next === ")") && column)
          out.set(t.value, { relation: target.relation, column });
      }
    }
    if (tokens[i + 1]?.value !== ",") break;
    at = i + 2;
  }
  return out;
}

/** The `(` of the list whose item token `at` is, when the tokens before it back to `(` are items at one depth. */
function listOpen(tokens: Token[], at: number): number | undefined {
  let depth = 0;
  for (let j = at - 1; j >= 0; j--) {
    const v = tokens[j]!.value;
    if (v === ")") depth++;
    else if (v === "(") {
      if (depth === 0) return j;
      depth--;
    }
  }
  return undefined;
}

/** Per `$n`, the column its value goes into or is compared with, where the text says so. */
export function placeholderColumns(sql: string, lookup: RelationLookup): Map<string, PlaceholderColumn> {
  const tokens = tokenize(sql);
  if (!tokens.some((t) => t.type === "param")) return new Map();
  const relations = namedRelations(tokens, lookup);
  const out = insertValues(tokens, relations);
  tokens.forEach((t, i) => {
    if (t.type !== "param" || out.has(t.value)) return;
    // `column = $n` (also <, >, <=, >=, <>)
    if (COMPARISONS.has(tokens[i - 1]?.value ?? "")) {
      // Operators come one character per token: `<=`, `>=`, `<>`, `!=` are two.
      const op = OPERATOR_START.has(tokens[i - 2]?.value ?? "") ? i - 2 : i - 1;
      const column = columnAt(tokens, op - 1, relations);
      if (column) {
        out.set(t.value, column);
        return;
      }
    }
    // `column IN ($n, $m, …)`: each item that is a `$n` alone.
    const after = afterCasts(tokens, i);
    const open = listOpen(tokens, i);
    const alone =
      ["(", ","].includes(tokens[i - 1]?.value ?? "") && [",", ")"].includes(tokens[after]?.value ?? "");
    if (alone && open !== undefined && tokens[open - 1]?.value === "in") {
      const column = columnAt(tokens, open - 2, relations);
      if (column) {
        out.set(t.value, column);
        return;
      }
    }
    // `$n = column`
    if (tokens[after]?.value === "=") {
      const end = isName(tokens[after + 1]) && tokens[after + 2]?.value === "." ? after + 3 : after + 1;
      const column = columnAt(tokens, end, relations);
      if (column) out.set(t.value, column);
    }
  });
  return out;
}
