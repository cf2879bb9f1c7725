/** Reading the catalog: tables, columns, types, comments, owners, partitions and foreign keys. */
import type pg from "pg";
import { type CatalogRelation, type ImplicitCall, qualifiedName, type RelationLookup } from "./_sql.ts";
import type { ForeignKey, ObjectType, RelationUse } from "./types.ts";

export interface CatalogColumn {
  name: string;
  type: string;
  comment: string | null;
}

export interface CatalogTable {
  schema: string;
  name: string;
  /** As pgAudit prints it. */
  qualified: string;
  /** pg_class.relkind: r table, p partitioned table, v view, m materialized view, f foreign table. */
  kind: string;
  owner: string;
  comment: string | null;
  /** The partitioned table this is a partition of. */
  partitionOf: string | null;
  rowEstimate: number;
  columns: CatalogColumn[];
  /** A view's base relations (pgaudit logs them with the view under log_relation). */
  viewOf?: string[];
  /** Columns that lead an index (the planner can answer min()/max() of them from it). */
  indexLeads?: string[];
  /** User functions its writes call without naming them: pgaudit logs each (ImplicitCall). */
  implicitCalls?: ImplicitCall[];
}

/** A user trigger: the statements its function runs are nested statements. */
export interface CatalogTrigger {
  table: string;
  name: string;
  /** The trigger function, qualified. */
  function: string;
  events: ("INSERT" | "UPDATE" | "DELETE")[];
  /** `UPDATE OF` these columns only: an UPDATE that sets none of them does not fire it. */
  columns?: string[];
}

export interface SqlFunction {
  body: string;
  returnsSet: boolean;
  strict: boolean;
  volatile: boolean;
}

export interface Catalog {
  tables: CatalogTable[];
  foreignKeys: ForeignKey[];
  /** User functions and procedures (pgaudit writes a FUNCTION entry when one is called), qualified. */
  functions?: string[];
  /**
   * Of those, the SQL functions the planner may inline (`LANGUAGE sql`, not SECURITY DEFINER, no
   * SET clause): their body, whether they return a set, and whether they are STRICT or VOLATILE
   * (which stops a set-returning one being inlined).
   */
  sqlFunctions?: Record<string, SqlFunction>;
  /** User triggers (not foreign keys' own). */
  triggers?: CatalogTrigger[];
  /**
   * Of `functions`, those that run no statement pgaudit would log: C functions (an extension's),
   * and PL/pgSQL whose body names no statement (`NEW.at := now()`, `RETURN $1 > 0`).
   */
  statementFree?: string[];
}

const TAG = "/* auditpipe-estimate */";

const TABLES_SQL = `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS kind,
       pg_get_userbyid(c.relowner) AS owner, obj_description(c.oid, 'pg_class') AS comment,
       (SELECT pn.nspname || '.' || p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
          JOIN pg_namespace pn ON pn.oid = p.relnamespace WHERE i.inhrelid = c.oid AND c.relispartition LIMIT 1) AS parent,
       greatest(c.reltuples, 0)::float8 AS rows,
       coalesce((SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod),
                  'comment', col_description(c.oid, a.attnum)) ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]') AS columns
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
 ORDER BY 1, 2 ${TAG}`;

const FKS_SQL = `SELECT cn.nspname AS child_schema, c.relname AS child, pn.nspname AS parent_schema, p.relname AS parent,
       (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n) AS columns,
       (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
          JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n) AS parent_columns,
       con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update, con.condeferred AS deferred,
       (SELECT bool_or(a.atthasdef) FROM unnest(con.conkey) k(n)
          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n) AS has_default
  FROM pg_constraint con
  JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace cn ON cn.oid = c.relnamespace
  JOIN pg_class p ON p.oid = con.confrelid JOIN pg_namespace pn ON pn.oid = p.relnamespace
 WHERE con.contype = 'f' AND (con.conparentid = 0 OR con.conparentid IS NULL) ${TAG}`;

// A view's rule depends on the relations its query reads (and on the view itself).
const VIEW_BASES_SQL = `SELECT vn.nspname AS vs, v.relname AS v, bn.nspname AS bs, b.relname AS b
  FROM pg_rewrite r JOIN pg_class v ON v.oid = r.ev_class JOIN pg_namespace vn ON vn.oid = v.relnamespace
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
  JOIN pg_class b ON b.oid = d.refobjid AND b.oid <> v.oid JOIN pg_namespace bn ON bn.oid = b.relnamespace
 WHERE v.relkind = 'v' AND r.rulename = '_RETURN'
   AND vn.nspname NOT IN ('pg_catalog', 'information_schema')
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, min(d.objsubid), 3, 4 ${TAG}`;

