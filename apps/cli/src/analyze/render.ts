import type { Breakdown, VolumeReport } from "@auditpipe/meter/volume";

const num = new Intl.NumberFormat("en-US");
const dec = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 });

/** Decimal units, as in the report's JSON: 1 MB = 1e6 bytes. */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${dec.format(value)} ${units[unit]}`;
}

function table(title: string, breakdown: Breakdown, totalBytes: number, limit: number): string[] {
  const rows = Object.entries(breakdown).slice(0, limit);
  if (rows.length === 0) return [];
  const width = Math.min(48, Math.max(title.length, ...rows.map(([k]) => k.length)));
  const lines = [
    `${title.padEnd(width)}  ${"entries".padStart(10)}  ${"bytes".padStart(11)}  ${"share".padStart(6)}`,
  ];
  for (const [key, tally] of rows) {
    const name = key.length > width ? `${key.slice(0, width - 1)}…` : key;
    const share = totalBytes > 0 ? `${((100 * tally.bytes) / totalBytes).toFixed(1)}%` : "-";
    lines.push(
      `${name.padEnd(width)}  ${num.format(tally.entries).padStart(10)}  ${formatBytes(tally.bytes).padStart(11)}  ${share.padStart(6)}`,
    );
  }
  const more = Object.keys(breakdown).length - rows.length;
  if (more > 0) lines.push(`… and ${num.format(more)} more`);
  return [...lines, ""];
}

/** The report for a person: totals, rates, projections and the top of each breakdown. */
export function renderReport(report: VolumeReport, files: string[]): string {
  const { rate, span } = report;
  const lines = [
    `auditpipe analyze: ${files.length === 1 ? files[0] : `${files.length} files`}`,
    "",
    `records read     ${num.format(report.records)}`,
    `audit entries    ${num.format(report.entries)}  (${formatBytes(report.bytes)} of log)`,
    `malformed        ${num.format(report.malformed)}`,
    span.start
      ? `span             ${span.start} → ${span.end}  (${dec.format(span.seconds)} s)`
      : "span             no audit entries",
    `rate             ${dec.format(rate.entriesPerSec)} entries/s, ${formatBytes(rate.bytesPerSec)}/s`,
    `projected        ${dec.format(rate.mbPerHour)} MB/hour, ${dec.format(rate.gbPerDay)} GB/day at the observed rate`,
    "",
    ...table("class", report.byClass, report.bytes, 20),
    ...table("audit type", report.byAuditType, report.bytes, 5),
    ...table("top commands", report.byCommand, report.bytes, 10),
    ...table("top objects", report.byObject, report.bytes, 10),
    ...table("top users", report.byUser, report.bytes, 10),
    ...table("top databases", report.byDatabase, report.bytes, 10),
  ];
  if (span.seconds === 0 && report.entries > 0)
    lines.push("(all entries share one timestamp: no rate can be measured)");
  return `${lines.join("\n").trimEnd()}\n`;
}
