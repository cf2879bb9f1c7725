/**
 * Counting statements run inside others: pg_stat_statements with `track = 'all'` keeps a row per
 * nested statement (RI checks and actions, statements of functions, procedures and triggers,
 * `toplevel = false` from PostgreSQL 14 on) with its calls. When asked, and only as a superuser
 * (the setting is superuser-only and lives in the server's configuration, so every session sees
 * it only after ALTER SYSTEM + reload), the sampler switches it on for the sample and puts the
 * previous value back afterwards.
 */
import type pg from "pg";
import { quoteLiteral } from "./_sql.ts";
import type { NestedTracking } from "./types.ts";

const SETTING = "pg_stat_statements.track";

export interface NestedSetup {
  tracking: NestedTracking;
  /** Whether pg_stat_statements has the `toplevel` column (PostgreSQL 14+). */
  toplevelColumn: boolean;
  /** Puts the setting back if it was changed; safe to call twice. */
  restore(): Promise<void>;
}

async function hasToplevel(client: pg.Client, tag: (sql: string) => string): Promise<boolean> {
  try {
    await client.query(tag("SELECT toplevel FROM pg_stat_statements LIMIT 0"));
    return true;
  } catch {
    return false;
  }
}

async function waitForSetting(client: pg.Client, want: string, tag: (sql: string) => string): Promise<void> {
  // The reload is asynchronous: this session applies it before one of its next statements.
  for (let i = 0; i < 100; i++) {
    const r = await client.query(tag(`SELECT current_setting('${SETTING}') AS v`));
    if (r.rows[0].v === want) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${SETTING} did not become '${want}' after pg_reload_conf()`);
}

/** Decides counted or modelled and, when asked and allowed, switches nested tracking on. */
export async function nestedTracking(
  client: pg.Client,
  o: { statements: boolean; requested: boolean; tag: (sql: string) => string },
): Promise<NestedSetup> {
  const modelled = (reason: string, toplevelColumn = false): NestedSetup => ({
    tracking: { mode: "modelled", reason, changed: false },
    toplevelColumn,
    restore: async () => {},
  });
  if (!o.statements) return modelled("pg_stat_statements cannot be read");
  const toplevelColumn = await hasToplevel(client, o.tag);
  if (!toplevelColumn)
    return modelled(
      "pg_stat_statements has no toplevel column (PostgreSQL 13 or older): nested calls are merged into the rows of the statements they run",
    );
  const r = await client.query(
    o.tag(
      `SELECT current_setting('${SETTING}') AS v, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS su`,
    ),
  );
  if (r.rows[0].v === "all")
    return {
      tracking: { mode: "counted", reason: `the server already runs ${SETTING} = 'all'`, changed: false },
      toplevelColumn,
      restore: async () => {},
    };
  if (!o.requested)
    return modelled(`${SETTING} is '${r.rows[0].v}' (pass --track-nested to count them)`, true);
  if (!r.rows[0].su)
    return modelled(
      `--track-nested needs a superuser (${SETTING} is superuser-only); it stays '${r.rows[0].v}'`,
      true,
    );
  // What postgresql.auto.conf says now: put back as it was (RESET when it was not set there).
  const before = await client.query(
    o.tag(`SELECT setting FROM pg_file_settings WHERE name = '${SETTING}' AND sourcefile LIKE '%postgresql.auto.conf'
            ORDER BY seqno DESC LIMIT 1`),
  );
  const previous: string | null = before.rows[0]?.setting ?? null;
  const prior = String(r.rows[0].v);
  let changed = true;
  const restore = async (): Promise<void> => {
    if (!changed) return;
    changed = false;
    await client.query(
      previous === null
        ? `ALTER SYSTEM RESET ${SETTING}`
        : `ALTER SYSTEM SET ${SETTING} = ${quoteLiteral(previous)}`,
    );
    await client.query(o.tag("SELECT pg_reload_conf()"));
    await waitForSetting(client, prior, o.tag);
  };
  try {
    await client.query(`ALTER SYSTEM SET ${SETTING} = 'all'`);
    await client.query(o.tag("SELECT pg_reload_conf()"));
    await waitForSetting(client, "all", o.tag);
  } catch (error) {
    await restore().catch(() => {});
    throw error;
  }
  return {
    tracking: {
      mode: "counted",
      reason: `${SETTING} was switched to 'all' for the sample and put back to '${prior}'`,
      changed: true,
    },
    toplevelColumn,
    restore,
  };
}
