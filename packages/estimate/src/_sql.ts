/**
 * Just enough SQL reading to tell what a statement does and which relations and columns it
 * touches, from pg_stat_statements' text and the catalog. A heuristic over tokens, not a parser:
 * it is right for the DML applications send (one target, FROM/JOIN lists, column lists) and says
 * "every column" when it cannot tell.
 */
import { lexSql } from "@auditpipe/parse";
import type { SqlFunction } from "./_catalog.ts";
import { utilityClass as utilityClassOf } from "./_entries.ts";
import type { ObjectType, Privilege, RelationUse, StatementKind } from "./types.ts";

export interface Token {
  /** `ident` (unquoted, lower-cased), `qident` (quoted, as written), `op`, `num`, `str`, `param`. */
  type: "ident" | "qident" | "op" | "num" | "str" | "param";
  value: string;
}

/** The text of a quoted identifier: `"a""b"` → `a"b` (a `U&"…"` one keeps its escapes as written). */
function unquoteIdent(text: string): string {
  const body = text.startsWith("U&") || text.startsWith("u&") ? text.slice(2) : text;
  const close = body.lastIndexOf('"');
  return body.slice(1, close > 0 ? close : undefined).replaceAll('""', '"');
}

/**
 * Tokens of `sql` through the workspace's one SQL lexer (PostgreSQL's scan.l rules: E'' escapes,
 * nested comments, any dollar-quote tag); comments and whitespace dropped, strings and quoted
 * identifiers kept whole, operators and punctuation one character per token.
 */
export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  for (const token of lexSql(sql)) {
    const text = sql.slice(token.start, token.end);
    switch (token.kind) {
      case "whitespace":
      case "comment":
        break;
      case "identifier":
        out.push({ type: "ident", value: text.toLowerCase() });
        break;
      case "quoted-identifier":
        out.push({ type: "qident", value: unquoteIdent(text) });
        break;
      case "string":
        out.push({ type: "str", value: text });
        break;
      case "number":
        out.push({ type: "num", value: text });
        break;
      case "parameter":
        out.push({ type: "param", value: text });
        break;
      default:
        for (const char of text) out.push({ type: "op", value: char });
    }
  }
  return out;
}

const isName = (t: Token | undefined): t is Token =>
  t !== undefined && (t.type === "ident" || t.type === "qident");

/** A relation of the catalog as the estimator needs it. */
export interface CatalogRelation {
  schema: string;
  name: string;
  columns: string[];
  /** A view's base relations, qualified. */
  viewOf?: string[];
  /**
   * What reading a view brings into the range table: the view itself as a privilege-less entry,
   * its base relations, and a base that is a view again with its own, all the way down.
   */
  viewExpansion?: RelationUse[];
  /** pgaudit's object type other than TABLE and VIEW (a materialized view, a foreign table). */
  objectType?: ObjectType;
  /** A partitioned table's leaf partitions, qualified. */
  partitions?: string[];
  /** Columns leading an index. */
  indexLeads?: string[];
  /** User functions its writes call without naming them (CHECK, DEFAULT, generated, index, domain). */
  implicitCalls?: ImplicitCall[];
}

/**
 * A user function a write to a table calls without the statement naming it: pgaudit logs one
 * FUNCTION entry per statement that initialises the expression (measured on PostgreSQL 15 +
 * pgaudit 1.7, packages/estimate/test/implicit-functions.test.ts).
 */
export interface ImplicitCall {
  function: string;
  /** Where the table calls it. */
  on: "check" | "default" | "generated" | "index" | "domain";
  /** The column with the default or domain; the columns a generated column or an index reads. */
  columns: string[];
}

/** A FUNCTION entry a write statement adds; `needsRows`: only when it writes a row. */
export interface ImplicitFunction {
  name: string;
  needsRows: boolean;
}

/**
 * Which implicit calls one INSERT or UPDATE makes (`written`: the columns it fills or sets,
 * undefined for every column; `rows`, an INSERT's VALUES rows). An INSERT: each CHECK and index
 * expression once it writes a row, each generated column's at its start, each written domain
 * column's once per VALUES row, each default of a column it leaves out. An UPDATE: each CHECK once it writes a row, an index expression over a
 * set column once it writes a row, a generated column over a set column and a set domain column
 * at its start.
 */
export function implicitFunctions(
  calls: readonly ImplicitCall[],
  write: "INSERT" | "UPDATE",
  written: readonly string[] | undefined,
  rows = 1,
): ImplicitFunction[] {
  const sets = (columns: string[]): boolean =>
    written === undefined || columns.some((c) => written.includes(c));
  const out: ImplicitFunction[] = [];
  for (const c of calls) {
    const fires =
      c.on === "check" ||
      (c.on === "default" && write === "INSERT" && written !== undefined && !sets(c.columns)) ||
      (c.on === "generated" && (write === "INSERT" || sets(c.columns))) ||
      (c.on === "index" && (write === "INSERT" || sets(c.columns))) ||
      (c.on === "domain" && sets(c.columns));
    if (!fires) continue;
    // A domain's CHECK is an expression of each VALUES row (each coerces its own value).
    for (let i = c.on === "domain" ? rows : 1; i > 0; i--)
      out.push({ name: c.function, needsRows: c.on === "check" || c.on === "index" });
  }
  return out;
}

/** Looks up a (possibly qualified) name the way search_path `"$user", public` would. */
export interface RelationLookup {
  find(schema: string | null, name: string): CatalogRelation | undefined;
  /** A user function or procedure by (possibly qualified) name, qualified as pgaudit prints it. */
  findFunction?(schema: string | null, name: string): string | undefined;
  /** An SQL function the planner may inline (catalog's sqlFunctions), by qualified name. */
  sqlFunction?(qualified: string): SqlFunction | undefined;
}

/** `schema.name` as quote_qualified_identifier prints it (quotes only where needed). */
export function qualifiedName(schema: string, name: string): string {
  return `${quoteIdentIfNeeded(schema)}.${quoteIdentIfNeeded(name)}`;
}