// Functions and procedures outside the system schemas, an extension's too (uuid-ossp's
// uuid_generate_v4 in public is logged): pgaudit's FUNCTION class logs their calls (it skips
// pg_catalog's, which would make the log "unusably noisy").
const FUNCTIONS_SQL = `SELECT n.nspname AS s, p.proname AS f,
       CASE WHEN l.lanname = 'sql' AND p.prokind = 'f' AND NOT p.prosecdef AND p.proconfig IS NULL THEN p.prosrc END AS body,
       p.proretset AS set, p.proisstrict AS strict, p.provolatile = 'v' AS volatile, l.lanname AS lang,
       CASE WHEN l.lanname = 'plpgsql' THEN p.prosrc END AS plpgsql
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND p.prokind IN ('f', 'p')
 ORDER BY 1, 2 ${TAG}`;

// User functions a write calls without naming them, by table: in CHECK constraints, column
// defaults and generated columns, index expressions and predicates, and domains' CHECKs (with
// the columns each reads or fills, from the dependencies PostgreSQL records).
const IMPLICIT_CALLS_SQL = `WITH fn AS (
  SELECT p.oid, n.nspname AS fs, p.proname AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema'))
SELECT tn.nspname AS s, t.relname AS t, 'check' AS "on", fn.fs, fn.f, NULL::text[] AS columns
  FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
  JOIN pg_depend d ON d.classid = 'pg_constraint'::regclass AND d.objid = con.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN fn ON fn.oid = d.refobjid
 WHERE con.contype = 'c'
UNION ALL
SELECT tn.nspname, t.relname, CASE WHEN a.attgenerated = 's' THEN 'generated' ELSE 'default' END, fn.fs, fn.f,
       CASE WHEN a.attgenerated = 's'
            THEN (SELECT array_agg(b.attname::text) FROM pg_depend db
                    JOIN pg_attribute b ON b.attrelid = t.oid AND b.attnum = db.refobjsubid
                   WHERE db.classid = 'pg_attrdef'::regclass AND db.objid = ad.oid AND db.refclassid = 'pg_class'::regclass
                     AND db.refobjid = t.oid AND db.refobjsubid > 0 AND db.refobjsubid <> ad.adnum)
            ELSE ARRAY[a.attname::text] END
  FROM pg_attrdef ad JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
  JOIN pg_class t ON t.oid = ad.adrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN fn ON fn.oid = d.refobjid
UNION ALL
SELECT tn.nspname, t.relname, 'index', fn.fs, fn.f,
       (SELECT array_agg(b.attname::text) FROM pg_depend db
          JOIN pg_attribute b ON b.attrelid = t.oid AND b.attnum = db.refobjsubid
         WHERE db.classid = 'pg_class'::regclass AND db.objid = i.indexrelid AND db.refclassid = 'pg_class'::regclass
           AND db.refobjid = t.oid AND db.refobjsubid > 0)
  FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid AND d.refclassid = 'pg_proc'::regclass
  JOIN fn ON fn.oid = d.refobjid
UNION ALL
SELECT tn.nspname, t.relname, 'domain', fn.fs, fn.f, ARRAY[a.attname::text]
  FROM pg_attribute a JOIN pg_class t ON t.oid = a.attrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
  JOIN pg_constraint con ON con.contypid = a.atttypid
  JOIN pg_depend d ON d.classid = 'pg_constraint'::regclass AND d.objid = con.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN fn ON fn.oid = d.refobjid
 WHERE a.attnum > 0 AND NOT a.attisdropped
 ORDER BY 1, 2, 3, 4, 5 ${TAG}`;

/** A PL/pgSQL body that names no statement runs none pgaudit logs (simple expressions only). */
const STATEMENT_WORDS =
  /\b(select|insert|update|delete|merge|perform|execute|call|copy|values|table|with|truncate|lock|notify)\b/i;

