import { hostFlag, parseTimeFlag, S3_FLAGS, s3Settings } from "../archive-url.ts";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { type OutputFormat, runQueryCommand } from "../query/run-query.ts";
import { UsageError } from "../usage-error.ts";

export const QUERY_HELP = `Usage: auditpipe query ARCHIVE [--json | --csv | --ocsf [--security-lake DIR --region R --account-id ID]]
                       [--from DATE] [--to DATE] [--host H] [--user U]
                       [--s3-endpoint URL] [--s3-region R] [--s3-force-path-style] (SQL | REPORT [ARG])

SQL over an archive (a local directory or s3://bucket/prefix), with the archive as the view
\`audit\`: one row per pgAudit entry (columns named as the shipped records: ts, user, database,
session_id, session_line, class, command, object_type, object_name, statement, parameter, rows,
outcome, sqlstate, source, host, ...). It reads the compacted Parquet files, and the landing NDJSON
of hours not compacted yet. It runs offline on an embedded engine, reads only the archive and
writes nothing: one SELECT only.

Reports:
  who-touched TABLE      every entry on TABLE (schema.table, or a bare name in any schema), and
                         entries without an object whose statement names it (matched_by)
  failed                 statements that failed or were rolled back, and refused attempts
  grants                 DDL and ROLE changes over time (GRANT, REVOKE, CREATE, ALTER, DROP)
  by-user                per user: entries by class, failures, first and last activity

  --from DATE            first instant (YYYY-MM-DD, YYYY-MM-DDTHH or ISO 8601; UTC): only the
                         partitions that can hold it are read, and earlier rows are left out
  --to DATE              end, exclusive (a bare date means the end of that day)
  --host H               one host's partitions
  --user U               reports: only this database user
  --json                 the rows as a JSON array of objects on stdout
  --csv                  the rows as CSV with a header line
  --ocsf                 OCSF Datastore Activity events (class 6005, OCSF 1.5.0), one JSON per line:
                         of every entry in range, or of the rows of SQL (SELECT * FROM audit …)
  --security-lake DIR    with --ocsf: write the events as Amazon Security Lake takes a custom source,
                         Parquet under DIR/region=R/accountId=ID/eventDay=YYYYMMDD/ (DIR: the
                         source's location, synced to s3://<lake bucket>/ext/<source>/ by you)
  --region R, --account-id ID   the Security Lake partition keys
  --s3-endpoint URL      S3-compatible endpoint (MinIO, Ceph, R2, ...)
  --s3-region R          region (default AWS_REGION, else us-east-1 with --s3-endpoint)
  --s3-force-path-style  path-style URLs (MinIO and most S3-compatible stores)
  -h, --help             this text

What was read (files, bytes, of how many in the archive) goes to stderr, with progress on a terminal.
`;

const REPORTS = new Set(["who-touched", "failed", "grants", "by-user"]);

export async function queryCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("query", argv, {
    from: { type: "string" },
    to: { type: "string" },
    host: { type: "string" },
    user: { type: "string" },
    json: { type: "boolean", default: false },
    csv: { type: "boolean", default: false },
    ocsf: { type: "boolean", default: false },
    "security-lake": { type: "string" },
    region: { type: "string" },
    "account-id": { type: "string" },
    ...S3_FLAGS,
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(QUERY_HELP);
    return 0;
  }
  const [archive, ...rest] = positionals;
  if (archive === undefined)
    throw new UsageError(
      "query: the archive is missing: give a directory or s3://bucket/prefix, then SQL or a report (see auditpipe query --help)",
    );
  const formats = (["json", "csv", "ocsf"] as const).filter((f) => values[f] === true);
  if (formats.length > 1)
    throw new UsageError(
      `query: give one of --json, --csv, --ocsf (got ${formats.map((f) => `--${f}`).join(", ")})`,
    );
  const format: OutputFormat = formats[0] ?? "text";
  const from =
    values.from === undefined ? undefined : parseTimeFlag("query", "from", String(values.from), false);
  const to = values.to === undefined ? undefined : parseTimeFlag("query", "to", String(values.to), true);
  if (from && to && to <= from) throw new UsageError("query: --to is before --from");
  const host = hostFlag("query", values.host);
  const lakeDir = values["security-lake"] === undefined ? undefined : String(values["security-lake"]);
  let lake: { dir: string; region: string; accountId: string } | undefined;
  if (lakeDir !== undefined) {
    if (format !== "ocsf") throw new UsageError("query: --security-lake writes OCSF events: give --ocsf too");
    const region = values.region === undefined ? "" : String(values.region);
    const accountId = values["account-id"] === undefined ? "" : String(values["account-id"]);
    if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region))
      throw new UsageError(
        `query: --security-lake needs --region, an AWS region such as eu-west-1 (got ${JSON.stringify(region)})`,
      );
    if (!/^[A-Za-z0-9-]{1,64}$/.test(accountId))
      throw new UsageError(
        `query: --security-lake needs --account-id, the account or external id of the custom source (got ${JSON.stringify(accountId)})`,
      );
    lake = { dir: lakeDir, region, accountId };
  } else if (values.region !== undefined || values["account-id"] !== undefined)
    throw new UsageError("query: --region and --account-id go with --security-lake");
  const user = values.user === undefined ? undefined : String(values.user);

  let sql: string | undefined;
  let report: { name: "who-touched" | "failed" | "grants" | "by-user"; table?: string } | undefined;
  const first = rest[0];
  if (first !== undefined && REPORTS.has(first)) {
    const name = first as "who-touched" | "failed" | "grants" | "by-user";
    if (name === "who-touched") {
      if (rest.length !== 2 || !rest[1])
        throw new UsageError(
          "query: who-touched needs one table: auditpipe query ARCHIVE who-touched schema.table",
        );
      report = { name, table: rest[1] };
    } else {
      if (rest.length !== 1)
        throw new UsageError(`query: ${name} takes no argument (got ${rest.slice(1).join(" ")})`);
      report = { name };
    }
    if (format === "ocsf")
      throw new UsageError(
        "query: --ocsf exports entries, not a report: give SQL that selects from audit, or nothing",
      );
  } else if (rest.length > 0) {
    sql = rest.join(" ");
  } else if (format !== "ocsf") {
    throw new UsageError(
      'query: give SQL (e.g. "SELECT class, count(*) FROM audit GROUP BY class") or a report: who-touched TABLE, failed, grants, by-user',
    );
  }
  if (user !== undefined && report === undefined)
    throw new UsageError("query: --user applies to the reports; in SQL write WHERE \"user\" = '…'");

  return runQueryCommand(io, {
    archive,
    s3: s3Settings("query", values),
    format,
    ...(lake ? { lake } : {}),
    ...(sql !== undefined ? { sql } : {}),
    ...(report ? { report: { ...report, ...(user !== undefined ? { user } : {}) } } : {}),
    view: { ...(from ? { from } : {}), ...(to ? { to } : {}), ...(host ? { host } : {}) },
  });
}
