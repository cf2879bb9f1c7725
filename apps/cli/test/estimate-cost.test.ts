/**
 * The archive's compression ratio measured again on the committed fixtures (real pgaudit logs,
 * encoded and compressed as the sidecar ships them), against the documented defaults; and the
 * two cost lines with their inputs in `estimate`'s table and --json.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_COMPRESSION_RATIO, type LogDestinationName } from "@auditpipe/estimate";
import { LOG_LINE_PREFIX, listCases } from "@auditpipe/fixtures";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { ArchiveSizer } from "../src/analyze/archive-size.ts";
import { analyzeFiles } from "../src/analyze/read-logs.ts";
import { runCli } from "./_cli.ts";

const cases = join(repoRoot(), "fixtures", "cases");
const FILES: Record<LogDestinationName, string[]> = {
  csvlog: ["postgresql.csv.gz"],
  jsonlog: ["postgresql.json.gz"],
  stderr: ["postgresql.log.gz"],
  syslog: ["syslog-rfc3164.log.gz", "syslog-rfc5424.log.gz", "syslog-rsyslog-file.log.gz"],
};

describe("DEFAULT_COMPRESSION_RATIO", () => {
  it("is what the fixtures measure per log format, within 5%", async () => {
    expect(listCases(cases).length).toBeGreaterThanOrEqual(5);
    for (const [format, names] of Object.entries(FILES) as [LogDestinationName, string[]][]) {
      let raw = 0;
      let archived = 0;
      for (const name of names)
        for (const c of listCases(cases)) {
          const file = join(cases, c, name);
          const sizer = new ArchiveSizer();
          const report = await analyzeFiles([file], {
            format: "auto",
            prefix: LOG_LINE_PREFIX,
            onEntry: (entry, record) => sizer.add(entry, record, file),
          });
          raw += report.bytes;
          archived += await sizer.bytes();
        }
      const measured = raw / archived;
      expect(
        Math.abs(DEFAULT_COMPRESSION_RATIO[format] / measured - 1),
        `${format}: measured ${measured}`,
      ).toBeLessThan(0.05);
    }
  });
});

describe("estimate: ingestion and archive storage as separate cost lines", () => {
  const workload = join(tmpdir(), `auditpipe-cost-${process.pid}.json`);
  writeFileSync(
    workload,
    JSON.stringify({
      transactionsPerSec: 100,
      statements: [
        {
          text: "INSERT INTO public.orders (customer_id, item) VALUES ($1, $2)",
          callsPerSec: 100,
          kind: "INSERT",
          relations: [{ relation: "public.orders", write: "INSERT" }],
        },
      ],
      log: { destination: "csvlog" },
    }),
  );

  it("prints both columns and their inputs", async () => {
    const out = await runCli(["estimate", "--workload", workload, "--audit", "write"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/GB\/day\s+ingest \$\/month\s+archive GB\s+archive \$\/month/);
    expect(out.stdout).toMatch(/raw log bytes x \$0\.5 per GB ingested/);
    expect(out.stdout).toContain(
      `${DEFAULT_COMPRESSION_RATIO.csvlog.toFixed(1)}x smaller (measured on the repository's fixtures, csvlog`,
    );
    expect(out.stdout).toMatch(/kept 365 days \(--retention-days\)/);
    expect(out.stdout).toMatch(/x \$0\.023 per GB-month/);
  });

  it("--json carries the archive line; the flags change it", async () => {
    const out = await runCli([
      "estimate",
      "--workload",
      workload,
      "--audit",
      "write",
      "--compression-ratio",
      "10",
      "--retention-days",
      "30",
      "--storage-price",
      "0.01",
      "--json",
    ]);
    expect(out.code, out.stderr).toBe(0);
    const [write] = JSON.parse(out.stdout).estimates;
    const compressedPerDay = (write.bytesPerSec * 86_400) / 10 / 1e9;
    expect(write.archive).toMatchObject({
      compressionRatio: 10,
      compressionRatioSource: "given",
      retentionDays: 30,
    });
    expect(write.archive.storedGb).toBeCloseTo(compressedPerDay * 30);
    expect(write.archive.dollarsPerMonth).toBeCloseTo(compressedPerDay * 30 * 0.01);
    expect(write.dollarsPerMonth).toBeCloseTo(((write.bytesPerSec * 30 * 86_400) / 1e9) * 0.5);
  });

  it("rejects a bad value naming the flag", async () => {
    for (const [flag, value] of [
      ["--compression-ratio", "0.5"],
      ["--retention-days", "1.5"],
      ["--storage-price", "free"],
    ] as const) {
      const out = await runCli(["estimate", "--workload", workload, flag, value]);
      expect(out.code).toBe(2);
      expect(out.stderr).toContain(`estimate: ${flag} ${JSON.stringify(value)}: expected `);
    }
  });
});