// User triggers (not the RI triggers PostgreSQL makes for foreign keys): what they run is not
// seen unless nested statements are counted. tgtype bits: 4 INSERT, 8 DELETE, 16 UPDATE.
const TRIGGERS_SQL = `SELECT n.nspname AS s, c.relname AS t, tg.tgname AS name, tg.tgtype::int AS type,
       fn.nspname AS fs, f.proname AS f,
       (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
         WHERE a.attrelid = tg.tgrelid AND a.attnum = ANY (tg.tgattr)) AS columns
  FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_proc f ON f.oid = tg.tgfoid JOIN pg_namespace fn ON fn.oid = f.pronamespace
 WHERE NOT tg.tgisinternal ORDER BY 1, 2, 3 ${TAG}`;

const INDEX_LEADS_SQL = `SELECT n.nspname AS s, c.relname AS t, a.attname AS col
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' ${TAG}`;

const TRIGGER_EVENTS: [number, CatalogTrigger["events"][number]][] = [
  [4, "INSERT"],
  [8, "DELETE"],
  [16, "UPDATE"],
];

const FK_ACTIONS: Record<string, ForeignKey["onDelete"]> = {
  a: "no action",
  r: "restrict",
  c: "cascade",
  n: "set null",
  d: "set default",
};

export async function readCatalog(client: pg.Client): Promise<Catalog> {
  const tables = await client.query(TABLES_SQL);
  const fks = await client.query(FKS_SQL);
  const bases = await client.query(VIEW_BASES_SQL);
  const functions = await client.query(FUNCTIONS_SQL);
  const leads = await client.query(INDEX_LEADS_SQL);
  const triggers = await client.query(TRIGGERS_SQL);
  const implicit = await client.query(IMPLICIT_CALLS_SQL);
  const implicitCalls = new Map<string, ImplicitCall[]>();
  for (const r of implicit.rows) {
    const table = qualifiedName(r.s, r.t);
    const call: ImplicitCall = { function: qualifiedName(r.fs, r.f), on: r.on, columns: r.columns ?? [] };
    implicitCalls.set(table, [...(implicitCalls.get(table) ?? []), call]);
  }
  const indexLeads = new Map<string, string[]>();
  for (const r of leads.rows) {
    const table = qualifiedName(r.s, r.t);
    indexLeads.set(table, [...new Set([...(indexLeads.get(table) ?? []), r.col as string])]);
  }
  const viewOf = new Map<string, string[]>();
  for (const r of bases.rows) {
    const view = qualifiedName(r.vs, r.v);
    viewOf.set(view, [...(viewOf.get(view) ?? []), qualifiedName(r.bs, r.b)]);
  }
  return {
    functions: [...new Set(functions.rows.map((r) => qualifiedName(r.s, r.f)))],
    statementFree: [
      ...new Set(
        functions.rows
          .filter((r) =>
            r.lang === "plpgsql"
              ? !STATEMENT_WORDS.test(r.plpgsql ?? "")
              : r.lang === "c" || r.lang === "internal",
          )
          .map((r) => qualifiedName(r.s, r.f)),
      ),
    ],
    sqlFunctions: Object.fromEntries(
      functions.rows
        .filter((r) => typeof r.body === "string")
        .map((r) => [
          qualifiedName(r.s, r.f),
          {
            body: r.body as string,
            returnsSet: r.set === true,
            strict: r.strict === true,
            volatile: r.volatile === true,
          },
        ]),
    ),
    triggers: triggers.rows.map((r) => ({
      table: qualifiedName(r.s, r.t),
      name: r.name,
      function: qualifiedName(r.fs, r.f),
      events: TRIGGER_EVENTS.filter(([bit]) => (r.type & bit) !== 0).map(([, event]) => event),
      ...(r.columns ? { columns: r.columns } : {}),
    })),
    tables: tables.rows.map((r) => ({
      schema: r.schema,
      name: r.name,
      qualified: qualifiedName(r.schema, r.name),
      kind: r.kind,
      owner: r.owner,
      comment: r.comment,
      partitionOf: r.parent,
      rowEstimate: Number(r.rows),
      columns: (typeof r.columns === "string" ? JSON.parse(r.columns) : r.columns) as CatalogColumn[],
      ...(viewOf.has(qualifiedName(r.schema, r.name))
        ? { viewOf: viewOf.get(qualifiedName(r.schema, r.name)) }
        : {}),
      ...(indexLeads.has(qualifiedName(r.schema, r.name))
        ? { indexLeads: indexLeads.get(qualifiedName(r.schema, r.name)) }
        : {}),
      ...(implicitCalls.has(qualifiedName(r.schema, r.name))
        ? { implicitCalls: implicitCalls.get(qualifiedName(r.schema, r.name)) }
        : {}),
    })),
    foreignKeys: fks.rows.map((r) => ({
      child: qualifiedName(r.child_schema, r.child),
      parent: qualifiedName(r.parent_schema, r.parent),
      columns: r.columns ?? [],
      parentColumns: r.parent_columns ?? [],
      ...(FK_ACTIONS[r.on_delete] ? { onDelete: FK_ACTIONS[r.on_delete] } : {}),
      ...(FK_ACTIONS[r.on_update] ? { onUpdate: FK_ACTIONS[r.on_update] } : {}),
      ...(r.has_default ? { columnsHaveDefault: true } : {}),
      ...(r.deferred ? { deferred: true } : {}),
    })),
  };
}