/** PostgreSQL's quote_identifier: quotes unless lower-case letters, digits and `_` (not leading a digit). */
export function quoteIdentIfNeeded(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) && !RESERVED.has(name) ? name : quoteIdent(name);
}

/** Always double-quoted, embedded quotes doubled: safe for any name in generated SQL. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A SQL string literal, embedded quotes doubled (standard_conforming_strings is on since 9.1). */
export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

const RESERVED = new Set(
  "all analyse analyze and any array as asc asymmetric both case cast check collate column constraint create current_catalog current_date current_role current_time current_timestamp current_user default deferrable desc distinct do else end except false fetch for foreign from grant group having in initially intersect into lateral leading limit localtime localtimestamp not null offset on only or order placing primary references returning select session_user some symmetric table then to trailing true union unique user using variadic when where window with".split(
    " ",
  ),
);

/** The command tag PostgreSQL gives a utility statement, from its first words. */
function utilityTag(words: string[]): string {
  const [a = "", b = "", c = ""] = words;
  if (a === "end") return "COMMIT";
  if (a === "abort") return "ROLLBACK";
  if (a === "start") return "START TRANSACTION";
  if (a === "rollback" && b === "to") return "ROLLBACK";
  if (a === "prepare" && b === "transaction") return "PREPARE TRANSACTION";
  if ((a === "commit" || a === "rollback") && b === "prepared") return `${a.toUpperCase()} PREPARED`;
  if (a === "import") return "IMPORT FOREIGN SCHEMA";
  if (a === "security") return "SECURITY LABEL";
  if (a === "comment") return "COMMENT";
  if (a === "alter" && b === "default") return "ALTER DEFAULT PRIVILEGES";
  if ((a === "create" || a === "alter" || a === "drop") && b === "user" && c === "mapping")
    return `${a.toUpperCase()} USER MAPPING`;
  if (a === "create" || a === "alter" || a === "drop") {
    const skip = new Set(["or", "replace", "unique", "temporary", "temp", "unlogged", "global", "local"]);
    const rest = words.slice(1).filter((w) => !skip.has(w));
    const two = rest[0] === "foreign" || rest[0] === "event" || rest[0] === "materialized";
    const object = two ? `${rest[0]} ${rest[1]}` : (rest[0] ?? "");
    // CREATE TABLE … AS SELECT (not a generated column's `AS IDENTITY`): its own tag.
    const as = words.indexOf("as");
    if (a === "create" && object === "table" && as > 0 && QUERY_STARTS.has(words[as + 1] ?? ""))
      return "CREATE TABLE AS";
    return `${a} ${object}`.toUpperCase();
  }
  if (a === "set" && (b === "local" || b === "session")) return "SET";
  if (a === "set" && b === "constraints") return "SET CONSTRAINTS";
  if (a === "copy") return "COPY";
  if (a === "truncate") return "TRUNCATE TABLE";
  if (a === "lock") return "LOCK TABLE";
  if (a === "declare") return "DECLARE CURSOR";
  if (a === "close") return b === "all" ? "CLOSE CURSOR ALL" : "CLOSE CURSOR";
  if (a === "refresh") return "REFRESH MATERIALIZED VIEW";
  if (a === "discard") return `DISCARD ${b === "temporary" ? "TEMP" : b}`.toUpperCase().trim();
  if (a === "deallocate" && (b === "all" || c === "all")) return "DEALLOCATE ALL";
  return a.toUpperCase();
}

/** Words that start a query (after CREATE TABLE … AS, PREPARE … AS, EXPLAIN). */
const QUERY_STARTS = new Set(["select", "with", "values", "table", "execute"]);

export interface StatementShape {
  kind: StatementKind;
  /** Command tag (utility statements; DML's is the kind). */
  command: string;
  /** pgAudit class of a utility statement: MISC, MISC_SET, DDL, ROLE, WRITE, READ, FUNCTION. */
  utilityClass?: string;
  relations: RelationUse[];
  /** `$n` placeholders in the text. */
  placeholders: number;
  /** User functions and procedures called (pgaudit's FUNCTION class), qualified. */
  functions: string[];
  /** Functions its writes call without naming them (ImplicitCall): one entry each per call. */
  implicitFunctions?: ImplicitFunction[];
  /**
   * A utility statement's query (CREATE TABLE AS, CREATE MATERIALIZED VIEW, DECLARE CURSOR,
   * COPY (query) TO): the relations it reads, logged as its READ entry before the utility's own.
   */
  queryRelations?: RelationUse[];
}

/** Schemas whose relations are PostgreSQL's own, never in the catalog the sampler reads. */
const CATALOG_SCHEMAS = new Set(["pg_catalog", "information_schema"]);

/**
 * Whether a relation pgaudit names is in the system schema, whose entries pgaudit.log_catalog =
 * off leaves out (IsSystemNamespace: pg_catalog only; information_schema's views are logged,
 * measured on a real server).
 */
export const isSystemRelation = (qualified: string): boolean => qualified.startsWith("pg_catalog.");

