import { recommend, sampleWorkload } from "@auditpipe/estimate";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { renderEstimates, renderOverheadSection } from "../estimate/render.ts";
import { UsageError } from "../usage-error.ts";
import { givenLoad, intervalMs, nestedLine, nestedSummary, priceOf, progressPrinter } from "./estimate.ts";

export const RECOMMEND_HELP = `Usage: auditpipe recommend [--db URL] [--sensitive TABLE[.COLUMN]...] [--json]

Finds sensitive tables and columns (email, national id, phone, birth date, card number, IBAN,
address, password/secret, salary, health ... by name, type and comment, plus --sensitive),
and prints an idempotent SQL script for the cheapest configuration that still audits them:
session ddl,role, object auditing through a NOLOGIN role (column-level SELECT where only some
columns are sensitive, table-level INSERT/UPDATE/DELETE), log_statement_once on, log_catalog off.
The predicted volume before and after are comments at the top of the script, so

  auditpipe recommend > audit.sql && psql -f audit.sql

applies it (twice is harmless). The database is sampled as for estimate:

  (none)             libpq's PG* variables (PGHOST, PGPORT, PGUSER, PGDATABASE; password in
                     ~/.pgpass or PGSERVICEFILE): preferred
  --db URL           postgresql://user@host:port/db; a password in it shows in your shell
                     history and process list

  --sensitive T[.C]  a table, or one column of it, to audit; repeatable (schema.table.column too)
  --role NAME        the audit role (default auditpipe_auditor)
  --interval S       seconds between the two reads of the statistics (default 60)
  --track-nested     count what the server runs inside statements (foreign-key checks,
                     function and trigger bodies), as estimate --track-nested does, so the
                     before and after lines count the same checks (superuser only)
  --price-per-gb N   $ per GB ingested by a log service (raw log bytes)
  --calibration FILE overhead coefficients from auditpipe bench --calibration-out
                     (or AUDITPIPE_CALIBRATION=FILE), checked before sampling; without one the
                     overhead comes from public measurements
  --cpu-busy PCT     how busy the server's cores are (0-100), where its host cannot be seen
  --cores N          the cores the server may use there
  --json             one JSON object on stdout
  -h, --help         this text
`;

export async function recommendCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("recommend", argv, {
    db: { type: "string" },
    sensitive: { type: "string", multiple: true },
    role: { type: "string" },
    interval: { type: "string" },
    "track-nested": { type: "boolean", default: false },
    "price-per-gb": { type: "string" },
    calibration: { type: "string" },
    "cpu-busy": { type: "string" },
    cores: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(RECOMMEND_HELP);
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError(
      `recommend: unexpected argument ${JSON.stringify(positionals[0])} (see auditpipe recommend --help)`,
    );
  const role = values.role === undefined ? undefined : String(values.role);
  if (role !== undefined && (role === "" || role.length > 63))
    throw new UsageError("recommend: --role must be 1 to 63 characters");
  const pricePerGb = priceOf(values["price-per-gb"], "recommend");
  const load = givenLoad(values, "recommend");
  const { loadCalibration } = await import("../calibration.ts");
  const calibration = await loadCalibration(values.calibration, "recommend");
  const sample = await sampleWorkload({
    ...(values.db === undefined ? {} : { connection: String(values.db) }),
    intervalMs: intervalMs(values.interval, "recommend"),
    onProgress: progressPrinter(io, "recommend"),
    trackNested: values["track-nested"] === true,
    load,
  });
  for (const w of sample.warnings) io.stderr(`recommend: ${w}\n`);
  const rec = recommend(sample.catalog, sample.workload, sample.currentConfig, {
    sensitive: (values.sensitive as string[] | undefined) ?? [],
    pricePerGb,
    ...(role === undefined ? {} : { role }),
    ...(calibration ? { calibration } : {}),
  });
  if (rec.unknown.length > 0)
    io.stderr(`recommend: not in the catalog, ignored: ${rec.unknown.join(", ")}\n`);
  if (values.json) {
    io.stdout(`${JSON.stringify(rec, null, 2)}\n`);
    return 0;
  }
  const named = [rec.before, rec.after, rec.all].map((e, i) => ({
    ...e,
    config: ["before (current)", "after (recommended)", "session all"][i]!,
  }));
  const comment = (text: string): string =>
    text
      .split("\n")
      .map((l) => `-- ${l}`.trimEnd())
      .join("\n");
  const sensitive = rec.sensitive.map(
    (s) => `${s.table}: ${s.wholeTable ? "whole table" : s.columns.join(", ")} (${s.reasons.join(", ")})`,
  );
  io.stdout(
    `${comment(
      [
        `Sampled ${sample.database} for ${sample.intervalSec.toFixed(0)} s: ${sample.workload.transactionsPerSec.toFixed(1)} transactions/s.`,
        nestedLine(nestedSummary(sample.workload, sample)),
        "Sensitive:",
        ...sensitive.map((s) => `  ${s}`),
        "",
        renderEstimates(named),
        ...rec.notes,
        "",
        renderOverheadSection(named, sample.workload.load),
      ].join("\n"),
    )}\n${rec.sql}`,
  );
  return 0;
}
