/** `auditpipe query`: open the view over the archive, run the SQL or report, print it. */
import type { S3Settings } from "@auditpipe/compact";
import type { AuditViewOptions, OcsfInput, ReportName, ViewScope } from "@auditpipe/query";
import type { CommandIO } from "../command-io.ts";
import { VERSION } from "../version.ts";
import { renderCsv, renderJson, renderTable, rowObjects } from "./render.ts";

export type OutputFormat = "text" | "json" | "csv" | "ocsf";

export interface QueryPlan {
  archive: string;
  s3: S3Settings;
  format: OutputFormat;
  sql?: string;
  report?: { name: ReportName; table?: string; user?: string };
  /** With format ocsf: write Security Lake's layout there instead of NDJSON on stdout. */
  lake?: { dir: string; region: string; accountId: string };
  view: AuditViewOptions;
}

function size(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(2)} MB`;
  return `${(bytes / 1e3).toFixed(1)} kB`;
}

/** What the view read, for stderr. */
export function describeScope(scope: ViewScope): string {
  const files = scope.parquetFiles + scope.ndjsonFiles;
  return `read ${files} file${files === 1 ? "" : "s"} (${scope.parquetFiles} Parquet, ${scope.ndjsonFiles} NDJSON), ${size(scope.bytes)} of ${size(scope.archiveBytes)} in the archive${scope.fetchedBytes > 0 ? `; ${size(scope.fetchedBytes)} fetched from S3` : ""}`;
}

export async function runQueryCommand(io: CommandIO, plan: QueryPlan): Promise<number> {
  const { openArchive } = await import("@auditpipe/compact");
  const { OCSF_INPUT_SELECT, openAuditView, reportSql, runQuery, toOcsfEvent, writeSecurityLake } =
    await import("@auditpipe/query");
  const store = await openArchive(plan.archive, plan.s3);
  const progress = io.stderrIsTTY ? (text: string) => io.stderr(`\r\x1b[2K${text}`) : undefined;
  try {
    const view = await openAuditView(store, {
      ...plan.view,
      ...(progress
        ? { onFetch: (done, total, bytes) => progress(`fetching ${done}/${total} (${size(bytes)})`) }
        : {}),
    });
    try {
      let sql: string;
      if (plan.report) sql = reportSql(plan.report.name, plan.report);
      else if (plan.format === "ocsf")
        sql = plan.sql
          ? `SELECT ${OCSF_INPUT_SELECT} FROM (${plan.sql})`
          : `SELECT ${OCSF_INPUT_SELECT} FROM audit ORDER BY ts, session_id, session_line`;
      else sql = plan.sql ?? "";
      const result = await runQuery(view.engine, sql, {
        ...(progress ? { onProgress: (p: number) => progress(`scanning ${p.toFixed(0)}%`) } : {}),
      });
      if (progress) io.stderr("\r\x1b[2K");
      switch (plan.format) {
        case "json":
          io.stdout(renderJson(result));
          break;
        case "csv":
          io.stdout(renderCsv(result));
          break;
        case "ocsf": {
          const events = rowObjects(result).map((row) =>
            toOcsfEvent(row as unknown as OcsfInput, { version: VERSION }),
          );
          if (plan.lake)
            for (const f of await writeSecurityLake(events, plan.lake))
              io.stdout(`${f.path}: ${f.events.toLocaleString("en-US")} events\n`);
          else for (const e of events) io.stdout(`${JSON.stringify(e)}\n`);
          break;
        }
        default:
          io.stdout(renderTable(result));
      }
      io.stderr(`${describeScope(view.scope)}\n`);
      return 0;
    } finally {
      await view.close();
    }
  } finally {
    store.close();
  }
}
