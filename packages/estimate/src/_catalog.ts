/** Reading the catalog: tables, columns, types, comments, owners, partitions and foreign keys. */
import type pg from "pg";
import { type CatalogRelation, qualifiedName, type RelationLookup } from "./_sql.ts";
import type { ForeignKey } from "./types.ts";

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
}

export interface Catalog {
  tables: CatalogTable[];
  foreignKeys: ForeignKey[];
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
          JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n) AS parent_columns
  FROM pg_constraint con
  JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace cn ON cn.oid = c.relnamespace
  JOIN pg_class p ON p.oid = con.confrelid JOIN pg_namespace pn ON pn.oid = p.relnamespace
 WHERE con.contype = 'f' AND (con.conparentid = 0 OR con.conparentid IS NULL) ${TAG}`;

export async function readCatalog(client: pg.Client): Promise<Catalog> {
  const tables = await client.query(TABLES_SQL);
  const fks = await client.query(FKS_SQL);
  return {
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
    })),
    foreignKeys: fks.rows.map((r) => ({
      child: qualifiedName(r.child_schema, r.child),
      parent: qualifiedName(r.parent_schema, r.parent),
      columns: r.columns ?? [],
      parentColumns: r.parent_columns ?? [],
    })),
  };
}

/** Resolves names as the default search_path would: an unqualified name in `public` first, else a unique match. */
export function catalogLookup(catalog: Catalog): RelationLookup {
  const byName = new Map<string, CatalogRelation[]>();
  for (const t of catalog.tables) {
    const rel = { schema: t.schema, name: t.name, columns: t.columns.map((c) => c.name) };
    byName.set(t.name, [...(byName.get(t.name) ?? []), rel]);
  }
  return {
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
