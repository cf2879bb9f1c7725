/**
 * Object auditing, grant by grant, on a real PostgreSQL 15 + pgaudit 1.7: which of the audit
 * role's grants make pgaudit log a statement, and the foreign-key work PostgreSQL runs inside it
 * (the check of a parent, its repetition when a row the transaction inserted is updated, the
 * look-up NO ACTION makes on the parent before checking the child). For each action the
 * estimator samples the server with nested statements counted; then, for each grant, the action
 * runs again and the OBJECT entries pgaudit writes are counted (sent to the client as notices:
 * pgaudit.log_client). The estimate must give the same count, counted and modelled alike.
 *
 * What pgaudit 1.7 does (log_select_dml): a relation is logged when the role holds, table-level,
 * any privilege the statement needs on it (requiredPerms: an FK check's FOR KEY SHARE needs
 * SELECT and UPDATE; an INSERT … RETURNING needs SELECT too), or column-level SELECT on a column
 * it reads, or a needed privilege on a column it inserts or updates. An FK check updates no
 * column, and pgaudit reads an empty column set as "any column": a column-level SELECT or UPDATE
 * grant on any column of the parent, key or not, logs every check of that parent.
 */
import {
  type AuditConfig,
  estimate,
  type Privilege,
  recommend,
  referencedNote,
  sampleWorkload,
  type Workload,
} from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres, waitUntil } from "@auditpipe/testkit";
import type { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const AUDITOR = "auditor";
const RUNS = 4;
/** Parent rows above this no child references: each run of the DELETE removes one. */
const DELETABLE = 10_000;

let pg: PostgresCluster;

beforeAll(async () => {
  pg = await startPostgres({
    preloadLibraries: ["pg_stat_statements"],
    pgaudit: { log: "none", role: AUDITOR, log_client: true, log_level: "notice" },
    settings: { "pg_stat_statements.track_utility": true, autovacuum: false },
  });
  await pg.query(`CREATE EXTENSION pg_stat_statements;
    CREATE ROLE ${AUDITOR} NOLOGIN;
    CREATE ROLE app LOGIN;
    CREATE TABLE parent (id int PRIMARY KEY, name text, secret text);
    CREATE TABLE tag (id int PRIMARY KEY);
    CREATE TABLE child (id serial PRIMARY KEY, parent_id int NOT NULL REFERENCES parent,
                        tag_id int REFERENCES tag, note text);
    INSERT INTO parent SELECT g, 'name ' || g, 'secret ' || g FROM generate_series(1, 1000) g;
    INSERT INTO parent SELECT ${DELETABLE} + g, 'gone', 'gone' FROM generate_series(1, 2000) g;
    INSERT INTO child (parent_id) SELECT g FROM generate_series(1, 100) g;
    GRANT SELECT, INSERT, UPDATE, DELETE ON parent, child TO app;
    GRANT USAGE ON SEQUENCE child_id_seq TO app`);
  await pg.query("VACUUM ANALYZE");
});

afterAll(async () => {
  await pg?.stop();
});

/** One action a client runs, `n` numbering the run. */
interface Action {
  name: string;
  /** Statements of one run; `$n` in a statement is replaced by the run's number. */
  run: (c: Client, n: number) => Promise<void>;
  /** The text its first DML statement starts with (its calls count the runs). */
  first: string;
}

const ACTIONS: Action[] = [
  {
    name: "INSERT of a child row (its parent checked; a NULL key is not)",
    first: "INSERT INTO child (parent_id, note)",
    run: async (c, n) => {
      await c.query("INSERT INTO child (parent_id, note) VALUES ($1, 'new')", [n]);
    },
  },
  {
    name: "INSERT … RETURNING",
    first: "INSERT INTO child (parent_id) VALUES ($1) RETURNING",
    run: async (c, n) => {
      await c.query("INSERT INTO child (parent_id) VALUES ($1) RETURNING id", [n]);
    },
  },
  {
    name: "UPDATE of a row the same transaction inserted (its parent checked again, key unchanged)",
    first: "INSERT INTO child (parent_id, note) VALUES ($1, $2) RETURNING",
    run: async (c, n) => {
      await c.query("BEGIN");
      const r = await c.query("INSERT INTO child (parent_id, note) VALUES ($1, $2) RETURNING id", [
        n,
        "draft",
      ]);
      await c.query("UPDATE child SET note = 'final' WHERE id = $1", [r.rows[0].id]);
      await c.query("COMMIT");
    },
  },
  {
    name: "UPDATE of an older row (no check)",
    first: "UPDATE child SET note =",
    run: async (c, n) => {
      await c.query("BEGIN");
      await c.query("UPDATE child SET note = 'seen' WHERE id = $1", [n]);
      await c.query("COMMIT");
    },
  },
  {
    name: "DELETE of a parent, ON DELETE NO ACTION (the parent looked up again, the child checked)",
    first: "DELETE FROM parent",
    run: async (c, n) => {
      await c.query("DELETE FROM parent WHERE id = $1", [DELETABLE + n]);
    },
  },
  {
    name: "SELECT … FOR UPDATE",
    first: "SELECT name FROM parent",
    run: async (c, n) => {
      await c.query("SELECT name FROM parent WHERE id = $1 FOR UPDATE", [n]);
    },
  },
];

const GRANTS: Record<string, string[]> = {
  "nothing granted": [],
  "parent: SELECT": ["GRANT SELECT ON parent"],
  "parent: UPDATE": ["GRANT UPDATE ON parent"],
  "parent: INSERT, DELETE": ["GRANT INSERT, DELETE ON parent"],
  "parent: SELECT (secret), not the key": ["GRANT SELECT (secret) ON parent"],
  "parent: SELECT (id), the key": ["GRANT SELECT (id) ON parent"],
  "parent: UPDATE (secret)": ["GRANT UPDATE (secret) ON parent"],
  "parent: INSERT (secret)": ["GRANT INSERT (secret) ON parent"],
  "child: SELECT": ["GRANT SELECT ON child"],
  "child: SELECT (note)": ["GRANT SELECT (note) ON child"],
  "child: INSERT": ["GRANT INSERT ON child"],
  "child: UPDATE (note)": ["GRANT UPDATE (note) ON child"],
  "tag: SELECT (child rows leave tag_id NULL)": ["GRANT SELECT ON tag"],
};

/** The estimator's configuration for a set of GRANT statements. */
function configOf(name: string, grants: string[]): AuditConfig {
  return {
    name,
    log: ["none"],
    role: AUDITOR,
    grants: grants.map((g) => {
      const m = /^GRANT ([A-Z, ]+?)(?: \((\w+)\))? ON (\w+)$/.exec(g)!;
      return {
        relation: `public.${m[3]}`,
        privileges: m[1]!.split(", ") as Privilege[],
        ...(m[2] ? { columns: [m[2]] } : {}),
      };
    }),
  };
}

/** Runs `action` RUNS times as `user` and returns the OBJECT entries pgaudit sent per run. */
async function objectEntriesPerRun(action: Action, from: number, user: string): Promise<number> {
  const c = await pg.connect({ user });
  const notices: string[] = [];
  c.on("notice", (n) => {
    if (n.message?.startsWith("AUDIT: OBJECT,")) notices.push(n.message);
  });
  try {
    for (let i = 0; i < RUNS; i++) await action.run(c, from + i);
    // A round trip after the last statement: every notice of it has arrived.
    await c.query("SELECT 1");
  } finally {
    await c.end();
  }
  return notices.length / RUNS;
}

/** The workload of `action`, sampled with nested statements counted, and its runs per second. */
async function sample(
  action: Action,
  from: number,
  user = "postgres",
): Promise<{ workload: Workload; runsPerSec: number }> {
  await pg.query("SELECT pg_stat_statements_reset()");
  let load: Promise<unknown> | undefined;
  const s = await sampleWorkload({
    connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
    intervalMs: 1500,
    trackNested: true,
    onProgress: (elapsed) => {
      if (elapsed === 0) load = objectEntriesPerRun(action, from, user);
    },
  });
  await load;
  expect(s.workload.nestedStatements).toBe("counted");
  const runsPerSec = s.workload.statements
    .filter((st) => !st.nested && st.text.startsWith(action.first))
    .reduce((sum, st) => sum + st.callsPerSec, 0);
  expect(runsPerSec * s.intervalSec, action.name).toBeCloseTo(RUNS, 5);
  return { workload: s.workload, runsPerSec };
}

const perRun = (w: Workload, config: AuditConfig, runsPerSec: number): number =>
  (estimate(w, config).byAuditType.OBJECT?.entriesPerSec ?? 0) / runsPerSec;

describe("object auditing by grant, against what pgaudit writes", () => {
  // Each batch of runs gets fresh numbers (the DELETE removes one parent row per run).
  let run = 0;
  const nextRuns = (): number => {
    run += RUNS;
    return run;
  };
  for (const action of ACTIONS) {
    it(action.name, async () => {
      const { workload, runsPerSec } = await sample(action, nextRuns());
      const modelled: Workload = {
        ...workload,
        statements: workload.statements.filter((s) => !s.nested),
        nestedStatements: "modelled",
      };
      const rows: string[] = [];
      const wrong: string[] = [];
      for (const [name, grants] of Object.entries(GRANTS)) {
        await pg.query(`REVOKE ALL ON parent, child, tag FROM ${AUDITOR}`);
        for (const g of grants) await pg.query(`${g} TO ${AUDITOR}`);
        const measured = await objectEntriesPerRun(action, nextRuns(), "postgres");
        const config = configOf(name, grants);
        const counted = perRun(workload, config, runsPerSec);
        const model = perRun(modelled, config, runsPerSec);
        rows.push(
          `${name}: pgaudit ${measured}, counted ${counted.toFixed(2)}, modelled ${model.toFixed(2)}`,
        );
        if (Math.abs(counted - measured) > 0.01 || Math.abs(model - measured) > 0.01)
          wrong.push(rows.at(-1)!);
      }
      if (process.env.AUDITPIPE_PROOF_DEBUG === "1")
        process.stdout.write(`\n${action.name}\n${rows.join("\n")}\n`);
      expect(wrong, rows.join("\n")).toEqual([]);
    });
  }

  it("checks run for a session user who is not a member of the parent's owner are not logged, nor predicted", async () => {
    const action = ACTIONS[0]!;
    const config = configOf("parent: SELECT", ["GRANT SELECT ON parent"]);
    await pg.query(`REVOKE ALL ON parent, child, tag FROM ${AUDITOR}; GRANT SELECT ON parent TO ${AUDITOR}`);
    // pgaudit logs a statement only when the session user is a member of the role it runs as, and
    // PostgreSQL runs the check as the parent's owner: the owner's check is logged, app's is not.
    expect(await objectEntriesPerRun(action, 700, "postgres")).toBe(1);
    expect(await objectEntriesPerRun(action, 710, "app")).toBe(0);
    const { workload, runsPerSec } = await sample(action, 720, "app");
    const modelled: Workload = {
      ...workload,
      statements: workload.statements.filter((s) => !s.nested),
      nestedStatements: "modelled",
    };
    expect(perRun(workload, config, runsPerSec)).toBe(0);
    expect(perRun(modelled, config, runsPerSec)).toBe(0);
  });

  it("recommend's note on a referenced sensitive table says what pgaudit logs", async () => {
    const action: Action = {
      name: "insert, update in the same transaction, delete a parent",
      first: "INSERT INTO child (parent_id, note) VALUES ($1, $2) RETURNING",
      run: async (c, n) => {
        await c.query("BEGIN");
        const r = await c.query("INSERT INTO child (parent_id, note) VALUES ($1, $2) RETURNING id", [n, "x"]);
        await c.query("UPDATE child SET note = 'y' WHERE id = $1", [r.rows[0].id]);
        await c.query("DELETE FROM parent WHERE id = $1", [DELETABLE + n]);
        await c.query("COMMIT");
      },
    };
    const s = await sampleWorkload({
      connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
      intervalMs: 1000,
      trackNested: true,
    });
    const rec = recommend(s.catalog, s.workload, s.currentConfig, {
      sensitive: ["parent.secret"],
      role: AUDITOR,
    });
    expect(rec.config.grants?.filter((g) => g.relation === "public.parent")).toEqual([
      { relation: "public.parent", privileges: ["INSERT", "UPDATE", "DELETE"] },
      { relation: "public.parent", privileges: ["SELECT"], columns: ["secret"] },
    ]);
    expect(rec.notes).toContain(referencedNote("public.parent", ["public.child"]));
    await pg.query(`REVOKE ALL ON parent, child, tag FROM ${AUDITOR}`);
    const applied = await pg.psql(rec.sql, { args: ["-v", "ON_ERROR_STOP=1"] });
    expect(applied.code, applied.stderr).toBe(0);
    try {
      // The script reloads the configuration; a new session sees it once the postmaster has.
      await waitUntil(
        async () => {
          const c = await pg.connect();
          try {
            return (await c.query("SELECT current_setting('pgaudit.log') AS v")).rows[0].v === "ddl, role";
          } finally {
            await c.end();
          }
        },
        10_000,
        () => "the recommended settings were not reloaded",
      );
      // "one per row inserted …, one more per such row the same transaction updates, and one per
      // row deleted from the table" (and the DELETE itself, a WRITE): as the owner…
      const checks = async (user: string, from: number): Promise<number> => {
        const c = await pg.connect({ user });
        let n = 0;
        c.on("notice", (m) => {
          if (
            /^AUDIT: OBJECT,\d+,\d+,READ,SELECT,TABLE,public\.parent,"?SELECT 1 FROM ONLY/.test(
              m.message ?? "",
            )
          )
            n++;
        });
        try {
          await action.run(c, from);
          await c.query("SELECT 1");
        } finally {
          await c.end();
        }
        return n;
      };
      expect(await checks("postgres", 800)).toBe(3);
      // …and none for a role that is not a member of the table's owner.
      expect(await checks("app", 810)).toBe(0);
    } finally {
      await pg.query("ALTER SYSTEM RESET ALL");
      await pg.query("SELECT pg_reload_conf()");
    }
  });
});
