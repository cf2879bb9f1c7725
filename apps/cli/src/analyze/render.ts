import type { Breakdown, VolumeReport } from "@auditpipe/meter/volume";
import type { OutcomeHint } from "./outcomes.ts";

// Built on first use: the first Intl formatter loads ICU's data (~10-16 ms of CPU on the bench's
// VM), which `analyze --json` never needs and which would sit on its start-up, before any worker.
let numFormat: Intl.NumberFormat | undefined;
let decFormat: Intl.NumberFormat | undefined;
const num = (): Intl.NumberFormat => (numFormat ??= new Intl.NumberFormat("en-US"));
const dec = (): Intl.NumberFormat =>
  (decFormat ??= new Intl.NumberFormat("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 }));

/** Decimal units, as in the report's JSON: 1 MB = 1e6 bytes. */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${dec().format(value)} ${units[unit]}`;
}

function table(title: string, breakdown: Breakdown, totalBytes: number, limit: number): string[] {
  // Sorted again: a JSON object lists keys that look like integers (SQLSTATE 23505) first.
  const rows = Object.entries(breakdown)
    .sort((a, b) => b[1].bytes - a[1].bytes || b[1].entries - a[1].entries)
    .slice(0, limit);
  if (rows.length === 0) return [];
  const width = Math.min(48, Math.max(title.length, ...rows.map(([k]) => k.length)));
  const lines = [
    `${title.padEnd(width)}  ${"entries".padStart(10)}  ${"bytes".padStart(11)}  ${"share".padStart(6)}`,
  ];
  for (const [key, tally] of rows) {
    const name = key.length > width ? `${key.slice(0, width - 1)}…` : key;
    const share = totalBytes > 0 ? `${((100 * tally.bytes) / totalBytes).toFixed(1)}%` : "-";
    lines.push(
      `${name.padEnd(width)}  ${num().format(tally.entries).padStart(10)}  ${formatBytes(tally.bytes).padStart(11)}  ${share.padStart(6)}`,
    );
  }
  const more = Object.keys(breakdown).length - rows.length;
  if (more > 0) lines.push(`… and ${num().format(more)} more`);
  return [...lines, ""];
}

/** Counts as `key ×n`, the largest first. */
function counts(map: Record<string, number>, limit: number): string {
  const rows = Object.entries(map).sort((a, b) => b[1] - a[1]);
  const shown = rows.slice(0, limit).map(([k, n]) => `${k} ×${num().format(n)}`);
  return rows.length > limit ? `${shown.join(", ")}, … ${rows.length - limit} more` : shown.join(", ");
}

/** What became of the entries' statements, the attempts, and what would tell more. */
function outcomeLines(report: VolumeReport, hints: OutcomeHint[]): string[] {
  const o = report.outcomes;
  if (report.entries === 0 && report.attempts.count === 0) return [];
  const lines = [
    `outcomes         ${num().format(o.succeeded)} succeeded, ${num().format(o.failed)} failed, ${num().format(o.rolled_back)} rolled back, ${num().format(o.unknown)} unknown`,
  ];
  if (o.unknown > 0) lines.push(`  unknown        ${counts(report.unknownReasons, 6)}`);
  lines.push(
    report.attempts.count === 0
      ? "attempts         none (no refused statement, no failed login)"
      : `attempts         ${num().format(report.attempts.count)} refused statements and failed logins: ${counts(report.attempts.bySqlstate, 6)}`,
  );
  if (report.attempts.count > 0) lines.push(`  by user        ${counts(report.attempts.byUser, 6)}`);
  lines.push("");
  if (o.failed > 0) {
    lines.push(...table("failed: SQLSTATE", report.failed.bySqlstate, report.bytes, 10));
    lines.push(...table("failed: user", report.failed.byUser, report.bytes, 10));
    lines.push(...table("failed: command", report.failed.byCommand, report.bytes, 10));
  }
  if (hints.length > 0) {
    lines.push("to tell more outcomes:");
    for (const hint of hints) lines.push(`  ${hint.setting}: ${hint.why}`);
    lines.push("");
  }
  return lines;
}

/** The report for a person: totals, rates, projections and the top of each breakdown. */
export function renderReport(report: VolumeReport, files: string[], hints: OutcomeHint[] = []): string {
  const { rate, span } = report;
  const lines = [
    `auditpipe analyze: ${files.length === 1 ? files[0] : `${files.length} files`}`,
    "",
    `records read     ${num().format(report.records)}`,
    `audit entries    ${num().format(report.entries)}  (${formatBytes(report.bytes)} of log)`,
    `malformed        ${num().format(report.malformed)}`,
    span.start
      ? `span             ${span.start} → ${span.end}  (${dec().format(span.seconds)} s)`
      : "span             no audit entries",
    `rate             ${dec().format(rate.entriesPerSec)} entries/s, ${formatBytes(rate.bytesPerSec)}/s`,
    rate.gbPerDay === null || rate.mbPerHour === null
      ? `projected        not meaningful: ${rate.reason}`
      : `projected        ${dec().format(rate.mbPerHour)} MB/hour, ${dec().format(rate.gbPerDay)} GB/day at the observed rate`,
    "",
    ...table("class", report.byClass, report.bytes, 20),
    ...table("audit type", report.byAuditType, report.bytes, 5),
    ...table("top commands", report.byCommand, report.bytes, 10),
    ...table("top objects", report.byObject, report.bytes, 10),
    ...table("top users", report.byUser, report.bytes, 10),
    ...table("top databases", report.byDatabase, report.bytes, 10),
    ...outcomeLines(report, hints),
  ];
  return `${lines.join("\n").trimEnd()}\n`;
}