/** What a statement is and which relations it touches, resolved against the catalog. */
export function analyzeStatement(sql: string, lookup: RelationLookup): StatementShape {
  const tokens = tokenize(sql);
  const placeholders = tokens.filter((t) => t.type === "param").length;
  const words = tokens.filter((t) => t.type === "ident").map((t) => t.value);
  // A leading WITH: the statement kind is the top-level DML after the CTEs (their own DML, a
  // data-modifying CTE's, is inside parentheses).
  // A query in parentheses (`(SELECT …) UNION (SELECT …)`, as ORMs write set operations) is a SELECT.
  let lead = 0;
  while (tokens[lead]?.value === "(") lead++;
  let first = tokens[lead]?.type === "ident" ? tokens[lead]!.value : "";
  if (lead > 0 && first !== "select" && first !== "values" && first !== "table" && first !== "with")
    first = "";
  if (first === "with") first = topLevelVerb(tokens);
  if (first === "values" || first === "table") first = "select";
  const dml: Record<string, StatementKind> = {
    select: "SELECT",
    insert: "INSERT",
    update: "UPDATE",
    delete: "DELETE",
  };
  const { functions, inlined } = functionCalls(tokens, lookup);
  if (first === "merge") {
    // pgaudit's ExecutorStart knows no MERGE: the statement is MISC `???` (its relations are
    // classed by their privileges as for any DML); its kind is the target's command.
    const relations = dmlRelations(tokens, "UPDATE", lookup);
    const kind = relations.find((r) => r.write)?.write ?? "UPDATE";
    return { kind, command: "MERGE", relations, placeholders, functions };
  }
  // SELECT … INTO new_table: CREATE TABLE AS by another name (pgaudit: its query's READ, then
  // DDL `SELECT INTO`). A PL/pgSQL `SELECT … INTO var` reaches the server without its INTO.
  if (first === "select" && lead === 0 && topLevelInto(tokens))
    return {
      kind: "UTILITY",
      command: "SELECT INTO",
      utilityClass: "DDL",
      relations: [],
      placeholders,
      queryRelations: dmlRelations(tokens, "SELECT", lookup),
      functions,
    };
  const kind = dml[first];
  // Of utility statements only CALL executes what it names (DDL that mentions a function does not).
  if (kind === undefined)
    return {
      ...utilityShape(sql, tokens, words, placeholders, lookup),
      functions: words[0] === "call" ? functions : [],
    };
  const implicit: ImplicitFunction[] = [];
  return {
    kind,
    command: kind,
    relations: [...dmlRelations(tokens, kind, lookup, implicit), ...inlined],
    placeholders,
    functions,
    ...(implicit.length > 0 ? { implicitFunctions: implicit } : {}),
  };
}

const VERBS = new Set(["select", "insert", "update", "delete", "merge", "values", "table"]);

/** The first DML keyword outside parentheses after a WITH list: the statement's own. */
function topLevelVerb(tokens: Token[]): string {
  let depth = 0;
  for (let i = 1; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.value === "(") depth++;
    else if (t.value === ")") depth--;
    else if (depth === 0 && t.type === "ident" && VERBS.has(t.value)) return t.value;
  }
  return "";
}

/**
 * Names followed by `(` that are user functions: each is one FUNCTION entry per call, unless the
 * planner inlines it (PostgreSQL 15's inline_function, inline_set_returning_function): an SQL
 * function that is not SECURITY DEFINER and has no SET clause, either set-returning, alone in
 * FROM, neither STRICT nor VOLATILE — its body's tables join the caller's range table —, or
 * scalar with a body that is one expression (`SELECT $1 + 1`, no table). An inlined function is
 * never executed, so pgaudit writes no FUNCTION entry for it.
 */
function functionCalls(
  tokens: Token[],
  lookup: RelationLookup,
): { functions: string[]; inlined: RelationUse[] } {
  const functions: string[] = [];
  const inlined: RelationUse[] = [];
  if (!lookup.findFunction) return { functions, inlined };
  for (let i = 0; i < tokens.length; i++) {
    if (!isName(tokens[i]) || tokens[i + 1]?.value !== "(") continue;
    const qualified = tokens[i - 1]?.value === "." && isName(tokens[i - 2]);
    const found = lookup.findFunction(qualified ? tokens[i - 2]!.value : null, tokens[i]!.value);
    if (!found) continue;
    const sql = lookup.sqlFunction?.(found);
    const before = tokens[qualified ? i - 3 : i - 1]?.value ?? "";
    const inFrom = before === "from" || before === "join" || before === "," || before === "lateral";
    if (sql?.returnsSet && inFrom && !sql.strict && !sql.volatile) {
      inlined.push(...analyzeStatement(sql.body, lookup).relations.filter((r) => !r.write));
      continue;
    }
    if (
      sql &&
      !sql.returnsSet &&
      /^\s*select\b/i.test(sql.body) &&
      !/\b(from|where|group|having|limit|union|order)\b/i.test(sql.body)
    )
      continue;
    functions.push(found);
  }
  return { functions, inlined };
}

function utilityShape(
  text: string,
  tokens: Token[],
  words: string[],
  placeholders: number,
  lookup: RelationLookup,
): Omit<StatementShape, "functions"> {
  const a = words[0] ?? "";
  const command = utilityTag(words);
  const utilityClass = utilityClassOf(command, text);
  const relations: RelationUse[] = [];
  // COPY of a table (not of a query): its relation is checked as a SELECT's (TO) or an
  // INSERT's (FROM) would be, and pgaudit logs it so (dmlEntries, under COPY's own class).
  if (a === "copy" && isName(tokens[1])) {
    const rel = resolve(tokens, 1, lookup);
    if (rel)
      relations.push({
        relation: rel.name,
        ...(utilityClass === "WRITE" ? { write: "INSERT" as const } : {}),
        ...(rel.catalog ? { catalog: true } : {}),
      });
  }
  // A query's READ entry is logged whether or not its relations are known (a temporary table).
  const query = utilityQuery(text, command);
  return {
    kind: "UTILITY",
    command,
    utilityClass,
    relations,
    placeholders,
    ...(query ? { queryRelations: analyzeStatement(query, lookup).relations } : {}),
  };
}

/**
 * The query a utility statement runs through the executor (pgaudit logs it as a READ, with the
 * utility's text): CREATE TABLE/MATERIALIZED VIEW … AS, DECLARE … FOR, COPY (…) TO.
 */
