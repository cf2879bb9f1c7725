/**
 * What audit logs cost, as two separate lines because they are billed on different bytes:
 * ingestion by a log service is billed per GB of raw log, once; the S3 archive holds the
 * sidecar's NDJSON compressed (zstd by default), billed per GB-month for as long as Object Lock keeps it, so
 * it accumulates until the oldest objects leave the retention period. Pure: no I/O.
 */
import type { LogDestinationName } from "./types.ts";

/** A managed log service's list price for ingesting a GB (e.g. CloudWatch Logs standard, $0.50/GB): an assumption; pass yours. */
export const DEFAULT_PRICE_PER_GB = 0.5;
/** S3 Standard's list price per GB-month (us-east-1, first 50 TB, $0.023): an assumption; pass yours. */
export const DEFAULT_STORAGE_PRICE_PER_GB_MONTH = 0.023;
/** `auditpipe run`'s default Object Lock retention (`--object-lock-days`). */
export const DEFAULT_RETENTION_DAYS = 365;
/**
 * Raw audit-record bytes per archived byte (NDJSON, zstd level 1 as the sidecar lands it by
 * default, in `auditpipe run`'s batches (20,000 entries; each fixture is one); gzip level 6 makes objects ~10 % smaller), measured on every case of the repository's real fixtures (fixtures/cases) per log
 * format: the raw side depends on the format (jsonlog repeats its keys), the archive side does
 * not. syslog is the mean of the three rsyslog formats. `apps/cli/test/estimate-cost.test.ts`
 * measures them again and fails when one drifts by more than 5%.
 */
export const DEFAULT_COMPRESSION_RATIO: Readonly<Record<LogDestinationName, number>> = {
  csvlog: 14.2,
  jsonlog: 21.7,
  stderr: 11.1,
  syslog: 13.8,
};

const DAYS_PER_MONTH = 30;

export interface CostOptions {
  /** $ per GB ingested by a log service (raw log bytes); default DEFAULT_PRICE_PER_GB. */
  pricePerGb?: number;
  /** $ per GB-month stored in the archive; default DEFAULT_STORAGE_PRICE_PER_GB_MONTH. */
  storagePricePerGbMonth?: number;
  /** Raw bytes per archived byte; default DEFAULT_COMPRESSION_RATIO for the log format. */
  compressionRatio?: number;
  /** Days the archive keeps each object (Object Lock retention); default DEFAULT_RETENTION_DAYS. */
  retentionDays?: number;
}

/** Ingestion by a log service: every raw log byte (audit entries and any other lines), once. */
export interface IngestionCost {
  gbPerMonth: number;
  pricePerGb: number;
  dollarsPerMonth: number;
}

/** The S3 archive at steady state: compressed audit entries, kept for the retention period. */
export interface ArchiveCost {
  compressionRatio: number;
  /** Where the ratio came from: `given`, `measured on these logs`, or the default measured on the repository's fixtures. */
  compressionRatioSource: string;
  /** Compressed GB written per day. */
  gbPerDay: number;
  retentionDays: number;
  /** GB held once the oldest objects expire: gbPerDay x retentionDays (reached after retentionDays). */
  storedGb: number;
  pricePerGbMonth: number;
  /** Monthly storage bill at steady state: storedGb x pricePerGbMonth. */
  dollarsPerMonth: number;
}

export interface Cost {
  ingestion: IngestionCost;
  archive: ArchiveCost;
}

/**
 * The two cost lines. `logBytesPerDay` is everything the log holds (what a log service ingests);
 * `auditBytesPerDay` the audit entries alone (what the sidecar archives).
 */
export function costOf(
  logBytesPerDay: number,
  auditBytesPerDay: number,
  destination: LogDestinationName,
  options: CostOptions = {},
  measuredRatio?: { ratio: number; source: string },
): Cost {
  const pricePerGb = options.pricePerGb ?? DEFAULT_PRICE_PER_GB;
  const gbPerMonth = (logBytesPerDay * DAYS_PER_MONTH) / 1e9;
  const ratio = options.compressionRatio ?? measuredRatio?.ratio ?? DEFAULT_COMPRESSION_RATIO[destination];
  const source =
    options.compressionRatio !== undefined
      ? "given"
      : (measuredRatio?.source ?? `measured on the repository's fixtures, ${destination}`);
  const retentionDays = options.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const pricePerGbMonth = options.storagePricePerGbMonth ?? DEFAULT_STORAGE_PRICE_PER_GB_MONTH;
  const gbPerDay = ratio > 0 ? auditBytesPerDay / ratio / 1e9 : 0;
  const storedGb = gbPerDay * retentionDays;
  return {
    ingestion: { gbPerMonth, pricePerGb, dollarsPerMonth: gbPerMonth * pricePerGb },
    archive: {
      compressionRatio: ratio,
      compressionRatioSource: source,
      gbPerDay,
      retentionDays,
      storedGb,
      pricePerGbMonth,
      dollarsPerMonth: storedGb * pricePerGbMonth,
    },
  };
}

/** The inputs of the two cost lines, in one sentence for under a table. */
export function costInputs(pricePerGb: number, a: ArchiveCost): string {
  return (
    `ingest $/month: raw log bytes x $${pricePerGb} per GB ingested by a log service (--price-per-gb), 30 days.\n` +
    `archive: audit entries as zstd NDJSON, ${a.compressionRatio.toFixed(1)}x smaller (${a.compressionRatioSource}; --compression-ratio), ` +
    `kept ${a.retentionDays} days (--retention-days): archive GB = compressed GB/day x ${a.retentionDays} once the oldest objects expire; ` +
    `archive $/month = archive GB x $${a.pricePerGbMonth} per GB-month (--storage-price). Decimal units.`
  );
}
