/**
 * The two cost lines: ingestion on raw log bytes, the archive on compressed audit bytes kept for
 * the retention period (steady state = compressed GB/day x retention days).
 */
import {
  costOf,
  DEFAULT_COMPRESSION_RATIO,
  DEFAULT_LOG_CONTEXT,
  DEFAULT_RETENTION_DAYS,
  DEFAULT_STORAGE_PRICE_PER_GB_MONTH,
  estimate,
  type Workload,
} from "@auditpipe/estimate";
import { describe, expect, it } from "vitest";

describe("costOf", () => {
  it("bills ingestion on raw bytes and the archive on compressed bytes accumulated over the retention", () => {
    // 10 GB/day of log, 8 GB/day of it audit entries, 16x compression, kept 365 days.
    const cost = costOf(10e9, 8e9, "csvlog", {
      pricePerGb: 0.5,
      compressionRatio: 16,
      retentionDays: 365,
      storagePricePerGbMonth: 0.023,
    });
    expect(cost.ingestion.gbPerMonth).toBeCloseTo(300);
    expect(cost.ingestion.dollarsPerMonth).toBeCloseTo(150);
    expect(cost.archive.gbPerDay).toBeCloseTo(0.5);
    expect(cost.archive.storedGb).toBeCloseTo(182.5);
    expect(cost.archive.dollarsPerMonth).toBeCloseTo(182.5 * 0.023);
    expect(cost.archive.compressionRatioSource).toBe("given");
  });

  it("defaults to the ratio measured on the fixtures for the log format, 365 days, S3 Standard", () => {
    const cost = costOf(24e9, 24e9, "jsonlog");
    expect(cost.archive.compressionRatio).toBe(DEFAULT_COMPRESSION_RATIO.jsonlog);
    expect(cost.archive.compressionRatioSource).toMatch(/fixtures, jsonlog/);
    expect(cost.archive.retentionDays).toBe(DEFAULT_RETENTION_DAYS);
    expect(cost.archive.pricePerGbMonth).toBe(DEFAULT_STORAGE_PRICE_PER_GB_MONTH);
    expect(cost.archive.storedGb).toBeCloseTo((24 / DEFAULT_COMPRESSION_RATIO.jsonlog) * 365);
  });

  it("a ratio measured on the logs wins over the default, a given one over both", () => {
    const measured = { ratio: 20, source: "measured on these logs" };
    expect(costOf(1e9, 1e9, "csvlog", {}, measured).archive.compressionRatio).toBe(20);
    expect(costOf(1e9, 1e9, "csvlog", { compressionRatio: 5 }, measured).archive.compressionRatio).toBe(5);
  });
});

describe("estimate(): separate cost lines", () => {
  const workload: Workload = {
    transactionsPerSec: 100,
    statements: [
      {
        text: "INSERT INTO public.orders (id) VALUES ($1)",
        callsPerSec: 100,
        kind: "INSERT",
        relations: [{ relation: "public.orders", write: "INSERT" }],
        rowsPerCall: 1,
      },
    ],
    foreignKeys: [],
    log: DEFAULT_LOG_CONTEXT,
    notes: [],
  };

  it("ingests every log line but archives only audit entries, compressed, for the retention period", () => {
    const e = estimate(
      workload,
      { name: "write+log_statement", log: ["write"], pgLogStatement: "all" },
      { retentionDays: 90 },
    );
    expect(e.otherBytesPerSec).toBeGreaterThan(0);
    // Ingestion: everything the log holds; the old single $/month figure.
    expect(e.dollarsPerMonth).toBeCloseTo((((e.bytesPerSec + e.otherBytesPerSec) * 30 * 86_400) / 1e9) * 0.5);
    const ratio = DEFAULT_COMPRESSION_RATIO[DEFAULT_LOG_CONTEXT.destination];
    expect(e.archive.gbPerDay).toBeCloseTo((e.bytesPerSec * 86_400) / ratio / 1e9);
    expect(e.archive.storedGb).toBeCloseTo(e.archive.gbPerDay * 90);
    expect(e.archive.dollarsPerMonth).toBeLessThan(e.dollarsPerMonth);
  });
});