export function utilityQuery(text: string, command: string): string | undefined {
  const starts = "(select|with|values|table)\\b";
  const after = (pattern: RegExp): string | undefined => {
    const m = pattern.exec(text);
    return m ? text.slice(m.index + m[0].length - m[1]!.length) : undefined;
  };
  if (command === "CREATE TABLE AS" || command === "CREATE MATERIALIZED VIEW")
    return after(new RegExp(`\\bas\\s+\\(?\\s*${starts}`, "i"))?.replace(
      /\s+with\s+(no\s+)?data\s*;?\s*$/i,
      "",
    );
  if (command === "DECLARE CURSOR") return after(new RegExp(`\\bfor\\s+${starts}`, "i"));
  if (command === "COPY" && /^\s*copy\s*\(/i.test(text)) {
    const open = text.indexOf("(");
    const close = text.lastIndexOf(")");
    return close > open ? text.slice(open + 1, close) : undefined;
  }
  return undefined;
}

interface Resolved {
  name: string;
  /** The name as written, unqualified (a locking clause's OF may name it). */
  bare: string;
  /** The alias that follows it, if any. */
  alias?: string;
  columns: string[];
  catalog: boolean;
  next: number;
  viewOf?: string[];
  partitions?: string[];
  indexLeads?: string[];
  implicitCalls?: ImplicitCall[];
  viewExpansion?: RelationUse[];
  objectType?: ObjectType;
}

/** pgaudit's object type for a resolved relation, when not TABLE. */
const objectTypeOf = (rel: Resolved): { objectType?: ObjectType } =>
  rel.viewOf ? { objectType: "VIEW" } : rel.objectType ? { objectType: rel.objectType } : {};

function resolve(tokens: Token[], at: number, lookup: RelationLookup): Resolved | undefined {
  const a = tokens[at];
  if (!isName(a)) return undefined;
  let schema: string | null = null;
  let name = a.value;
  let next = at + 1;
  if (tokens[at + 1]?.value === "." && isName(tokens[at + 2])) {
    schema = a.value;
    name = tokens[at + 2]!.value;
    next = at + 3;
  }
  const rel = lookup.find(schema, name);
  const named = { bare: name, ...aliasAt(tokens, next) };
  if (!rel) {
    if (schema !== null && CATALOG_SCHEMAS.has(schema))
      return {
        name: qualifiedName(schema, name),
        ...named,
        columns: [],
        catalog: schema === "pg_catalog",
        next,
      };
    if (schema === null && name.startsWith("pg_"))
      return { name: qualifiedName("pg_catalog", name), ...named, columns: [], catalog: true, next };
    return undefined;
  }
  return {
    name: qualifiedName(rel.schema, rel.name),
    ...named,
    columns: rel.columns,
    catalog: rel.schema === "pg_catalog",
    next,
    ...(rel.viewOf ? { viewOf: rel.viewOf } : {}),
    ...(rel.partitions ? { partitions: rel.partitions } : {}),
    ...(rel.indexLeads ? { indexLeads: rel.indexLeads } : {}),
    ...(rel.implicitCalls ? { implicitCalls: rel.implicitCalls } : {}),
    ...(rel.viewExpansion ? { viewExpansion: rel.viewExpansion } : {}),
    ...(rel.objectType ? { objectType: rel.objectType } : {}),
  };
}

/** Words that can follow a relation in a FROM list and are not its alias. */
const NOT_ALIAS = new Set([
  "as",
  "join",
  "inner",
  "left",
  "right",
  "full",
  "cross",
  "natural",
  "lateral",
  "tablesample",
  "default",
  "returning",
  "only",
]);

/** The alias after a relation name (`orders o`, `orders AS o`), if any. */
function aliasAt(tokens: Token[], at: number): { alias?: string } {
  const t = tokens[at];
  const alias = t?.value === "as" ? tokens[at + 1] : t;
  if (
    !isName(alias) ||
    (alias.type === "ident" && (NOT_ALIAS.has(alias.value) || CLAUSE_END.has(alias.value)))
  )
    return {};
  return { alias: alias.value };
}

const LOCK_STRENGTHS = ["no key update", "key share", "update", "share"];

/**
 * The row-locking clause (`FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`):
 * null when there is none, the names after OF when it has them, else [] (every relation).
 * A locked relation needs UPDATE as well as SELECT (ACL_SELECT_FOR_UPDATE).
 */
function lockingClause(tokens: Token[]): string[] | null {
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i]!.type !== "ident" || tokens[i]!.value !== "for") continue;
    const words = tokens
      .slice(i + 1, i + 4)
      .map((t) => (t.type === "ident" ? t.value : ""))
      .join(" ");
    const strength = LOCK_STRENGTHS.find((w) => words === w || words.startsWith(`${w} `));
    if (strength === undefined) continue;
    let j = i + 1 + strength.split(" ").length;
    if (tokens[j]?.value !== "of") return [];
    const names: string[] = [];
    for (j++; isName(tokens[j]); j += 2) {
      // OF a, schema.b: the last part of each name.
      while (tokens[j + 1]?.value === "." && isName(tokens[j + 2])) j += 2;
      names.push(tokens[j]!.value);
      if (tokens[j + 1]?.value !== ",") break;
    }
    return names;
  }
  return null;
}

/**
 * A DML statement's target as pgaudit checks it (the range table entry's requiredPerms and
 * selectedCols): an INSERT needs INSERT, and SELECT only when it returns columns; an UPDATE or
 * DELETE needs SELECT too when it reads a column of its target (WHERE, a SET expression,
 * RETURNING) and not otherwise. `columns` are the columns it reads (absent: every column).
 */
