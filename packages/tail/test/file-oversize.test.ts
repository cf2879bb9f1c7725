import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MAX_RECORD_BYTES } from "@auditpipe/parse";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { logSettled, shippedRecords, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

/**
 * A record larger than the parser's limit is skipped whole: valid data given up, so it is reported
 * where every give-up is (dataLost, with its reason), besides being counted as malformed. Real
 * PostgreSQL: pgAudit logs a statement longer than the limit, and PostgreSQL writes it whole.
 */
describe("FileSource and a record over the size limit", () => {
  it("reports its byte range as given up (record-too-large) and ships the entries around it", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "read" } });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-oversize-"));
    const lost: { from: number; to: number; reason: string }[] = [];
    const malformed: string[] = [];
    const sinkDir = join(work, "sink");
    const source = new FileSource({
      logDir: pg.logDir,
      format: "csvlog",
      stateDir: join(work, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxAgeMs: 50 },
      observer: {
        dataLost: (_file, from, to, reason) => lost.push({ from, to, reason }),
        malformed: (_file, error) => malformed.push(error.code),
      },
    });
    try {
      await source.start();
      await pg.query("SELECT 'before the large statement' AS marker");
      // A statement of more than DEFAULT_MAX_RECORD_BYTES: pgAudit's entry holds its text.
      await pg.query(`SELECT length('${"x".repeat(DEFAULT_MAX_RECORD_BYTES + (1 << 20))}') AS large`);
      await pg.query("SELECT 'after the large statement' AS marker");
      await logSettled(pg.logDir);
      await waitUntil(
        () =>
          lost.length > 0 &&
          shippedRecords<{ statement: string }>(sinkDir).some((r) => r.statement.includes("after the large")),
        120_000,
        () => `lost ${JSON.stringify(lost)}, shipped ${shippedRecords(sinkDir).length}`,
        200,
      );
      await source.stop();
      const text = readFileSync(pg.currentLogfiles().csvlog!, "latin1");
      const start = text.lastIndexOf("\n", text.indexOf("SELECT length('xxx")) + 1;
      const end = text.indexOf("\n", text.indexOf("') AS large")) + 1;
      expect(lost).toEqual([{ from: start, to: lost[0]!.to, reason: "record-too-large" }]);
      expect(lost[0]!.to).toBeGreaterThan(start + DEFAULT_MAX_RECORD_BYTES);
      expect(lost[0]!.to).toBeLessThanOrEqual(end);
      expect(malformed).toContain("AUDITPIPE_ERR_RECORD_TOO_LARGE");
      const statements = shippedRecords<{ statement: string }>(sinkDir).map((r) => r.statement);
      expect(statements.some((s) => s.includes("before the large statement"))).toBe(true);
      expect(statements.some((s) => s.includes("after the large statement"))).toBe(true);
      expect(statements.some((s) => s.includes("AS large"))).toBe(false);
    } finally {
      await source.stop();
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
