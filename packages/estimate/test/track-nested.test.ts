/**
 * Counting nested statements: `trackNested` switches pg_stat_statements.track to 'all' for the
 * sample only, and puts it back as postgresql.auto.conf had it, after a sample, after an abort
 * (Ctrl-C), and never for a role that may not change it (then the estimate is modelled and
 * says why). On a real PostgreSQL 15.
 */
import { AUDITPIPE_ERR_DB_QUERY, EstimateError, sampleWorkload } from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pg: PostgresCluster;

beforeAll(async () => {
  pg = await startPostgres({
    preloadLibraries: ["pg_stat_statements"],
    pgaudit: { log: "none" },
    settings: { "pg_stat_statements.track_utility": true },
  });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.query("CREATE ROLE sampler LOGIN IN ROLE pg_read_all_stats, pg_read_all_settings");
  await pg.query(
    "CREATE TABLE parent (id int PRIMARY KEY); CREATE TABLE child (id int, parent_id int REFERENCES parent)",
  );
  await pg.query("INSERT INTO parent SELECT generate_series(1, 10)");
});

afterAll(async () => {
  await pg?.stop();
});

const as = (user: string) => ({ host: pg.socketDir, port: pg.port, user, database: "postgres" });

async function track(): Promise<{ value: string; autoConf: string | null }> {
  const r = await pg.query<{ v: string; a: string | null }>(
    `SELECT current_setting('pg_stat_statements.track') AS v,
            (SELECT setting FROM pg_file_settings WHERE name = 'pg_stat_statements.track'
                AND sourcefile LIKE '%postgresql.auto.conf') AS a`,
  );
  return { value: r.rows[0]!.v, autoConf: r.rows[0]!.a };
}

describe("sampleWorkload({ trackNested })", () => {
  it("counts the foreign-key checks the server runs, then puts the setting back", async () => {
    const seen: string[] = [];
    const sample = await sampleWorkload({
      connection: as("postgres"),
      intervalMs: 3_000,
      trackNested: true,
      onProgress: (elapsed) => {
        if (elapsed === 0)
          void pg
            .query("SELECT current_setting('pg_stat_statements.track') AS v")
            .then((r) => seen.push(r.rows[0]?.v))
            .then(() => pg.query("INSERT INTO child SELECT g, 1 + g % 10 FROM generate_series(1, 5) g"));
      },
    });
    expect(seen).toEqual(["all"]);
    expect(sample.nested).toMatchObject({ mode: "counted", changed: true });
    expect(sample.workload.nestedStatements).toBe("counted");
    const check = sample.workload.statements.find((s) => s.nested && s.text.startsWith("SELECT 1 FROM ONLY"));
    expect(check?.text).toBe(
      'SELECT 1 FROM ONLY "public"."parent" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x',
    );
    expect(check!.callsPerSec * sample.intervalSec).toBeCloseTo(5, 0);
    expect(await track()).toEqual({ value: "top", autoConf: null });
  });

  it("puts back a value postgresql.auto.conf already had", async () => {
    await pg.query("ALTER SYSTEM SET pg_stat_statements.track = 'top'");
    await pg.query("SELECT pg_reload_conf()");
    try {
      await sampleWorkload({ connection: as("postgres"), intervalMs: 1_000, trackNested: true });
      expect(await track()).toEqual({ value: "top", autoConf: "top" });
    } finally {
      await pg.query("ALTER SYSTEM RESET pg_stat_statements.track");
      await pg.query("SELECT pg_reload_conf()");
    }
  });

  it("an abort (Ctrl-C) ends the sample with an error and the setting is back", async () => {
    const controller = new AbortController();
    const outcome = sampleWorkload({
      connection: as("postgres"),
      intervalMs: 60_000,
      trackNested: true,
      signal: controller.signal,
      onProgress: (elapsed) => {
        if (elapsed === 0) controller.abort();
      },
    }).then(
      () => "resolved",
      (error: unknown) => error,
    );
    const error = await outcome;
    expect(error).toBeInstanceOf(EstimateError);
    expect((error as EstimateError).code).toBe(AUDITPIPE_ERR_DB_QUERY);
    expect((error as EstimateError).message).toMatch(/interrupted/);
    expect(await track()).toEqual({ value: "top", autoConf: null });
  });

  it("a role that is not a superuser is not allowed to change it: modelled, and says why", async () => {
    const sample = await sampleWorkload({ connection: as("sampler"), intervalMs: 1_000, trackNested: true });
    expect(sample.nested).toMatchObject({ mode: "modelled", changed: false });
    expect(sample.nested?.reason).toMatch(/needs a superuser/);
    expect(sample.workload.notes.join(" ")).toMatch(/^.*modelled:.*may miss statements inside functions/);
    expect(await track()).toEqual({ value: "top", autoConf: null });
  });

  it("without the flag nothing is changed: modelled, naming the flag", async () => {
    const sample = await sampleWorkload({ connection: as("postgres"), intervalMs: 1_000 });
    expect(sample.nested).toMatchObject({ mode: "modelled", changed: false });
    expect(sample.nested?.reason).toMatch(/--track-nested/);
  });
});

describe("a full pg_stat_statements", () => {
  it("says that it evicted rows during the sample, so the estimate is low", async () => {
    const small = await startPostgres({
      preloadLibraries: ["pg_stat_statements"],
      pgaudit: { log: "none" },
      settings: { "pg_stat_statements.max": 100 },
    });
    try {
      await small.query("CREATE EXTENSION pg_stat_statements");
      let load: Promise<unknown> = Promise.resolve();
      const sample = await sampleWorkload({
        connection: { host: small.socketDir, port: small.port, user: "postgres", database: "postgres" },
        intervalMs: 3_000,
        onProgress: (elapsed) => {
          // 300 texts pg_stat_statements does not normalize (utility statements before 16).
          if (elapsed === 0)
            load = (async () => {
              const c = await small.connect();
              try {
                for (let i = 0; i < 300; i++) await c.query(`SET application_name = 'app${i}'`);
              } finally {
                await c.end();
              }
            })();
        },
      });
      await load;
      expect(sample.warnings.join(" ")).toMatch(
        /pg_stat_statements evicted rows \d+ times during the sample/,
      );
    } finally {
      await small.stop();
    }
  });
});