function targetUse(tokens: Token[], rel: Resolved, write: NonNullable<RelationUse["write"]>): RelationUse {
  const returning = tokens.findIndex((t) => t.type === "ident" && t.value === "returning");
  const returnsAll = returning >= 0 && tokens.slice(returning + 1).some((t) => t.value === "*");
  // Positions that name a column to be set (`SET a = …, b = …`): written, not read.
  const setTargets = write === "UPDATE" ? setTargetPositions(tokens) : new Set<number>();
  const from = write === "INSERT" ? (returning >= 0 ? returning + 1 : tokens.length) : 0;
  const mentioned = new Set(
    tokens.filter((t, i) => i >= from && isName(t) && !setTargets.has(i)).map((t) => t.value),
  );
  const read = rel.columns.filter((c) => mentioned.has(c));
  const reads = returnsAll || read.length > 0;
  return {
    relation: rel.name,
    write,
    ...(returnsAll ? {} : { columns: read }),
    privileges: reads ? [write, "SELECT"] : [write],
    ...(rel.catalog ? { catalog: true } : {}),
    ...objectTypeOf(rel),
  };
}

const OTHER_AGGREGATES = new Set([
  "count",
  "sum",
  "avg",
  "array_agg",
  "string_agg",
  "json_agg",
  "jsonb_agg",
  "group",
]);

/**
 * min()/max() of an indexed column, alone in its SELECT over one table: the planner answers it
 * with an index scan in a subquery of its own (planagg.c), a copy of the table in the range
 * table that pgaudit logs as one more READ. Planned so once the table is not tiny.
 */
function minMaxCopies(tokens: Token[], lookup: RelationLookup): RelationUse[] {
  const out: RelationUse[] = [];
  for (let i = 0; i + 3 < tokens.length; i++) {
    const f = tokens[i]!;
    if (f.type !== "ident" || (f.value !== "max" && f.value !== "min") || tokens[i + 1]?.value !== "(")
      continue;
    const column = tokens[i + 2];
    if (!isName(column) || tokens[i + 3]?.value !== ")") continue;
    let j = i + 4;
    while (j < tokens.length && tokens[j]!.value !== "from") {
      if (OTHER_AGGREGATES.has(tokens[j]!.value)) break;
      j++;
    }
    if (tokens[j]?.value !== "from") continue;
    const rel = resolve(tokens, j + 1, lookup);
    if (!rel?.indexLeads?.includes(column.value)) continue;
    // One table only: the next token ends the FROM list.
    const after = tokens[rel.next]?.value ?? "";
    if (after === "," || after === "join") continue;
    if (tokens.slice(rel.next).some((t) => t.value === "group")) continue;
    out.push({ relation: rel.name, columns: [column.value] });
  }
  return out;
}

/**
 * What PostgreSQL 15 adds to the range table pgaudit walks: a view's second entry (no
 * privileges) and its base relations (checked as the view's owner); a scanned partitioned
 * table's partitions (no privileges). An INSERT routes to partitions without listing them.
 */
function plannerRelations(rel: Resolved, write: RelationUse["write"], target?: RelationUse): RelationUse[] {
  // Written through (an auto-updatable view): the rewriter makes its base table the target, with
  // the view's privileges to check; no placeholder entry then.
  if (rel.viewOf && write && target)
    return rel.viewOf.map((relation) => {
      const { objectType: _view, ...use } = target;
      return { ...use, relation };
    });
  if (rel.viewOf)
    return (
      rel.viewExpansion ?? [
        { relation: rel.name, objectType: "VIEW", plannerAdded: true },
        ...rel.viewOf.map((relation) => ({ relation })),
      ]
    );
  if (rel.partitions && write !== "INSERT")
    return rel.partitions.map((relation) => ({ relation, plannerAdded: true }));
  return [];
}

const CLAUSE_END = new Set([
  "where",
  "group",
  "order",
  "limit",
  "having",
  "window",
  "returning",
  "on",
  "using",
  "set",
  "values",
  "union",
  "except",
  "intersect",
  "for",
  "offset",
  "fetch",
]);

/** Where `DO UPDATE` of an INSERT's ON CONFLICT clause starts; -1 without one. */
function doUpdateAt(tokens: Token[]): number {
  for (let i = 0; i + 1 < tokens.length; i++)
    if (tokens[i]!.value === "do" && tokens[i + 1]!.value === "update" && tokens[i]!.type === "ident")
      return i;
  return -1;
}

/** Whether the DO UPDATE part reads the target's own row (a column not qualified by EXCLUDED). */
function readsTarget(tokens: Token[], from: number, rel: Resolved): boolean {
  const set = setColumns(tokens.slice(from), rel.columns);
  for (let i = from + 3; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!isName(t) || !rel.columns.includes(t.value)) continue;
    if (tokens[i - 1]?.value === "." && tokens[i - 2]?.value === "excluded") continue;
    // `SET a = …`: the column set, not read.
    if (tokens[i + 1]?.value === "=" && /^(set|,)$/.test(tokens[i - 1]?.value ?? "") && set.includes(t.value))
      continue;
    return true;
  }
  return false;
}

/**
 * ON CONFLICT DO UPDATE's EXCLUDED: PostgreSQL adds the target once more to the range table as a
 * composite type, with SELECT on the columns read through `excluded.` (pgaudit logs it as
 * `READ,SELECT,COMPOSITE TYPE`, object-logged by those columns' grants); with none read it has no
 * privileges to check, and pgaudit logs it as `MISC,???` with log_relation only.
 */
function excludedUse(tokens: Token[], from: number, rel: Resolved): RelationUse {
  const read: string[] = [];
  for (let i = from; i + 2 < tokens.length; i++)
    if (tokens[i]!.value === "excluded" && tokens[i + 1]!.value === "." && isName(tokens[i + 2]))
      read.push(tokens[i + 2]!.value);
  const columns = [...new Set(read)];
  return columns.length > 0
    ? { relation: rel.name, columns, privileges: ["SELECT"], objectType: "COMPOSITE TYPE" }
    : { relation: rel.name, objectType: "COMPOSITE TYPE", plannerAdded: true };
}

/**
 * MERGE's target: pgaudit names it by the privileges checked (INSERT before UPDATE before
 * DELETE), which are every action's and SELECT (the join condition reads it).
 */
