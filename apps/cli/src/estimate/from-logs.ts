/**
 * `estimate --log FILE...`: the observed volume and its cost, and with `--audit` what each named
 * configuration would have written of the observed entries. The archive's compression ratio is
 * measured on the same entries (the sidecar's NDJSON, gzip, in its batches).
 */
import {
  type ArchiveCost,
  type AuditConfig,
  type ConfigFromLog,
  ConfigsFromLog,
  type CostOptions,
  costInputs,
  costOf,
  DEFAULT_PRICE_PER_GB,
} from "@auditpipe/estimate";
import { projectVolume, type VolumeReport } from "@auditpipe/meter";
import { ArchiveSizer } from "../analyze/archive-size.ts";
import { analyzeFiles } from "../analyze/read-logs.ts";

/** Volume and cost of one set of observed entries (the whole log, or what one configuration keeps). */
export interface ObservedVolume {
  entries: number;
  bytes: number;
  bytesPerEntry: number;
  /** Null when there is no projection (below MIN_PROJECTION_SECONDS of log time): see `reason`. */
  entriesPerSec: number | null;
  gbPerDay: number | null;
  /** Ingestion by a log service, per month (null without a projection). */
  dollarsPerMonth: number | null;
  archive: ArchiveCost | null;
  /** Why nothing is projected; null when it is. */
  reason: string | null;
}

export interface ConfigObserved extends ObservedVolume {
  config: string;
  derivable: boolean;
  lowerBound: boolean;
  byClass: Record<string, { entries: number; bytes: number }>;
  reasons: string[];
}

export interface FromLogs {
  files: string[];
  seconds: number;
  compressedBytes: number;
  observed: ObservedVolume & { byClass: VolumeReport["byClass"] };
  configs: ConfigObserved[];
}

function volume(
  entries: number,
  bytes: number,
  span: number | null,
  options: CostOptions,
  ratio: { ratio: number; source: string } | undefined,
): ObservedVolume {
  const p = projectVolume(bytes, span, entries);
  const perDay = p.gbPerDay === null ? null : p.gbPerDay * 1e9;
  // Only audit records are counted (analyze's bytes), so both lines bill the same entries.
  const cost = perDay === null ? undefined : costOf(perDay, perDay, "csvlog", options, ratio);
  return {
    entries,
    bytes,
    bytesPerEntry: entries > 0 ? bytes / entries : 0,
    entriesPerSec: perDay === null || !span ? null : entries / span,
    gbPerDay: p.gbPerDay,
    dollarsPerMonth: cost ? cost.ingestion.dollarsPerMonth : null,
    archive: cost ? cost.archive : null,
    reason: p.reason,
  };
}

/** Reads the logs once: the report, the archive size and each configuration's share. */
export async function estimateFromLogs(
  files: string[],
  configs: AuditConfig[],
  options: CostOptions,
): Promise<FromLogs> {
  const sizer = new ArchiveSizer();
  const tally = new ConfigsFromLog(configs);
  // The sidecar names each entry's source file; which of the files an entry came from does not
  // change what it compresses to by more than a few bytes a batch, so the first name stands in.
  const source = files[0] ?? "";
  const report = await analyzeFiles(files, {
    format: "auto",
    onEntry: (entry, record) => {
      sizer.add(entry, record, source);
      tally.add(entry, record.size);
    },
  });
  const compressedBytes = await sizer.bytes();
  const ratio =
    compressedBytes > 0
      ? { ratio: report.bytes / compressedBytes, source: "measured on these logs" }
      : undefined;
  const seconds = report.span.seconds;
  const span = report.span.start === null ? null : seconds;
  return {
    files,
    seconds,
    compressedBytes,
    observed: { ...volume(report.entries, report.bytes, span, options, ratio), byClass: report.byClass },
    configs: tally.results().map((c: ConfigFromLog) => ({
      ...c,
      ...volume(c.entries, c.bytes, span, options, ratio),
    })),
  };
}

const num = (x: number, digits = 0): string =>
  x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const orDash = (x: number | null | undefined, digits: number): string =>
  x === null || x === undefined ? "-" : num(x, digits);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
  return rows
    .map((cells) =>
      cells
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** The text report of estimateFromLogs. */
export function renderFromLogs(r: FromLogs, options: CostOptions): string {
  const o = r.observed;
  const lines: string[] = [
    `Observed in ${r.files.length} log file(s): ${num(o.entries)} entries, ${num(o.bytes)} bytes over ${num(r.seconds, 1)} s of log time, ${num(o.bytesPerEntry)} B/entry; archived as zstd NDJSON: ${num(r.compressedBytes)} bytes (${o.bytes > 0 && r.compressedBytes > 0 ? `${num(o.bytes / r.compressedBytes, 1)}x smaller` : "nothing"})`,
  ];
  if (o.reason !== null) lines.push(`No GB/day or $/month: ${o.reason}.`);
  const head = [
    "configuration",
    "entries",
    "bytes",
    "bytes/entry",
    "GB/day",
    "ingest $/month",
    "archive GB",
    "archive $/month",
  ];
  const row = (name: string, v: ObservedVolume, bound = ""): string[] => [
    name,
    `${bound}${num(v.entries)}`,
    `${bound}${num(v.bytes)}`,
    num(v.bytesPerEntry),
    orDash(v.gbPerDay, 2),
    orDash(v.dollarsPerMonth, 2),
    orDash(v.archive?.storedGb, 1),
    orDash(v.archive?.dollarsPerMonth, 2),
  ];
  const rows = [head, row("observed", o)];
  const notes: string[] = [];
  for (const c of r.configs) {
    if (!c.derivable) rows.push([c.config, "cannot be derived from this log"]);
    else rows.push(row(c.config, c, c.lowerBound ? ">= " : ""));
    for (const reason of c.reasons) notes.push(`${c.config}: ${reason}`);
  }
  lines.push("", table(rows), "");
  if (r.configs.length > 0)
    lines.push(
      "What each configuration would have written: the observed entries of its classes, with the log's other settings (log_relation, log_parameter, ...) unless it names them.",
    );
  lines.push(...notes);
  const archive = o.archive ?? r.configs.find((c) => c.archive)?.archive;
  if (archive) lines.push(costInputsLine(options, archive));
  return `${lines.join("\n")}\n`;
}

function costInputsLine(options: CostOptions, archive: ArchiveCost): string {
  return costInputs(options.pricePerGb ?? DEFAULT_PRICE_PER_GB, archive);
}
