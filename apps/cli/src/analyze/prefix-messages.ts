import type { PrefixGuess } from "@auditpipe/parse";
import type { FileSummary } from "./read-logs.ts";

/** Record fields as a person names them. */
const FIELD_NAMES: Record<string, string> = {
  applicationName: "application",
  remoteHost: "client",
  sessionId: "session",
  sessionLine: "session line",
  commandTag: "command tag",
  sessionStart: "session start",
  virtualTransactionId: "virtual transaction",
  transactionId: "transaction",
  sqlState: "SQLSTATE",
  backendType: "backend type",
  leaderPid: "leader pid",
  queryId: "query id",
};

function show(value: string | number | null): string {
  return value === null ? "none" : JSON.stringify(value);
}

/** Why a guess cannot be used: the same line read two ways, side by side, and how to settle it. */
export function describeAmbiguity(file: string, guess: PrefixGuess): string {
  const lines = guess.rivals.flatMap((rival, i) => {
    const at = `at byte ${rival.offset}`;
    const best = rival.differences
      .map((d) => `${FIELD_NAMES[d.field] ?? d.field} ${show(d.best)}`)
      .join(", ");
    const other = rival.differences
      .map((d) => `${FIELD_NAMES[d.field] ?? d.field} ${show(d.rival)}`)
      .join(", ");
    return [
      ...(i === 0 ? [`  '${guess.prefix}'  (${at}: ${best})`] : []),
      `  '${rival.prefix}'  (${at}: ${other})`,
    ];
  });
  return [
    `cannot tell which log_line_prefix wrote ${file}: its lines read equally well as`,
    ...lines,
    "and an archive or report of the wrong reading would carry wrong users, databases or applications.",
    "Run SHOW log_line_prefix; on the server and pass the value with --prefix.",
  ].join("\n");
}

/** What to try when nothing in a file could be read. */
export function unreadableHint(summary: FileSummary, prefixGiven: boolean): string {
  if (summary.formatGiven && summary.sniffed !== undefined && summary.sniffed !== summary.format)
    return `its first line looks like ${summary.sniffed}: try --format ${summary.sniffed} (or --format auto)`;
  if (summary.format === "stderr" || summary.format === "syslog") {
    return prefixGiven
      ? `no line starts with --prefix '${summary.prefix}' and a severity: run SHOW log_line_prefix; on the server and pass that value`
      : "no common log_line_prefix reads its lines: run SHOW log_line_prefix; on the server and pass the value with --prefix";
  }
  return `is it a PostgreSQL ${summary.format} file? Check --format`;
}