function mergeTarget(tokens: Token[], rel: Resolved): RelationUse {
  const actions = new Set<"INSERT" | "UPDATE" | "DELETE">();
  let written: string[] = [];
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i]!.value !== "then") continue;
    const a = tokens[i + 1]!.value;
    if (a === "insert") {
      actions.add("INSERT");
      if (tokens[i + 2]?.value === "(") written.push(...columnList(tokens, i + 2, rel.columns));
      else written = rel.columns;
    } else if (a === "update") {
      actions.add("UPDATE");
      written.push(...setColumns(tokens.slice(i + 1), rel.columns));
    } else if (a === "delete") actions.add("DELETE");
  }
  const write = actions.has("INSERT") ? "INSERT" : actions.has("UPDATE") ? "UPDATE" : "DELETE";
  const updated = actions.has("UPDATE")
    ? setColumns(tokens.slice(tokens.findIndex((t) => t.value === "then")), rel.columns)
    : [];
  const mentioned = new Set(tokens.filter(isName).map((t) => t.value));
  return {
    relation: rel.name,
    write,
    columns: rel.columns.filter((c) => mentioned.has(c)),
    writtenColumns: [...new Set(written)],
    privileges: ["SELECT", ...actions],
    ...(write === "INSERT" ? { upsert: { updatedColumns: updated } } : {}),
    ...(rel.catalog ? { catalog: true } : {}),
  };
}

/** The names a WITH list defines (`WITH a AS (…), b (x) AS (…)`), anywhere in the statement. */
function cteNames(tokens: Token[]): Set<string> {
  const out = new Set<string>();
  tokens.forEach((t, i) => {
    if (
      !isName(t) ||
      (tokens[i - 1]?.value !== "with" &&
        tokens[i - 1]?.value !== "," &&
        tokens[i - 1]?.value !== "recursive")
    )
      return;
    let j = i + 1;
    // A column list: `b (x, y) AS (…)`.
    if (tokens[j]?.value === "(") {
      while (j < tokens.length && tokens[j]!.value !== ")") j++;
      j++;
    }
    if (tokens[j]?.value === "as") out.add(t.value);
  });
  return out;
}

/**
 * An unqualified name in a FROM list that is no catalog relation, no WITH query and no function:
 * a temporary table (the sampler's catalog holds none of another session's), which pgaudit names
 * in the session's own pg_temp_N schema.
 */
function temporaryTable(tokens: Token[], at: number, ctes: Set<string>): Resolved | undefined {
  const t = tokens[at];
  if (
    !isName(t) ||
    t.type !== "ident" ||
    ctes.has(t.value) ||
    NOT_ALIAS.has(t.value) ||
    CLAUSE_END.has(t.value)
  )
    return undefined;
  const next = tokens[at + 1]?.value;
  if (next === "(" || next === "." || t.value.startsWith("pg_") || t.value === "lateral") return undefined;
  return {
    name: qualifiedName("pg_temp_9", t.value),
    bare: t.value,
    ...aliasAt(tokens, at + 1),
    columns: [],
    catalog: false,
    next: at + 1,
  };
}

/** Whether a `*` selects every column (not `count(*)`). */
const hasStar = (tokens: Token[]): boolean =>
  tokens.some((t, i) => t.value === "*" && (i === 0 || tokens[i - 1]?.value !== "("));

/** The tokens of the parenthesised SELECT that token `at` is in, innermost; undefined at the top level. */
function subqueryScope(tokens: Token[], at: number): Token[] | undefined {
  let depth = 0;
  for (let open = at; open >= 0; open--) {
    const v = tokens[open]!.value;
    if (v === ")") depth++;
    else if (v === "(" && depth-- === 0) {
      if (tokens[open + 1]?.value !== "select") return undefined;
      let close = open + 1;
      for (let d = 0; close < tokens.length; close++) {
        const w = tokens[close]!.value;
        if (w === "(") d++;
        else if (w === ")" && d-- === 0) break;
      }
      return tokens.slice(open + 1, close);
    }
  }
  return undefined;
}

