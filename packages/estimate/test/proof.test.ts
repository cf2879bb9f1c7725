/**
 * The estimator's proof, on a real PostgreSQL 15 + pgaudit 1.7: with auditing off, sample two
 * pgbench workloads (the built-in TPC-B-like script with foreign keys, and Gold Lapel's read-heavy
 * script) and predict bytes per transaction for each configuration; then switch each on, run the
 * same load for a fixed number of transactions and measure what pgaudit wrote with `analyze`.
 * Predicted must be within ±15% of measured, every configuration, every workload.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AuditConfig,
  estimate,
  recommend,
  sampleWorkload,
  type WorkloadSample,
} from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyConfig, measureBytes, type ProofRow, writeProofTable } from "./_proof-helper.ts";

const CLIENTS = 4;
const TXNS_PER_CLIENT = 200;
const SAMPLE_MS = 5000;
const LOAD_SECONDS = 3;
const AUDITOR = "auditor";

// Gold Lapel's read-heavy script (nine SELECTs and one UPDATE), scaled to pgbench scale 1.
const READ_HEAVY = `\\set aid random(1, 99990)
\\set delta random(-5000, 5000)
BEGIN;
${Array.from({ length: 9 }, (_, i) => `SELECT abalance FROM pgbench_accounts WHERE aid = :aid${i === 0 ? "" : ` + ${i}`};`).join("\n")}
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
END;
`;

let pg: PostgresCluster;
let dir: string;
const rows: ProofRow[] = [];

beforeAll(async () => {
  pg = await startPostgres({
    preloadLibraries: ["pg_stat_statements"],
    pgaudit: { log: "none" },
    settings: { "pg_stat_statements.track_utility": true, autovacuum: false },
  });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.query(`CREATE ROLE ${AUDITOR} NOLOGIN`);
  await pg.pgbench(["-i", "-s", "1", "-q", "--foreign-keys"]);
  dir = mkdtempSync(join(tmpdir(), "auditpipe-proof-"));
  writeFileSync(join(dir, "read_heavy.sql"), READ_HEAVY);
});

afterAll(async () => {
  await pg?.stop();
  if (rows.length > 0) writeProofTable(rows);
});

const OBJECT_TWO_TABLES: AuditConfig = {
  name: "object: accounts, tellers",
  log: ["none"],
  role: AUDITOR,
  grants: [
    { relation: "public.pgbench_accounts", privileges: ["SELECT", "INSERT", "UPDATE", "DELETE"] },
    { relation: "public.pgbench_tellers", privileges: ["SELECT", "INSERT", "UPDATE", "DELETE"] },
  ],
};

const CONFIGS: AuditConfig[] = [
  { name: "session write", log: ["write"] },
  { name: "session read", log: ["read"] },
  { name: "session all", log: ["all"] },
  {
    name: "all + relation, parameter, rows, once",
    log: ["all"],
    logRelation: true,
    logParameter: true,
    logRows: true,
    logStatementOnce: true,
  },
  OBJECT_TWO_TABLES,
];

async function sampleWhileLoading(args: string[]): Promise<WorkloadSample> {
  await pg.query("SELECT pg_stat_statements_reset()");
  let load: Promise<unknown> | undefined;
  const sample = await sampleWorkload({
    connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
    intervalMs: SAMPLE_MS,
    onProgress: (elapsed) => {
      // The load runs inside the sampling window, so every counter sees all of it.
      if (elapsed === 0)
        load = pg.pgbench(["-n", "-c", String(CLIENTS), "-j", "2", "-T", String(LOAD_SECONDS), ...args]);
    },
  });
  await load;
  return sample;
}

for (const [workloadName, args] of [
  ["TPC-B-like (built-in, --foreign-keys)", ["-b", "tpcb-like"]],
  ["read-heavy (Gold Lapel)", ["-f", "READ_HEAVY"]],
] as const) {
  describe(`proof: ${workloadName}`, () => {
    it("predicts bytes per transaction within ±15% of what pgaudit writes, per configuration", async () => {
      const argv = args.map((a) => (a === "READ_HEAVY" ? join(dir, "read_heavy.sql") : a));
      const sample = await sampleWhileLoading(argv);
      expect(sample.statementStats).toBe(true);
      expect(sample.workload.transactionsPerSec).toBeGreaterThan(50);

      const rec = recommend(sample.catalog, sample.workload, sample.currentConfig, {
        sensitive: ["pgbench_accounts.abalance"],
        role: AUDITOR,
      });
      // The recommender's script applies cleanly, twice in a row.
      for (const round of [1, 2]) {
        const out = await pg.psql(rec.sql, { args: ["-v", "ON_ERROR_STOP=1"] });
        expect(out.code, `round ${round}: ${out.stderr}`).toBe(0);
        expect(out.stderr).not.toMatch(/ERROR/);
      }

      for (const config of [...CONFIGS, { ...rec.config, name: "recommended (abalance sensitive)" }]) {
        const predicted = estimate(sample.workload, config);
        await applyConfig(pg, config, AUDITOR);
        const measured = await measureBytes(pg, () =>
          pg.pgbench(["-n", "-c", String(CLIENTS), "-j", "2", "-t", String(TXNS_PER_CLIENT), ...argv]),
        );
        const txns = CLIENTS * TXNS_PER_CLIENT;
        const row: ProofRow = {
          workload: workloadName,
          config: config.name,
          predictedEntries: predicted.entriesPerTransaction,
          measuredEntries: measured.entries / txns,
          predictedBytes: predicted.bytesPerTransaction,
          measuredBytes: measured.bytes / txns,
        };
        rows.push(row);
        const error = row.predictedBytes / row.measuredBytes - 1;
        expect(
          Math.abs(error),
          `${workloadName} / ${config.name}: ${JSON.stringify(row)}`,
        ).toBeLessThanOrEqual(0.15);
      }
    });
  });
}