/** pgaudit's object type by relkind, where not TABLE or VIEW. */
const OBJECT_TYPES: Record<string, ObjectType> = { m: "MATERIALIZED VIEW", f: "FOREIGN TABLE" };

/** Resolves names as the default search_path would: an unqualified name in `public` first, else a unique match. */
export function catalogLookup(catalog: Catalog): RelationLookup {
  const byName = new Map<string, CatalogRelation[]>();
  const partitions = new Map<string, string[]>();
  const parentOf = new Map(catalog.tables.map((t) => [t.qualified, t.partitionOf]));
  for (const t of catalog.tables) {
    if (t.kind === "p") continue;
    // Leaf partitions, under every partitioned ancestor.
    for (let p = t.partitionOf; p; ) {
      const [schema, name] = p.split(".");
      const key = qualifiedName(schema!, name!);
      partitions.set(key, [...(partitions.get(key) ?? []), t.qualified]);
      p = parentOf.get(key) ?? null;
    }
  }
  const viewsOf = new Map(catalog.tables.filter((t) => t.viewOf).map((t) => [t.qualified, t.viewOf!]));
  // A view read brings itself (privilege-less) and its bases; a base that is a view, its own too.
  const expand = (view: string, seen: Set<string>): RelationUse[] => [
    { relation: view, objectType: "VIEW", plannerAdded: true },
    ...(viewsOf.get(view) ?? []).flatMap((base): RelationUse[] =>
      viewsOf.has(base) && !seen.has(base)
        ? [{ relation: base, objectType: "VIEW" }, ...expand(base, new Set([...seen, base]))]
        : [{ relation: base }],
    ),
  ];
  for (const t of catalog.tables) {
    const nested = t.viewOf?.some((b) => viewsOf.has(b));
    const rel: CatalogRelation = {
      schema: t.schema,
      name: t.name,
      columns: t.columns.map((c) => c.name),
      ...(t.viewOf ? { viewOf: t.viewOf } : {}),
      ...(nested ? { viewExpansion: expand(t.qualified, new Set([t.qualified])) } : {}),
      ...(OBJECT_TYPES[t.kind] ? { objectType: OBJECT_TYPES[t.kind] } : {}),
      ...(t.indexLeads ? { indexLeads: t.indexLeads } : {}),
      ...(t.implicitCalls ? { implicitCalls: t.implicitCalls } : {}),
      ...(partitions.has(t.qualified) ? { partitions: partitions.get(t.qualified) } : {}),
    };
    byName.set(t.name, [...(byName.get(t.name) ?? []), rel]);
  }
  const functions = new Map<string, string[]>();
  for (const f of catalog.functions ?? []) {
    const name = f.slice(f.lastIndexOf(".") + 1).replace(/^"|"$/g, "");
    functions.set(name, [...(functions.get(name) ?? []), f]);
  }
  return {
    ...(catalog.sqlFunctions
      ? { sqlFunction: (qualified: string) => catalog.sqlFunctions?.[qualified] }
      : {}),
    findFunction(schema, name) {
      const candidates = functions.get(name) ?? [];
      if (schema !== null)
        return candidates.find((f) => f.startsWith(`${qualifiedName(schema, "x").slice(0, -1)}`));
      return (
        candidates.find((f) => f.startsWith("public.")) ??
        (candidates.length === 1 ? candidates[0] : undefined)
      );
    },
    find(schema, name) {
      const candidates = byName.get(name) ?? [];
      if (schema !== null) return candidates.find((c) => c.schema === schema);
      return (
        candidates.find((c) => c.schema === "public") ?? (candidates.length === 1 ? candidates[0] : undefined)
      );
    },
  };
}

export const SAMPLER_TAG: string = TAG;