function dmlRelations(
  tokens: Token[],
  kind: StatementKind,
  lookup: RelationLookup,
  implicit: ImplicitFunction[] = [],
): RelationUse[] {
  const identifiers = new Set(tokens.filter(isName).map((t) => t.value));
  const star = tokens[0]?.value === "table" || hasStar(tokens);
  const ctes = cteNames(tokens);
  const lock = lockingClause(tokens);
  // One entry per range-table entry: a table named twice (an UPDATE's target read again in a
  // subquery, a self-join) is two, and pgaudit logs each.
  const found: RelationUse[] = [];
  const add = (rel: Resolved, write?: RelationUse["write"], written?: string[]): void => {
    if (write) {
      if (write === "UPDATE" && rel.implicitCalls)
        implicit.push(...implicitFunctions(rel.implicitCalls, write, written));
      const target = { ...targetUse(tokens, rel, write), ...(written ? { writtenColumns: written } : {}) };
      found.push(target, ...plannerRelations(rel, write, target));
      return;
    }
    // A table read in a subquery is read for the columns the subquery names (they are visible
    // nowhere else); elsewhere for every column of it the statement names.
    const scope = subqueryScope(tokens, rel.next - 1);
    const names = scope ? new Set(scope.filter(isName).map((t) => t.value)) : identifiers;
    const all = scope ? hasStar(scope) : star;
    const read = all ? undefined : rel.columns.filter((c) => names.has(c));
    const locked =
      lock !== null &&
      (lock.length === 0 || lock.includes(rel.bare) || (rel.alias !== undefined && lock.includes(rel.alias)));
    found.push({
      relation: rel.name,
      ...(read ? { columns: read } : {}),
      // FOR UPDATE/SHARE needs UPDATE as well, and updates no column (pgaudit: "any column").
      ...(locked ? { locked: true, writtenColumns: [] } : {}),
      ...(rel.catalog ? { catalog: true } : {}),
      ...objectTypeOf(rel),
    });
    found.push(...plannerRelations(rel, write));
  };

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.type !== "ident") continue;
    const v = t.value;
    // A statement's own target, or a data-modifying CTE's (`AS (UPDATE …`, `AS (INSERT INTO …`):
    // each is a range-table entry of its own that pgaudit logs.
    // (`) UPDATE` is the top-level UPDATE after a WITH list.)
    const opens = i === 0 || tokens[i - 1]?.value === "(" || tokens[i - 1]?.value === ")";
    if (v === "table" && (i === 0 || tokens[i - 1]?.value === "(")) {
      // `TABLE t`: SELECT * FROM t.
      const rel = resolve(tokens, i + 1, lookup);
      if (rel) add(rel);
    } else if (v === "merge" && i === 0 && tokens[1]?.value === "into") {
      const rel = resolve(tokens, 2, lookup);
      if (rel) found.push(mergeTarget(tokens, rel), ...plannerRelations(rel, "UPDATE"));
      // USING a table (a subquery's tables are found by their FROM).
      const using = tokens.findIndex((x, j) => j > 2 && x.type === "ident" && x.value === "using");
      const source = using > 0 ? resolve(tokens, using + 1, lookup) : undefined;
      if (source) add(source);
    } else if (opens && v === "update") {
      const at = tokens[i + 1]?.value === "only" ? i + 2 : i + 1;
      const rel = resolve(tokens, at, lookup);
      if (rel) add(rel, "UPDATE", setColumns(tokens, rel.columns));
    } else if (v === "into" && tokens[i - 1]?.value === "insert") {
      const rel = resolve(tokens, i + 1, lookup);
      if (rel) {
        const list = tokens[rel.next]?.value === "(" ? columnList(tokens, rel.next, rel.columns) : undefined;
        const upsert = doUpdateAt(tokens);
        if (upsert < 0) {
          if (rel.implicitCalls)
            implicit.push(
              ...implicitFunctions(
                rel.implicitCalls,
                "INSERT",
                filled(tokens, rel, list),
                valuesRows(tokens, rel.next),
              ),
            );
          add(rel, "INSERT", list);
        } else {
          // INSERT … ON CONFLICT DO UPDATE: the target needs UPDATE too (and SELECT where the
          // update reads it), and EXCLUDED is one more range-table entry (conflictUse).
          const target = targetUse(tokens, rel, "INSERT");
          if (rel.implicitCalls) {
            const rows = valuesRows(tokens, rel.next);
            implicit.push(...implicitFunctions(rel.implicitCalls, "INSERT", filled(tokens, rel, list), rows));
            // DO UPDATE's SET coerces a domain column once more.
            const domains = rel.implicitCalls.filter((c) => c.on === "domain");
            implicit.push(
              ...implicitFunctions(domains, "UPDATE", setColumns(tokens.slice(upsert), rel.columns)),
            );
          }
          const set = setColumns(tokens.slice(upsert), rel.columns);
          const reads = readsTarget(tokens, upsert, rel);
          found.push({
            ...target,
            ...(list ? { writtenColumns: [...new Set([...list, ...set])] } : {}),
            upsert: { updatedColumns: set },
            privileges: [
              ...new Set<Privilege>([
                ...(target.privileges ?? ["INSERT"]),
                "UPDATE",
                ...(reads ? ["SELECT" as const] : []),
              ]),
            ],
          });
          found.push(...plannerRelations(rel, "INSERT"), excludedUse(tokens, upsert, rel));
        }
      }
    } else if (v === "from" && tokens[i - 1]?.value === "delete") {
      const at = tokens[i + 1]?.value === "only" ? i + 2 : i + 1;
      const rel = resolve(tokens, at, lookup);
      if (rel) add(rel, "DELETE");
    } else if (v === "from" || v === "join" || (v === "using" && kind === "DELETE")) {
      // FROM a, b c, schema.d AS e; a join in parentheses, `FROM (a JOIN b ON …) JOIN c`, names
      // its first table after them (the others follow a JOIN).
      let at = tokens[i + 1]?.value === "only" ? i + 2 : i + 1;
      for (;;) {
        at = pastJoinParentheses(tokens, at);
        const rel = resolve(tokens, at, lookup) ?? temporaryTable(tokens, at, ctes);
        if (!rel) break;
        add(rel);
        let j = rel.next;
        while (j < tokens.length && tokens[j]!.value !== "," && !CLAUSE_END.has(tokens[j]!.value)) {
          if (tokens[j]!.value === "join" || tokens[j]!.value === "(") break;
          j++;
        }
        if (tokens[j]?.value !== ",") break;
        at = j + 1;
      }
    }
  }
  found.push(...minMaxCopies(tokens, lookup));
  return found;
}

/** Whether a SELECT has an INTO outside parentheses: SELECT … INTO new_table. */
function topLevelInto(tokens: Token[]): boolean {
  let depth = 0;
  for (const t of tokens) {
    if (t.value === "(") depth++;
    else if (t.value === ")") depth--;
    else if (depth === 0 && t.type === "ident" && t.value === "into") return true;
  }
  return false;
}

/** Past the `(` that open a parenthesised join at `at` (not a subquery's: a query starts after those). */
function pastJoinParentheses(tokens: Token[], at: number): number {
  let k = at;
  while (tokens[k]?.value === "(") k++;
  const next = tokens[k];
  return k > at && next?.type === "ident" && !QUERY_STARTS.has(next.value) && next.value !== "lateral"
    ? k
    : at;
}

/**
 * The columns an INSERT fills: its column list, none for `DEFAULT VALUES`, the leading ones a
 * VALUES row without a list gives (the rest take their defaults), else every column.
 */
