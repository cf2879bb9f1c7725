import { writeFileSync } from "node:fs";
import { type Advice, AdviceTally, adviceSql, DEFAULT_AUDIT_ROLE } from "@auditpipe/estimate";
import type { OutcomeHint } from "../analyze/outcomes.ts";
import { analyzeFiles } from "../analyze/read-logs.ts";
import { formatBytes } from "../analyze/render.ts";
import { oneOf, parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { flagValue, wholeNumber } from "../flags.ts";
import { UsageError } from "../usage-error.ts";
import { acceptPrefixGuess, pgauditLogHasMisc, resolveFiles } from "./analyze.ts";

export const ADVISE_HELP: string = `Usage: auditpipe advise [--format F] [--prefix P] [--pgaudit-log VALUE] [--audit-role R] [--sql FILE] [--json] FILE...

What makes these audit logs big, and what to change: the noise ranked by what it costs (BEGIN
and COMMIT, SET, health checks, catalog reads, foreign-key checks, statement text repeated for
every substatement, a role's reads, session READ, statements that failed), each with the change that removes it, what
audit coverage that change gives up, and what it saves; then the statements writing the most
bytes, by fingerprint (values removed). Reads the logs as analyze does.

  --format F          log format; auto (default) sniffs it from each file's first bytes
  --prefix P          log_line_prefix of stderr and syslog logs (SHOW log_line_prefix)
  --pgaudit-log VALUE the server's pgaudit.log (SHOW pgaudit.log); default: the classes in the log
  --audit-role R      pgaudit.role, for object-audit advice (default ${DEFAULT_AUDIT_ROLE})
  --top N             items and statements to show (default 10)
  --sql FILE          also write the changes as an idempotent SQL script (identifiers quoted)
  --json              print the advice as one JSON object on stdout and nothing else
  -h, --help          this text
`;

const FORMATS = ["auto", "csvlog", "jsonlog", "stderr", "syslog"] as const;

function render(advice: Advice, files: string[], hints: OutcomeHint[]): string {
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
  const lines = [
    `auditpipe advise: ${files.join(", ")}`,
    "",
    `audit entries ${advice.entries.toLocaleString("en-US")} (${formatBytes(advice.bytes)} of log) over ${advice.spanSeconds.toFixed(1)} s`,
    `pgaudit.log   ${advice.pgauditLog.value}${advice.pgauditLog.inferred ? "  (inferred from the classes in the log; --pgaudit-log gives the server's)" : ""}`,
  ];
  if (advice.projection) lines.push(`GB/day        not projected: ${advice.projection}`);
  lines.push("");
  if (advice.items.length === 0) lines.push("No noise source found that a setting could remove.");
  for (const [i, it] of advice.items.entries()) {
    const saved = it.gbPerDaySaved === null ? formatBytes(it.bytes) : `${it.gbPerDaySaved.toFixed(2)} GB/day`;
    lines.push(
      `${i + 1}. ${it.subject}: ${pct(it.share)} of the audit bytes (${saved})`,
      `   change:   ${it.change}`,
      `   gives up: ${it.givesUp}`,
      ...it.sql
        .filter((s) => !s.startsWith("--") && !s.startsWith("SELECT pg_reload_conf"))
        .map((s) => `   sql:      ${s}`),
      "",
    );
  }
  lines.push("Savings are each on their own (a health check is also a READ): they do not add up.", "");
  lines.push(
    "top statements (fingerprints: values removed)",
    `${"share".padStart(6)}  ${"entries".padStart(9)}  statement`,
  );
  for (const s of advice.topStatements)
    lines.push(
      `${pct(s.share).padStart(6)}  ${s.entries.toLocaleString("en-US").padStart(9)}  ${s.fingerprint}`,
    );
  if (hints.length > 0) {
    lines.push("", "to tell the outcome of more statements:");
    for (const hint of hints) lines.push(`  ${hint.setting}: ${hint.why}`);
  }
  return `${lines.join("\n")}\n`;
}

export async function adviseCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("advise", argv, {
    format: { type: "string", default: "auto" },
    prefix: { type: "string" },
    "pgaudit-log": { type: "string" },
    "audit-role": { type: "string" },
    top: { type: "string" },
    sql: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(ADVISE_HELP);
    return 0;
  }
  const format = oneOf("advise", "format", String(values.format), FORMATS);
  if (positionals.length === 0)
    throw new UsageError(
      "advise: FILE is missing: give one or more audit log files (see auditpipe advise --help)",
    );
  const top =
    values.top === undefined
      ? 10
      : flagValue("advise", "top", values.top, wholeNumber({ min: 1 }), { default: "10" });
  const miscLogged = pgauditLogHasMisc("advise", values["pgaudit-log"] as string | undefined);
  const files = await resolveFiles(positionals, "advise");
  const tally = new AdviceTally();
  let hints: OutcomeHint[] = [];
  await analyzeFiles(files, {
    format,
    ...(values.prefix === undefined ? {} : { prefix: String(values.prefix) }),
    onEntry: (entry, record) => tally.add(entry, record),
    onPrefixGuess: acceptPrefixGuess("advise", io),
    outcomes: {
      ...(miscLogged === undefined ? {} : { miscLogged }),
      onOutcome: (entry, record, outcome, sqlstate) => tally.outcome(entry, record, outcome, sqlstate),
    },
    onOutcomeHints: (h) => {
      hints = h;
    },
  });
  let advice: Advice;
  try {
    advice = tally.advice({
      top,
      ...(values["pgaudit-log"] === undefined ? {} : { pgauditLog: String(values["pgaudit-log"]) }),
      auditRole: values["audit-role"] === undefined ? DEFAULT_AUDIT_ROLE : String(values["audit-role"]),
    });
  } catch (error) {
    throw new UsageError(`advise: --pgaudit-log: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (advice.entries === 0) {
    io.stderr(
      `advise: no pgAudit entry in ${files.join(", ")}: check --format and --prefix (auditpipe analyze shows what was read)\n`,
    );
    return 1;
  }
  if (values.sql !== undefined) writeFileSync(String(values.sql), adviceSql(advice, files.join(", ")));
  io.stdout(
    values.json
      ? `${JSON.stringify({ ...advice, outcomeHints: hints }, null, 2)}\n`
      : render(advice, files, hints),
  );
  return 0;
}