function filled(tokens: Token[], rel: Resolved, list: string[] | undefined): string[] | undefined {
  if (list) return list;
  const at = rel.next;
  if (tokens[at]?.value === "default" && tokens[at + 1]?.value === "values") return [];
  if (tokens[at]?.value !== "values" || tokens[at + 1]?.value !== "(") return undefined;
  let items = 1;
  for (let i = at + 2, depth = 0; i < tokens.length; i++) {
    const v = tokens[i]!.value;
    if (v === "(" || v === "[") depth++;
    else if (v === "]") depth--;
    else if (v === ")" && depth-- === 0) break;
    else if (v === "," && depth === 0) items++;
  }
  return rel.columns.slice(0, items);
}

/** The rows of an INSERT's VALUES list (top-level parenthesised groups), 1 for a query. */
function valuesRows(tokens: Token[], from: number): number {
  const at = tokens.findIndex((t, i) => i >= from && t.value === "values");
  if (at < 0 || tokens[at - 1]?.value === "default") return 1;
  let rows = 0;
  for (let i = at + 1, depth = 0; i < tokens.length; i++) {
    const v = tokens[i]!.value;
    if (v === "(") {
      if (depth === 0) rows++;
      depth++;
    } else if (v === ")") depth--;
    else if (depth === 0 && v !== ",") break;
  }
  return Math.max(1, rows);
}

function setColumns(tokens: Token[], columns: string[]): string[] {
  return [...setTargetPositions(tokens)].map((i) => tokens[i]!.value).filter((c) => columns.includes(c));
}

/**
 * Positions of the columns the first SET list names to be set, written and not read: `SET a = …,
 * b = …` and the multi-column `SET (a, b) = (…)` (up to its WHERE, FROM or RETURNING).
 */
function setTargetPositions(tokens: Token[]): Set<number> {
  const targets = new Set<number>();
  const set = tokens.findIndex((t) => t.type === "ident" && t.value === "set");
  let depth = 0;
  for (let i = set + 1; set >= 0 && i < tokens.length; i++) {
    const v = tokens[i]!.value;
    const opensList = v === "(" && depth === 0 && /^(set|,)$/.test(tokens[i - 1]!.value);
    if (opensList) {
      // `(a, b) =`: every name up to the matching `)`.
      const close = tokens.findIndex((t, j) => j > i && t.value === ")");
      if (close > i && tokens[close + 1]?.value === "=") {
        for (let j = i + 1; j < close; j++) if (isName(tokens[j])) targets.add(j);
        i = close;
        continue;
      }
    }
    if (v === "(") depth++;
    else if (v === ")") depth--;
    else if (
      depth === 0 &&
      tokens[i]!.type === "ident" &&
      (v === "where" || v === "from" || v === "returning")
    )
      break;
    if (
      depth === 0 &&
      isName(tokens[i]) &&
      tokens[i + 1]?.value === "=" &&
      /^(set|,)$/.test(tokens[i - 1]!.value)
    )
      targets.add(i);
  }
  return targets;
}

function columnList(tokens: Token[], open: number, columns: string[]): string[] {
  const out: string[] = [];
  for (let i = open + 1; i < tokens.length && tokens[i]!.value !== ")"; i++) {
    const t = tokens[i]!;
    if (isName(t) && columns.includes(t.value)) out.push(t.value);
  }
  return out;
}

/** Resolves every name, as a user table unless it is a catalog one: `analyzeStatement` then lists all relations. */
const ANY_RELATION: RelationLookup = {
  find: (schema, name) =>
    (schema !== null && CATALOG_SCHEMAS.has(schema)) || (schema === null && name.startsWith("pg_"))
      ? undefined
      : { schema: schema ?? "public", name, columns: [] },
};

/**
 * Whether a statement reads system catalogs only (`pg_catalog.*`, an unqualified `pg_*`; not
 * `information_schema.*`, whose views pgaudit logs): pgaudit.log_catalog = off stops its entries. Cheap for the rest: only a
 * text naming such a relation is read.
 */
export function readsOnlyCatalog(sql: string): boolean {
  if (!/pg_|information_schema/i.test(sql)) return false;
  const { relations } = analyzeStatement(sql, ANY_RELATION);
  return relations.length > 0 && relations.every((r) => r.catalog);
}

/** The text with each `$n` placeholder replaced by a constant `length` characters long. */
export function withConstants(sql: string, length: number): string {
  const constant = "9".repeat(Math.max(1, Math.round(length)));
  // Parameters only: a `$1` inside a string, a comment or a dollar quote is text, not a placeholder.
  let out = "";
  let at = 0;
  for (const token of lexSql(sql)) {
    if (token.kind !== "parameter") continue;
    out += sql.slice(at, token.start) + constant;
    at = token.end;
  }
  return out + sql.slice(at);
}

/**
 * The text with its `$n` placeholders replaced by constants sized so the whole text is `bytes`
 * long (UTF-8) and holds `quotes` more double quotes than the placeholders' text: what the
 * statement looked like as it ran (measured on pg_stat_activity), without keeping its values.
 */
export function withConstantBytes(sql: string, bytes: number, quotes: number): string {
  const params = lexSql(sql).filter((t) => t.kind === "parameter");
  if (params.length === 0) {
    // No constant to hold the difference: the rest of a longer string it was sent in.
    const extra = Math.round(bytes) - Buffer.byteLength(sql);
    if (extra <= 0) return sql;
    const q = Math.min(Math.max(0, Math.round(quotes)), extra);
    return sql + '"'.repeat(q) + "9".repeat(extra - q);
  }
  const fixed = Buffer.byteLength(sql) - params.reduce((n, t) => n + (t.end - t.start), 0);
  const per = Math.max(1, (bytes - fixed) / params.length);
  let out = "";
  let at = 0;
  let quotesLeft = Math.max(0, Math.round(quotes));
  params.forEach((t, i) => {
    const length = Math.max(1, Math.round((i + 1) * per) - Math.round(i * per));
    const q = Math.min(quotesLeft, length);
    quotesLeft -= q;
    out += sql.slice(at, t.start) + '"'.repeat(q) + "9".repeat(length - q);
    at = t.end;
  });
  return out + sql.slice(at);
}
